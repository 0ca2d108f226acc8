"""The shared tokenizer (chainkit._search.terms) and the BM25 index (chainkit._search.bm25)."""

import copy
import math
import pickle
import random
import threading

import pytest

from chainkit._search.bm25 import LexicalIndex
from chainkit._search.names import NameWords
from chainkit._search.requests import requests, without_phrasing
from chainkit._search.terms import stem, terms, tokens


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("get_stock_price", ["stock", "pric"]),
        ("getStockPrice", ["stock", "pric"]),
        ("HTTPServerStatus", ["http", "server", "status"]),
        ("base64Encode", ["base64", "encod"]),
        ("convert-currency", ["convert", "currency"]),
        ("ＦｕｌｌＷｉｄｔｈ", ["full", "width"]),  # NFKC first
    ],
)
def test_names_split_into_their_words(name, words):
    assert list(terms(name)) == words


@pytest.mark.parametrize(
    ("words", "stemmed"),
    [
        (("forecast", "forecasts", "forecasting", "forecasted"), "forecast"),
        (("city", "cities"), "city"),
        (("compute", "computing", "computed", "computes"), "comput"),
        (("ship", "shipping", "shipped"), "ship"),
        (("book", "bookings", "booked"), "book"),
        (("class", "classes"), "class"),
        (("fill", "filling"), "fill"),
    ],
)
def test_inflections_share_a_stem(words, stemmed):
    assert {stem(word) for word in words} == {stemmed}


@pytest.mark.parametrize("word", ["status", "analysis", "string", "bus", "thing"])
def test_stemming_leaves_short_and_latin_endings_alone(word):
    assert stem(word) == word


def test_cjk_kana_and_hangul_become_bigrams_and_light_characters():
    assert tokens("天气预报") == {
        **{"天": 0.25, "气": 0.25, "预": 0.25, "报": 0.25},
        **{"天气": 1.0, "气预": 1.0, "预报": 1.0},
    }
    assert "てん" in tokens("てんき") and "날씨" in tokens("날씨")
    assert "𠀀𠀁" in tokens("𠀀𠀁")  # extension B is CJK too


def test_mixed_text_keeps_words_and_drops_numbers_and_stop_words():
    assert list(terms("查询2025年AAPL的stock prices")) == [
        *("查", "查询", "询", "年"),
        *("aapl", "stock", "pric"),
    ]


def index_of(documents):
    index: LexicalIndex[str] = LexicalIndex()
    for key, text in documents.items():
        index.add(key, terms(text))
    return index


def test_bm25_scores_match_the_formula():
    index = index_of({"a": "weather forecast weather", "b": "stock price", "c": "weather"})
    [(key, score), (other, other_score)] = index.search({"weather": 1.0}, 5)
    average = 6 / 3
    idf = math.log1p((3 - 2 + 0.5) / (2 + 0.5))

    def share(tf, length):
        return tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))

    # The short document wins: length normalization outweighs the second "weather" of "a".
    assert (key, other) == ("c", "a")
    assert score == pytest.approx(idf * share(1, 1))
    assert other_score == pytest.approx(idf * share(2, 3))


def test_rare_terms_outweigh_common_ones_and_weights_scale():
    index = index_of({"a": "price report", "b": "price chart", "c": "price history dividend"})
    assert index.search({"price": 1.0, "dividend": 1.0}, 1)[0][0] == "c"
    assert index.search({"report": 0.0}, 5) == []  # a weight of nothing finds nothing
    [(_, once)] = index.search({"report": 1.0}, 1)
    [(_, twice)] = index.search({"report": 2.0}, 1)
    assert twice == pytest.approx(2 * once)


def test_a_search_ranks_as_if_it_read_every_posting():
    # Common terms are read only for the documents rarer ones found, once those are sure to
    # rank first; the ranking is the formula's over every document all the same.
    generator = random.Random(7)
    vocabulary = [f"w{n}" for n in range(60)]
    frequency = [1 / (n + 1) for n in range(60)]  # a few words in most documents
    documents = {
        f"d{n}": generator.choices(vocabulary, frequency, k=generator.randint(3, 30))
        for n in range(400)
    }
    index: LexicalIndex[str] = LexicalIndex()
    for key, words in documents.items():
        index.add(key, words)
    average = sum(map(len, documents.values())) / len(documents)
    holding = {term: sum(term in words for words in documents.values()) for term in vocabulary}

    def score(words, query):
        total = 0.0
        for term in query:
            found = holding[term]
            tf = words.count(term)
            idf = math.log1p((len(documents) - found + 0.5) / (found + 0.5))
            total += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(words) / average))
        return total

    for _ in range(150):
        query = set(generator.choices(vocabulary, frequency, k=generator.randint(1, 8)))
        limit = generator.choice((1, 5, 20))
        everything = sorted(
            ((score(words, query), key) for key, words in documents.items() if query & {*words}),
            key=lambda item: (-item[0], int(item[1][1:])),
        )
        found = index.search(dict.fromkeys(query, 1.0), limit)
        assert [key for key, _ in found] == [key for _, key in everything[:limit]]
        assert [s for _, s in found] == pytest.approx([s for s, _ in everything[:limit]])


def test_a_search_for_each_query_among_a_few_keys_scores_those_alone():
    index = index_of({"a": "weather report", "b": "weather", "c": "stock report", "d": "x"})
    queries = [{"report": 1.0}, {"weather": 1.0}, {"weather": 1.0, "report": 2.0}]
    report, weather, both = index.search_each(queries, 5, ["c", "gone", "b", "a"])
    assert [key for key, _ in report] == ["a", "c"]  # "gone" is skipped, "d" never scored
    assert [key for key, _ in weather] == ["b", "a"]
    full = dict(index.search({"weather": 1.0, "report": 2.0}, 5))
    assert dict(both) == {key: pytest.approx(score) for key, score in full.items()}
    assert index.search_each(queries, 1, ["d"]) == [[], [], []]


def test_unspaced_alphabets_become_letter_trigrams():
    # Thai vowel signs and tone marks are no letters to str.isalnum: they cut no word.
    assert list(terms("ราคาหุ้น")) == ["ราค", "าคา", "คาห", "าหุ", "หุ้", "ุ้น"]
    assert list(terms("ไป")) == ["ไป"]  # a shorter run is a term whole
    assert list(terms("ราคา stock")) == ["ราค", "าคา", "stock"]


def test_ties_keep_insertion_order_and_limit_cuts():
    index = index_of({f"tool{i}": "same words" for i in range(10)})
    assert [key for key, _ in index.search({"word": 1.0}, 3)] == ["tool0", "tool1", "tool2"]
    assert index.search({"word": 1.0}, 0) == []
    assert index.search({"absent": 1.0}, 3) == []


def test_add_replaces_and_remove_drops_incrementally():
    index = index_of({"a": "weather", "b": "stock"})
    index.add("a", terms("flight booking"))  # replaced: no longer about weather
    assert index.search({"weather": 1.0}, 5) == []
    assert [key for key, _ in index.search({"flight": 1.0}, 5)] == ["a"]
    assert index.remove("b") and not index.remove("b") and "b" not in index
    assert len(index) == 1 and index.search({"stock": 1.0}, 5) == []
    index.add("c", terms("stock"))
    # The same scores as an index built in one go: avgdl and idf follow the updates.
    fresh = index_of({"a": "flight booking", "c": "stock"})
    assert index.search({"stock": 1.0, "flight": 1.0}, 5) == fresh.search(
        {"stock": 1.0, "flight": 1.0}, 5
    )


def test_empty_index_and_empty_documents():
    index: LexicalIndex[str] = LexicalIndex()
    assert index.search({"x": 1.0}, 5) == []
    index.add("empty", [])
    assert index.search({"x": 1.0}, 5) == []


def test_index_copies_and_pickles():
    index = index_of({"a": "weather", "b": "stock"})
    for clone in (copy.deepcopy(index), pickle.loads(pickle.dumps(index))):
        assert clone.search({"stock": 1.0}, 1)[0][0] == "b"
        clone.add("c", ["stock"])  # its own lock and state
    assert "c" not in index


@pytest.mark.timeout(60, method="thread")
def test_updates_while_searching_from_other_threads():
    index = index_of({f"t{i}": f"word{i} common" for i in range(200)})
    errors = []

    def search():
        try:
            for _ in range(300):
                index.search({"common": 1.0, "word7": 1.0}, 5)
        except Exception as error:  # pragma: no cover - what the test looks for
            errors.append(error)

    threads = [threading.Thread(target=search) for _ in range(3)]
    for thread in threads:
        thread.start()
    for i in range(200, 500):
        index.add(f"t{i}", terms(f"word{i} common"))
        index.remove(f"t{i - 200}")
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(index) == 200


def test_tokens_stem_plural_s_but_not_double_s():
    assert tokens("class") == {"class": 1.0}
    assert tokens("glass") == {"glass": 1.0}
    assert tokens("numbers") == {"number": 1.0}


def test_tokens_drop_stop_words():
    assert tokens("what the weather") == {"weather": 1.0}


def test_tokens_cjk_stop_chars_are_not_single_tokens_but_bigrams_stay():
    assert tokens("我的猫") == {"我的": 1.0, "的猫": 1.0, "猫": 0.25}


def test_tokens_cjk_extension_a_is_cjk():
    # As CJK it forms a bigram with its neighbour; as a non-CJK char it would be dropped.
    assert tokens("㐀猫") == {"㐀": 0.25, "猫": 0.25, "㐀猫": 1.0}


def test_plurals_in_ss_stem_to_their_singular() -> None:
    from chainkit._search.terms import tokens as words

    assert "class" in words("classes") and "class" in words("class")


def test_the_names_holding_the_most_words_of_a_request():
    names = NameWords[str]()
    names.add({name: terms(name) for name in ("car_rental_pricing", "car_rental", "car_wash")})
    names.add({"hotel_room_pricing": terms("hotel_room_pricing")})
    assert names.naming_most(tokens("the car rental pricing")) == {"car_rental_pricing"}
    assert names.naming_most(tokens("rent a car")) == set()  # one word names no operation
    names.remove(["car_rental_pricing", "absent"])
    assert names.naming_most(tokens("the car rental pricing")) == {"car_rental"}
    assert names.naming_most(tokens("room pricing")) == {"hotel_room_pricing"}


def test_a_question_splits_into_its_requests_not_its_list_items():
    assert requests("Find a pasta recipe, and then convert 2 cups to ml. Also book a table") == [
        "Find a pasta recipe",
        "convert 2 cups to ml",
        "book a table",
    ]
    assert requests("weather in Paris and Rome") == ["weather in Paris and Rome"]  # "Rome"
    assert requests("查一下北京的天气，然后订一张去上海的机票") == [
        "查一下北京的天气，",
        "订一张去上海的机票",
    ]


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        (  # a question word after a comma starts a request
            "What is the capital of Australia, what is the population of Canada, and how "
            "large is Brazil?",
            [
                "What is the capital of Australia",
                "what is the population of Canada",
                "how large is Brazil",
            ],
        ),
        (  # a point in a number, an address or a file name ends no sentence
            "The bond pays 3.5% a year, mail john.doe@example.com the data.csv file. How "
            "much is it worth?",
            [
                "The bond pays 3.5% a year, mail john.doe@example.com the data.csv file",
                "How much is it worth",
            ],
        ),
        (  # "also" within a sentence starts no request
            "Find a hotel in Rome. I would also like to book a table for two",
            ["Find a hotel in Rome", "I would also like to book a table for two"],
        ),
        (  # the items of a numbered list
            "Please: 1) find a hotel in Rome 2) book a flight to Rome (3) rent a car there",
            ["find a hotel in Rome", "book a flight to Rome", "rent a car there"],
        ),
        (
            "Two things. 1. Find a hotel in Rome 2. Book a flight to Rome",
            ["Two things", "Find a hotel in Rome", "Book a flight to Rome"],
        ),
    ],
)
def test_requests_start_at_questions_and_list_items_not_at_points(question, asked):
    assert requests(question) == asked


def test_request_phrasing_is_taken_out():
    assert without_phrasing("Can you please help me find a hotel?").split() == [
        "find",
        "a",
        "hotel?",
    ]
    assert without_phrasing("请帮我查天气").strip() == "查天气"
