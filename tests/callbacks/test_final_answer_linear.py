"""FinalAnswerStream reads a streamed reply as it comes: the work per token is bounded (counted
in characters the MRKL grammar reads, never timed), and what it yields is exactly what reading
the whole reply so far at every token yields, however the reply is cut into tokens: inside the
`Final Answer:` keyword, inside a multi-byte character's bytes, between the halves of a
surrogate pair, across retries that write the reply again."""

from __future__ import annotations

import codecs
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit import _mrkl
from chainkit._mrkl import settled_answer
from chainkit.callbacks import AnswerRestart, Event, FinalAnswerStream
from chainkit.callbacks.final_answer import Piece
from tests.support.counting import characters_handed
from tests.test_mrkl import _PIECES

LINE = "The figures agree with the source: each was checked twice, by hand.\n"


def token_events(tokens: list[str], run_id: str = "llm") -> list[Event]:
    return [Event("token", run_id, "agent", "llm", "m", {"text": t}, 0.0) for t in tokens]


def in_tokens(text: str, size: int = 4) -> list[str]:
    return [text[at : at + size] for at in range(0, len(text), size)]


@pytest.fixture
def characters_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the characters the grammar lower-cases to search: every read of a reply, whole
    or in part, begins there."""
    return characters_handed(monkeypatch, _mrkl, "_lowered")


ANSWERS = {
    "prose": LINE * 600,
    "markdown": ("## Part\n\n- " + LINE + "> " + LINE + "   " + LINE) * 150,
    "one long line": "word " * 8000,
    "code at its start": "```python\n" + "print('Observation: no keyword in code')\n" * 600,
    "code on the keyword's line": "```json " + '{"key": 1} ' * 3000 + "```\nThat is all.",
    "code blocks": ("```text\n" + LINE * 20 + "```\n" + LINE * 40) * 4,
}


@pytest.mark.parametrize("answer", ANSWERS.values(), ids=ANSWERS.keys())
def test_each_character_of_a_streamed_answer_is_read_a_bounded_number_of_times(
    answer: str, characters_read: list[int]
) -> None:
    reply = "Thought: I have what I need.\nFinal Answer: " + answer
    pieces = list(FinalAnswerStream(token_events(in_tokens(reply))))
    assert "".join(p for p in pieces if isinstance(p, str)) == settled_answer(reply)
    # Reading the whole reply at every token read it about len(reply) / 8 times over.
    assert characters_read[0] <= 12 * len(reply)


THOUGHTS = {
    "prose": LINE * 600,
    "colons": "Note: step one: read it. Then: check it; time: 12:30.\n" * 700,
    "keyword words": "The action: none yet. My answer is: later. The input: above.\n" * 600,
}


@pytest.mark.parametrize("thought", THOUGHTS.values(), ids=THOUGHTS.keys())
def test_a_long_thought_before_the_answer_is_read_a_bounded_number_of_times(
    thought: str, characters_read: list[int]
) -> None:
    reply = "Thought: " + thought + "Final Answer: 42"
    events = token_events(in_tokens(reply))
    expected = whole_reading(events)
    characters_read[0] = 0
    assert list(FinalAnswerStream(events)) == expected
    assert characters_read[0] <= 4 * len(reply)


def test_an_action_is_read_once_whatever_its_input(characters_read: list[int]) -> None:
    reply = 'Action: lookup\nAction Input: {"key": "value", "more": "x: y"}\n' * 500
    assert list(FinalAnswerStream(token_events(in_tokens(reply)))) == []
    assert characters_read[0] <= 2 * len(reply)


def whole_reading(events: list[Event]) -> list[Piece]:
    """What FinalAnswerStream yields for the token and retry events of one model run of one
    agent, read the way it read them before it followed replies as they come: the whole
    reply so far at every token."""
    pieces: list[Piece] = []
    reply, shown = "", ""
    for event in events:
        if event.kind == "retry":
            reply = ""
            continue
        reply += event.data["text"]
        answer = settled_answer(reply)
        if answer is None or answer == shown:
            continue
        if answer.startswith(shown):
            pieces.append(answer[len(shown) :])
            shown = answer
        elif not shown.startswith(answer):
            pieces.extend([AnswerRestart(shown), answer] if answer else [AnswerRestart(shown)])
            shown = answer
    return pieces


def cut(text: str, cuts: list[int]) -> list[str]:
    """`text` in pieces, cut at the given offsets (taken modulo its length)."""
    offsets = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(offsets)]


def cut_in_bytes(text: str, cuts: list[int]) -> list[str]:
    """`text` as a backend hands it on: its UTF-8 bytes cut anywhere, each piece decoded as it
    comes (a character cut in two waits for its second half)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    data = text.encode("utf-8")
    offsets = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    decoded = [decoder.decode(data[a:b]) for a, b in itertools.pairwise(offsets)]
    return [piece for piece in decoded if piece]


def in_surrogates(text: str) -> str:
    """`text` with each character beyond the BMP written as its two surrogates, as JSON
    escapes in a stream may give them."""
    return "".join(c if ord(c) < 0x10000 else _surrogates(ord(c) - 0x10000) for c in text)


def _surrogates(offset: int) -> str:
    return chr(0xD800 + (offset >> 10)) + chr(0xDC00 + (offset & 0x3FF))


_TEXT = st.one_of(_PIECES, st.sampled_from(["é", "日本", "😀", "ACTİON:", "ﬁnal"]))
_REPLIES = st.lists(_TEXT, max_size=24).map("".join)
_CUTS = st.lists(st.integers(min_value=0, max_value=400), max_size=40)


@settings(max_examples=600, deadline=None)
@given(_REPLIES, _CUTS)
def test_read_as_it_comes_a_reply_settles_what_it_settles_read_whole(
    reply: str, cuts: list[int]
) -> None:
    for tokens in (cut(reply, cuts), cut_in_bytes(reply, cuts), cut(in_surrogates(reply), cuts)):
        streamed = _mrkl.StreamedReply()
        text = ""
        for token in tokens:
            text += token
            settled = streamed.add(token)
            whole = settled_answer(text)
            assert (settled is None) == (whole is None), (tokens, text)
            assert streamed.answer() == (whole or ""), (tokens, text)
            if settled is not None and settled.whole:
                assert settled.text == whole


@settings(max_examples=300, deadline=None)
@given(_REPLIES, _CUTS, _REPLIES, _CUTS, st.booleans())
def test_the_answer_streams_in_the_pieces_it_did_when_replies_were_read_whole(
    reply: str, cuts: list[int], retried: str, retry_cuts: list[int], same_again: bool
) -> None:
    """Across a retry too, whether it writes the same reply again or another."""
    events = token_events(cut(reply, cuts))
    events.append(Event("retry", "llm", "agent", "llm", "m", {}, 0.0))
    events += token_events(cut(reply if same_again else retried, retry_cuts))
    assert list(FinalAnswerStream(events)) == whole_reading(events)


@pytest.mark.parametrize("at", range(len("Thought: ok\nFinal Answer: 42")))
def test_a_token_may_end_anywhere_in_the_keyword(at: int) -> None:
    reply = "Thought: ok\nFinal Answer: 42"
    events = token_events([reply[:at], reply[at:]] if at else [reply])
    pieces = list(FinalAnswerStream(events))
    assert pieces == whole_reading(events)
    assert "".join(p for p in pieces if isinstance(p, str)) == "42"
