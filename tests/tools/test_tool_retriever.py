"""tools.ToolRetriever: lexical by default, fused with embeddings when given an embedder."""

from __future__ import annotations

import asyncio
import copy
import os
import pickle
import subprocess
import sys
import threading
import time

import pytest

from chainkit import tools
from chainkit.llms import OpenAIEmbeddings
from tests.support.openai_server import TEST_API_KEY, OpenAIServer
from tests.support.tool_catalog import TEST_SEED, TEST_WORDING, build


@pytest.fixture(scope="module")
def catalog():
    return build(TEST_WORDING, seed=TEST_SEED)


def test_recall_at_5_on_a_generated_catalog_of_1000_tools(catalog):
    assert len(catalog.tools) >= 1000
    retriever = tools.ToolRetriever(catalog.tools, top_k=5)
    questions = catalog.questions(300, "described", seed=TEST_SEED + 1)
    assert {q.language for q in questions} == {"en", "zh"}
    found = sum(q.tool in [t.name for t in retriever.select(q.text)] for q in questions)
    assert found / len(questions) >= 0.95


class _Schema(tools.Tool):
    def __init__(self, name, description, parameters):
        self.name, self.description, self._parameters = name, description, parameters

    @property
    def parameters(self):
        return self._parameters

    def call(self, input: str) -> str:
        return self.name


def names(selected):
    return [tool.name for tool in selected]


WEATHER = _Schema("get_weather", "Current weather for a city.", {"properties": {"city": {}}})
STOCK = _Schema("getStockQuote", "Latest share price.", {"properties": {"ticker": {}}})
FLIGHT = _Schema("book_flight", "预订机票，返回确认号。", {"properties": {"destination": {}}})
TRANSLATE = _Schema("translate", "Translates text.", {"properties": {"target_language": {}}})
SEARCH = _Schema("web_search", "Searches the web.", {"properties": {"query": {}}})


def small_retriever(**options):
    return tools.ToolRetriever([WEATHER, STOCK, FLIGHT, TRANSLATE, SEARCH], **options)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("weather in Paris", "get_weather"),  # description and name
        ("stock quote for AAPL", "getStockQuote"),  # a camelCase name
        ("what is the ticker's value", "getStockQuote"),  # an argument name only
        ("帮我订一张去三亚的机票", "book_flight"),  # Chinese bigrams
        ("which target language", "translate"),  # a snake_case argument name
    ],
)
def test_name_description_and_arguments_find_a_tool(query, expected):
    assert names(small_retriever().select(query))[0] == expected


def test_top_k_and_always_include():
    retriever = small_retriever(top_k=1, always_include=["web_search", TRANSLATE])
    # The always-included come first, in the order given, and do not count against top_k.
    assert names(retriever.select("weather today")) == [
        "web_search",
        "translate",
        "get_weather",
    ]
    # Matching the query does not select an always-included tool twice.
    assert names(retriever.select("search the web")) == ["web_search", "translate"]
    assert names(retriever.select("")) == ["web_search", "translate"]
    assert names(retriever.always_include) == ["web_search", "translate"]


def test_nothing_matching_selects_nothing_lexically():
    retriever = small_retriever()
    assert retriever.select("") == [] and retriever.select("   ") == []
    assert retriever.select("xyzzy plugh") == []
    assert retriever.select("🙂🙃 …") == []


@pytest.mark.parametrize("top_k", [0, -1, True, 2.5, "5", None])
def test_top_k_must_be_a_positive_whole_number(top_k):
    with pytest.raises(ValueError, match="top_k"):
        small_retriever(top_k=top_k)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="list of Tool"):
        tools.ToolRetriever(WEATHER)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"@tools\.tool"):
        tools.ToolRetriever([WEATHER, len])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="no tool named 'nope'"):
        small_retriever(always_include=["nope"])
    with pytest.raises(TypeError, match="embed_documents"):
        small_retriever(embedder=object())
    with pytest.raises(TypeError, match="must be a str"):
        small_retriever().select(b"weather")
    with pytest.raises(ValueError, match="differ only in case, 'get_weather' and 'GET_WEATHER'"):
        tools.ToolRetriever([WEATHER, _Schema("GET_WEATHER", "x", {})])


def test_tools_are_added_and_removed_incrementally():
    retriever = small_retriever(always_include=["web_search"])
    news = _Schema("get_news", "Latest news headlines.", {"properties": {"topic": {}}})
    assert names(retriever.select("news headlines")) == ["web_search"]
    retriever.add(news)
    assert names(retriever.select("news headlines")) == ["web_search", "get_news"]
    assert "get_news" in retriever and len(retriever) == 6
    retriever.remove("get_news", SEARCH)
    assert retriever.select("news headlines") == [] and len(retriever) == 4
    assert retriever.always_include == []  # a removed tool is no longer always included
    assert names(retriever.tools) == ["get_weather", "getStockQuote", "book_flight", "translate"]


def test_failed_updates_change_nothing():
    retriever = small_retriever()
    with pytest.raises(ValueError, match="differ only in case, 'translate' and 'Translate'"):
        retriever.add(_Schema("fresh", "fresh tool", {}), _Schema("Translate", "x", {}))
    assert "fresh" not in retriever and retriever.select("fresh tool") == []
    with pytest.raises(ValueError, match="two tools are named 'twin'"):
        retriever.add(_Schema("twin", "a", {}), _Schema("twin", "b", {}))
    with pytest.raises(ValueError, match="no tool named 'absent'"):
        retriever.remove("get_weather", "absent")
    assert "get_weather" in retriever
    with pytest.raises(TypeError, match="tool names or tools"):
        retriever.remove(3)


def test_a_tool_with_an_odd_schema_is_found_by_its_name_and_description():
    odd = _Schema("odd_tool", "Does odd things.", {"properties": ["not", "a", "dict"]})
    none = _Schema("no_schema", "Nothing to see.", None)
    retriever = tools.ToolRetriever([odd, none])
    assert names(retriever.select("odd things")) == ["odd_tool"]
    assert names(retriever.select("no schema")) == ["no_schema"]


@pytest.mark.timeout(60)
def test_a_huge_query_is_answered():
    retriever = small_retriever()
    huge = "weather " + "lorem ipsum dolor sit amet " * 40_000 + "天气" * 10_000
    assert names(retriever.select(huge))[0] == "get_weather"


@pytest.mark.timeout(60, method="thread")
def test_selecting_while_tools_are_added_and_removed(catalog):
    retriever = tools.ToolRetriever(catalog.tools[:500])
    questions = [q.text for q in catalog.questions(50, "described", seed=1)]
    errors = []
    done = threading.Event()

    def select():
        try:
            while not done.is_set():
                for question in questions:
                    retriever.select(question)
        except Exception as error:  # pragma: no cover - what the test looks for
            errors.append(error)

    threads = [threading.Thread(target=select) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        for tool in catalog.tools[500:700]:
            retriever.add(tool)
        retriever.remove(*catalog.tools[500:700])
    finally:
        done.set()
        for thread in threads:
            thread.join()
    assert errors == [] and len(retriever) == 500


def test_copies_and_pickles_select_alike():
    retriever = small_retriever(top_k=2, always_include=["translate"])
    for clone in (copy.deepcopy(retriever), pickle.loads(pickle.dumps(retriever))):
        assert names(clone.select("weather")) == ["translate", "get_weather"]
        clone.add(_Schema("extra", "extra", {}))
    assert "extra" not in retriever
    assert repr(retriever) == "ToolRetriever(5 tools, top_k=2)"


# With an embedder: the loopback server embeds texts as hashed character trigrams, so texts
# sharing parts of words are near; typos are what BM25 alone cannot match.


@pytest.fixture
def embeddings(openai_server: OpenAIServer):
    with OpenAIEmbeddings(
        "embed-test", base_url=openai_server.base_url, api_key=TEST_API_KEY
    ) as embedder:
        yield embedder


def test_embeddings_find_what_words_do_not(embeddings, openai_server):
    typo = "wether forcast"
    assert small_retriever().select(typo) == []
    retriever = small_retriever(top_k=2, embedder=embeddings)
    # The tools are embedded once, in one request, when the retriever is built.
    [documents] = openai_server.requests
    assert (
        documents.body["input"][0] == "get_weather: Current weather for a city. (arguments: city)"
    )
    assert names(retriever.select(typo))[0] == "get_weather"
    # An exact word still ranks its tool first, fused with the dense ranking.
    assert names(retriever.select("ticker"))[0] == "getStockQuote"
    assert [r.body["input"] for r in openai_server.requests[1:]] == [[typo], ["ticker"]]
    # With an embedder every tool has a rank: top_k are always selected.
    assert len(retriever.select("xyzzy")) == 2
    assert retriever.select("") == []  # but an empty query is not sent


def test_embeddings_of_added_tools_and_async_selection(embeddings, openai_server, arun):
    retriever = small_retriever(top_k=1, embedder=embeddings)
    retriever.add(_Schema("get_horoscope", "Daily horoscope for a zodiac sign.", {}))
    assert openai_server.requests[-1].body["input"] == [
        "get_horoscope: Daily horoscope for a zodiac sign."
    ]
    selected = arun(embeddings, retriever.aselect("horoscop for leo"))
    assert names(selected) == ["get_horoscope"]
    assert openai_server.requests[-1].body["input"] == ["horoscop for leo"]


class ScriptedEmbedder:
    def __init__(self, documents=None, query=None):
        self.documents = documents
        self.query = query

    def embed_documents(self, texts):
        if self.documents is not None:
            return self.documents
        return [[1.0, float(i)] for i, _ in enumerate(texts)]

    def embed_query(self, text):
        return [1.0, 0.0] if self.query is None else self.query


@pytest.mark.parametrize(
    ("embedder", "message"),
    [
        (ScriptedEmbedder(documents=[[1.0]]), "returned 1 vector for 5 texts"),
        (ScriptedEmbedder(documents=[[1.0, 2.0]] * 4 + [[1.0]]), "1 number where the others"),
        (ScriptedEmbedder(documents=[[1.0, float("nan")]] * 5), "not finite"),
        (ScriptedEmbedder(documents=[["a", "b"]] * 5), "vectors of numbers"),
        (ScriptedEmbedder(documents=[[10**400, 1]] * 5), "too large"),
        (ScriptedEmbedder(documents=None, query=[1.0, 2.0, 3.0]), "3 numbers where the others"),
        (ScriptedEmbedder(documents=None, query="oops"), "vectors of numbers"),
    ],
)
def test_bad_embeddings_are_named(embedder, message):
    with pytest.raises(ValueError, match=message):
        small_retriever(embedder=embedder).select("weather")


def test_an_embedder_without_async_runs_in_a_thread():
    class Slow(ScriptedEmbedder):
        def embed_query(self, text):
            self.thread = threading.current_thread()
            time.sleep(0.05)
            return [1.0, 0.0]

    embedder = Slow()
    retriever = small_retriever(top_k=1, embedder=embedder)
    assert len(asyncio.run(retriever.aselect("weather"))) == 1
    assert embedder.thread is not threading.main_thread()


# The classes of misses on real catalogs (bench/tool_retrieval_bfcl.py measures them).


def _tool(name, description, **arguments):
    return _Schema(name, description, _string_arguments(arguments))


def _string_arguments(arguments):
    """The JSON schema of string arguments, each with its description."""
    properties = {
        argument: {"type": "string", "description": about} for argument, about in arguments.items()
    }
    return {"type": "object", "properties": properties}


RECIPES = [
    _tool("recipe_search", "Searches recipes by ingredients.", ingredients="Ingredients to use."),
    _tool("recipe_nutrition", "Nutrition facts of a recipe.", recipe="The recipe's name."),
    _tool("recipe_prep_time", "Preparation time of a recipe.", recipe="The recipe's name."),
    _tool("convert_units", "Converts a quantity between units.", quantity="The quantity."),
]


def test_each_request_of_a_question_gets_a_tool():
    retriever = tools.ToolRetriever(RECIPES, top_k=3)
    recipe = "Search recipes by ingredients for a pasta, with its nutrition facts and prep time"
    assert "convert_units" not in names(retriever.select(recipe))
    # The short request after "and" is not crowded out by the long one.
    selected = names(retriever.select(f"{recipe}, and convert 2 cups to ml"))
    assert "convert_units" in selected and "recipe_search" in selected


def test_each_request_gets_a_tool_with_embeddings_fused_too(embeddings):
    retriever = tools.ToolRetriever(RECIPES, top_k=3, embedder=embeddings)
    recipe = "Search recipes by ingredients for a pasta, with its nutrition facts and prep time"
    assert "convert_units" not in names(retriever.select(recipe))
    selected = names(retriever.select(f"{recipe}, and convert 2 cups to ml"))
    assert "convert_units" in selected and "recipe_search" in selected


def test_a_short_request_is_offered_the_tool_its_name_says():
    # Twelve hotels answer the long request, and outrank the car rental tool for the whole
    # question; its name holds the short request's words.
    hotels = [
        _tool(
            f"{city}_hotels",
            f"Books a deluxe hotel room in {city} with a gym and breakfast; "
            "the price includes car rental.",
        )
        for city in (
            "paris",
            "rome",
            "lisbon",
            "oslo",
            "vienna",
            "prague",
            "madrid",
            "dublin",
            "berlin",
            "athens",
            "warsaw",
            "zurich",
        )
    ]
    cars = _tool("car_rental_pricing", "Daily rate of renting a vehicle.", vehicle="Its class.")
    retriever = tools.ToolRetriever([*hotels, cars], top_k=3)
    selected = names(
        retriever.select(
            "Book a deluxe hotel room in Paris with a gym and breakfast, and tell me the car "
            "rental pricing"
        )
    )
    assert selected[0] == "paris_hotels" and "car_rental_pricing" in selected


def test_requests_naming_an_operation_take_their_turn_first():
    retriever = tools.ToolRetriever(
        [
            _tool("book_hotel", "Books a hotel room for some nights.", nights="Nights."),
            _tool("search_flights", "Searches flights to a city.", city="City."),
            _tool("faq", "Answers a question about our service."),
        ],
        top_k=2,
    )
    question = (
        "I have one more question. Book a hotel room in Paris for two nights, then search "
        "flights to Paris"
    )
    assert names(retriever.select(question)) == ["book_hotel", "search_flights"]


def test_the_words_of_a_name_weigh_as_the_operation():
    movies = [
        _tool("FindMovies", "Find movies to buy tickets for, showing in a city.", city="City."),
        _tool("GetTimesForMovie", "Show times of a movie, to buy tickets.", movie="Movie."),
        _tool("BuyMovieTickets", "Purchase seats for a showing.", movie="Movie title."),
    ]
    retriever = tools.ToolRetriever(movies, top_k=3)
    assert names(retriever.select("buy 2 movie tickets for Dune in Berlin"))[0] == "BuyMovieTickets"


def test_parameter_descriptions_are_evidence():
    conditions = _tool(
        "get_conditions", "Current weather for a city.", city="City.", unit="celsius or fahrenheit"
    )
    alerts = _tool("get_alerts", "Weather alerts for a city.", city="City name.")
    retriever = tools.ToolRetriever([alerts, conditions], top_k=1)
    assert names(retriever.select("weather in Paris in fahrenheit")) == ["get_conditions"]


@pytest.mark.parametrize(
    "question",
    [
        "Can you help me with the weather in Paris?",
        "Please help me, what's the weather in Paris",
        "帮我查一下天气",
        "请帮我查天气",
    ],
)
def test_words_of_request_phrasing_select_nothing(question):
    helper = _tool("get_help", "Get help: shows the help of a command.", command="A command.")
    writer = _tool("writing_assistant", "帮我写、帮我改、帮我润色：一下就好。")
    weather = _tool("get_weather", "Current weather (天气预报) for a city.", city="City.")
    retriever = tools.ToolRetriever([helper, writer, weather], top_k=1)
    assert names(retriever.select(question)) == ["get_weather"]


def test_unspaced_alphabets_are_read_as_letter_groups():
    quote = _tool("stock_quote", "ราคาหุ้นล่าสุด")  # the latest share price
    weather = _tool("weather", "อยากรู้สภาพอากาศ")  # I want to know the weather
    retriever = tools.ToolRetriever([weather, quote], top_k=1)
    # "I want to know today's share price", with no space between its words
    assert names(retriever.select("อยากรู้ราคาหุ้นวันนี้")) == ["stock_quote"]


def test_namespaced_twins_rank_by_their_own_text():
    by_city = _tool("owm_get_current_weather", "Current weather for a city name.", city="City.")
    by_point = _tool(
        "meteo_get_current_weather",
        "Current weather at a point.",
        latitude="Latitude in degrees.",
        longitude="Longitude in degrees.",
    )
    retriever = tools.ToolRetriever([by_city, by_point], top_k=1)
    assert names(retriever.select("current weather at latitude 48.8, longitude 2.3")) == [
        "meteo_get_current_weather"
    ]
    assert names(retriever.select("What's the current weather in the city of Lyon?")) == [
        "owm_get_current_weather"
    ]


def _weather(name, description):
    return _tool(name, description, city="The city, such as Paris.", unit="celsius or fahrenheit")


WEATHER_COPIES = [
    _weather("owm_get_current_weather", "Get the current weather in a city."),
    _weather("meteo_get_current_weather", "Get the current weather for a city."),
    _weather("wttr_get_current_weather", "Gets the current weather of a city."),
]
FORECAST = _tool("get_forecast", "Weather forecast for the next days.", city="The city.")
CONVERTER = _tool(
    "convert_units",
    "Converts a quantity from one unit to another: km to miles, kg to pounds.",
    quantity="The number to convert.",
    to_unit="The unit to convert to.",
)


def test_near_copies_do_not_crowd_out_the_rest_of_a_question():
    catalog = [*WEATHER_COPIES, CONVERTER, STOCK, FLIGHT, TRANSLATE, SEARCH]
    retriever = tools.ToolRetriever(catalog, top_k=2)
    question = "Current weather in Paris in celsius for a walk of 30 km to Versailles, in miles"
    # One copy of the weather operation, then the converter for the rest of the question.
    assert names(retriever.select(question)) == ["owm_get_current_weather", "convert_units"]


def test_a_near_copy_comes_after_the_distinct_tools_and_is_never_dropped():
    retriever = tools.ToolRetriever([*WEATHER_COPIES[:2], FORECAST], top_k=5)
    # Two servers offering the same operation: the first copy, the other tool, the second copy.
    assert names(retriever.select("current weather in Paris")) == [
        "owm_get_current_weather",
        "get_forecast",
        "meteo_get_current_weather",
    ]
    # A copy of an always-included tool is moved back as well.
    always = tools.ToolRetriever(
        [*WEATHER_COPIES[:2], FORECAST], top_k=2, always_include=["owm_get_current_weather"]
    )
    assert names(always.select("current weather in Paris")) == [
        "owm_get_current_weather",
        "get_forecast",
        "meteo_get_current_weather",
    ]


_SELECT_AFTER_ADDING_A_COPY = """
import pickle, sys
from tests.tools.test_tool_retriever import WEATHER_COPIES
retriever = pickle.loads(sys.stdin.buffer.read())
retriever.add(WEATHER_COPIES[1])
print(" ".join(tool.name for tool in retriever.select("current weather in Paris")))
"""


@pytest.mark.timeout(60)
def test_a_retriever_unpickled_in_another_process_still_finds_near_copies():
    retriever = tools.ToolRetriever([WEATHER_COPIES[0], FORECAST], top_k=5)
    # Strings hash differently there: what the retriever keeps of its tools must not depend
    # on this process's hashes.
    selected = subprocess.run(
        [sys.executable, "-c", _SELECT_AFTER_ADDING_A_COPY],
        input=pickle.dumps(retriever),
        capture_output=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "1", "PYTHONPATH": os.getcwd()},
    )
    assert selected.stdout.decode().split() == [
        "owm_get_current_weather",
        "get_forecast",
        "meteo_get_current_weather",
    ]


def test_look_alike_operations_that_a_question_asks_for_are_all_offered():
    def scores(sport):
        return _tool(
            f"{sport}_scores.get_scores",
            f"Get the scores of a {sport} team for its last rounds in a league.",
            team=f"The name of the {sport} team.",
            league="The league the team plays in.",
            rounds="How many of the last rounds.",
        )

    question = (
        "Scores of the soccer team Arsenal for its last 5 rounds in the Premier League, "
        "and the scores of the basketball team Lakers for its last 3 rounds in the NBA"
    )
    standings = _tool("league_standings", "The standings of a league.", league="The league.")
    retriever = tools.ToolRetriever([scores("soccer"), scores("basketball"), standings], top_k=2)
    # Each request's own best tool is offered, near copies of each other as they are.
    assert set(names(retriever.select(question))) == {
        "soccer_scores.get_scores",
        "basketball_scores.get_scores",
    }


def _served(server, operation, description, **arguments):
    """An MCP tool as MCPTools(prefix=f"{server}_") lists it; never called, so its caller is
    none."""
    return tools.MCPTool(
        None,  # type: ignore[arg-type]
        server=server,
        remote_name=operation,
        name=f"{server}_{operation}",
        description=description,
        parameters=_string_arguments(arguments),
    )


FIND_RESTAURANTS = [
    ("yelp", "Find restaurants in a city by the food they serve.", "city", "cuisine"),
    ("maps", "Search places to eat near a location, by price and food.", "location", "cuisine"),
]
MENU = _tool("translate_menu", "Translate a restaurant menu into English.", menu="The menu.")


def test_one_operation_from_two_servers_described_differently_is_offered_once_first():
    served = [
        _served(server, "find_restaurants", about, **{place: "Where.", food: "The food."})
        for server, about, place, food in FIND_RESTAURANTS
    ]
    question = "Find restaurants serving Italian food in Rome"
    retriever = tools.ToolRetriever([*served, MENU], top_k=2)
    assert names(retriever.select(question)) == ["yelp_find_restaurants", "translate_menu"]
    # The other server's copy is moved back, not dropped.
    assert names(tools.ToolRetriever([*served, MENU], top_k=3).select(question)) == [
        "yelp_find_restaurants",
        "translate_menu",
        "maps_find_restaurants",
    ]
    # The same texts under names that no source gave alike are too far apart to be copies.
    plain = [
        _tool(f"{server}_find_restaurants", about, **{place: "Where.", food: "The food."})
        for server, about, place, food in FIND_RESTAURANTS
    ]
    assert names(tools.ToolRetriever([*plain, MENU], top_k=2).select(question)) == [
        "yelp_find_restaurants",
        "maps_find_restaurants",
    ]


def test_operations_of_one_name_that_do_different_things_are_no_copies():
    web = _served("web", "search", "Search the web for pages on a topic.", query="Words.")
    wiki = _served("wiki", "search", "Look up an encyclopedia article.", title="The title.")
    news = _tool("latest_news", "The latest news headlines on a topic.", topic="The topic.")
    retriever = tools.ToolRetriever([web, wiki, news], top_k=2)
    # The two searches share a name but little else: both are offered before the news.
    question = "search the web or an encyclopedia on the topic of the moon landing"
    assert names(retriever.select(question)) == ["web_search", "wiki_search"]
