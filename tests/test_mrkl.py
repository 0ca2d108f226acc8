"""The MRKL grammar read while a reply is still being written: what `settled_answer` gives for
the beginning of a reply is never taken back by the rest of it. (The grammar on whole replies
is tested through `agents.mrkl_parser.parse_mrkl_output`, in tests/agents/.)"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit._mrkl import final_answer, settled_answer

# Pieces of replies: every form of keyword the grammar knows, near misses, markdown, fences,
# and the text around them, so that replies cut anywhere stop inside each of them.
_PIECES = st.sampled_from(
    [
        "Final Answer:",
        "**Final Answer:**",
        "**Final Answer**:",
        "Final answer:",
        "FINAL ANSWER :",
        "Final Answer：",
        "The final answer is:",
        "the final answer:",
        "Thought: I know the final answer",
        "I now know the final answer. ",
        "Action: calculator",
        "Action Input: 2+2",
        "Thought: no Action: needed",
        "Observation: 4",
        "Action 1:",
        "```",
        "```json",
        "~~~",
        "\n",
        "\n\n",
        "> ",
        "- ",
        "# ",
        "*",
        "_",
        " ",
        "\t",
        ":",
        "：",
        "It is 84.",
        "The answer",
        "There",
        "the",
        "final",
        "act",
        "x",
        "İ",
    ]
)
_REPLIES = st.lists(_PIECES, max_size=14).map("".join)


@settings(max_examples=400, deadline=None)
@given(_REPLIES)
def test_what_is_settled_of_a_reply_begins_its_answer_however_it_goes_on(reply):
    answer = final_answer(reply)
    for end in range(len(reply) + 1):
        settled = settled_answer(reply[:end])
        if settled is not None:
            assert answer is not None, f"{reply[:end]!r} read as a final answer, {reply!r} not"
            assert answer.startswith(settled), (reply[:end], settled, answer)


@pytest.mark.parametrize(
    ("reply", "settled"),
    [
        ("Thought: easy\nFinal Answer: It is 8", "It is 8"),
        ("**Final Answer:** It is", "It is"),
        ("Final Answer：It", "It"),
        ("The final answer is: 84 and", "84 and"),
        ("Final Answer: 84\nThe reason", "84\nThe reason"),
    ],
)
def test_an_answer_is_settled_as_it_comes(reply, settled):
    assert settled_answer(reply) == settled


@pytest.mark.parametrize(
    ("reply", "settled"),
    [
        ("**Final Answer:*", ""),  # the markdown closing the keyword may be coming
        ("Final Answer: 84\nObserv", "84"),  # an Observation line would end the answer
        ("Final Answer: 84\n- The  fin", "84"),  # so would "The final answer is:"
        ("Final Answer: 84\n``", "84"),  # a fence line may close the block the answer is in
        ("Final Answer: 84  ", "84"),  # space counts only once text follows it
    ],
)
def test_what_the_rest_of_the_reply_may_change_is_held_back(reply, settled):
    assert settled_answer(reply) == settled


@pytest.mark.parametrize(
    "reply",
    [
        "Thought: I know the final answer",
        "Thought: the final answer is near\nAction: calculator\nAction Input: 1",
        "Action: calculator\nAction Input: 1\nFinal Answer: 2",
        "Final Ans",
    ],
)
def test_a_reply_that_decides_on_no_final_answer_settles_none(reply):
    assert settled_answer(reply) is None
