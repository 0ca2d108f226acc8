"""parse_mrkl_output: LangChain's and langchaingo's parser cases, the extra forms, the rules.

Cases marked "LangChain" / "langchaingo" reuse the inputs of their unit tests
(test_mrkl_output_parser.py, test_mrkl.py, test_react_single_input.py; agents/markl_test.go).
Where chainkit deliberately differs, the test says how and why.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainkit import _mrkl
from chainkit.agents.errors import OutputParserError
from chainkit.agents.mrkl_parser import (
    MISSING_ACTION,
    MISSING_ACTION_INPUT,
    parse_mrkl_output,
)
from chainkit.schema import AgentAction, AgentFinish


def action(text: str) -> tuple[str, str]:
    step = parse_mrkl_output(text)
    assert isinstance(step, AgentAction), step
    # The log is the reply up to the end of the input, nothing the model made up after it.
    assert text.startswith(step.log) and step.log == step.log.rstrip()
    return step.tool, step.tool_input


def answer(text: str) -> str:
    step = parse_mrkl_output(text)
    assert isinstance(step, AgentFinish), step
    assert step.log == text
    assert list(step.return_values) == ["output"]
    output = step.return_values["output"]
    assert isinstance(output, str)
    return output


def error(text: str) -> str:
    with pytest.raises(OutputParserError) as info:
        parse_mrkl_output(text)
    assert info.value.llm_output == text
    return info.value.observation


# --- LangChain MRKLOutputParser tests --------------------------------------------------------


def test_langchain_valid_action_and_action_input():
    text = "I can use the `foo` tool to achieve the goal.\n    Action: foo\n    Action Input: bar"
    assert action(text) == ("foo", "bar")


def test_langchain_valid_final_answer():
    assert answer("Final Answer: The best pizza to eat is margaritta ") == (
        "The best pizza to eat is margaritta"
    )


def test_langchain_missing_action():
    assert error("I can use the `foo` tool to achieve the goal.") == MISSING_ACTION


def test_langchain_missing_action_input():
    text = "I can use the `foo` tool to achieve the goal.\n    Action: foo"
    assert error(text) == MISSING_ACTION_INPUT


def test_langchain_final_answer_before_parsable_action():
    text = (
        "Final Answer: The best pizza to eat is margaritta\n\n"
        "        Action: foo\n        Action Input: bar\n        "
    )
    assert answer(text) == "The best pizza to eat is margaritta"


def test_langchain_final_answer_after_parsable_action_is_the_action():
    # LangChain raises here; the action comes first, so it wins and its input ends at the
    # Final Answer line the model went on to write.
    text = (
        "\n        Observation: I can use the `foo` tool to achieve the goal.\n"
        "        Action: foo\n        Action Input: bar\n"
        "        Final Answer: The best pizza to eat is margaritta \n        "
    )
    assert action(text) == ("foo", "bar")


def test_langchain_action_and_input():
    assert action("Thought: I need to search for NBA\nAction: Search\nAction Input: NBA") == (
        "Search",
        "NBA",
    )


def test_langchain_action_with_trailing_space():
    text = "Thought: I need to search for NBA\nAction: Search \nAction Input: NBA"
    assert action(text) == ("Search", "NBA")


def test_langchain_input_is_a_fenced_code_snippet():
    # LangChain keeps the fence lines; an input that is exactly one fenced block loses them.
    text = (
        "Now I need to write a unittest for the function.\n\n"
        "Action: Python\nAction Input:\n```\nimport unittest\n\nunittest.main()\n```"
    )
    assert action(text) == ("Python", "import unittest\n\nunittest.main()")


def test_langchain_newline_after_keywords():
    # LangChain keeps the input's trailing newline ("ls -l ~/.bashrc.d/\n"); it is trimmed.
    text = (
        "\n    I can use the `ls` command to list the contents of the directory "
        "    and `grep` to search for the specific file.\n\n"
        "    Action:\n    Terminal\n\n    Action Input:\n    ls -l ~/.bashrc.d/\n    "
    )
    assert action(text) == ("Terminal", "ls -l ~/.bashrc.d/")


def test_langchain_sql_query_keeps_its_quotes():
    text = (
        "\n    I should query for the largest single shift payment for every unique user.\n"
        "    Action: query_sql_db\n"
        '    Action Input:     SELECT "UserName", MAX(totalpayment) FROM user_shifts '
        'GROUP BY "UserName" '
    )
    assert action(text) == (
        "query_sql_db",
        'SELECT "UserName", MAX(totalpayment) FROM user_shifts GROUP BY "UserName"',
    )


def test_langchain_final_answer():
    assert answer("Thought: I can now answer the question\nFinal Answer: 1994") == "1994"


def test_langchain_final_answer_on_the_next_line():
    assert answer("Thought: I can now answer the question\nFinal Answer:\n1994") == "1994"


def test_langchain_final_answer_over_several_lines():
    text = "Thought: I can now answer the question\nFinal Answer: 1994\n1993"
    assert answer(text) == "1994\n1993"


def test_langchain_action_followed_by_a_thought_instead_of_input():
    text = "Thought: I need to search for NBA\nAction: Search\nThought: NBA"
    assert error(text) == MISSING_ACTION_INPUT


def test_langchain_action_input_without_action():
    text = "Thought: I need to search for NBA\nThought: Search\nAction Input: NBA"
    assert error(text) == MISSING_ACTION


def test_langchain_action_then_made_up_observation_and_answer_is_the_action():
    # LangChain raises; the action comes first, and the Observation line and all after it
    # are text the model made up.
    text = (
        "Thought: I need to search for NBA\nAction: Search\nAction Input: NBA\n"
        "Observation: founded in 1994\nThought: I can now answer the question\n"
        "Final Answer: 1994"
    )
    assert action(text) == ("Search", "NBA")


def test_langchain_react_action():
    text = (
        "Thought: agent thought here\nAction: search\nAction Input: what is the temperature in SF?"
    )
    assert action(text) == ("search", "what is the temperature in SF?")


def test_langchain_react_finish():
    text = "Thought: agent thought here\nFinal Answer: The temperature is 100"
    assert answer(text) == "The temperature is 100"


def test_langchain_react_final_answer_inside_the_action_line():
    # LangChain raises. The action comes first; its tool is the whole rest of the Action line,
    # which names no tool, so the executor reports an unknown tool to the model.
    text = (
        "Thought: agent thought here\nAction: search Final Answer:\n"
        "Action Input: what is the temperature in SF?"
    )
    assert action(text) == ("search Final Answer:", "what is the temperature in SF?")


# --- langchaingo OneShotZeroAgent.parseOutput tests ------------------------------------------


def test_langchaingo_action_input_on_the_action_line():
    assert action("Action:  foo Action Input: bar") == ("foo", "bar")


def test_langchaingo_input_over_several_lines():
    assert action("Action: foo\nAction Input:\nbar\nbaz") == ("foo", "bar\nbaz")


def test_langchaingo_observation_suffix_is_dropped():
    # langchaingo keeps "\nObservation:" in the input and its executor trims it; here the
    # parser drops it, so every caller gets the clean input.
    assert action("Action: calculator\nAction Input: 5 + 3\nObservation:") == (
        "calculator",
        "5 + 3",
    )


@pytest.mark.parametrize(
    "text",
    [
        "Thought: done\nfinal answer: 42",
        "Thought: done\nfinal answer : 42",
        "Thought: done\nThe final answer is: 42",
        "Thought: done\nFINAL ANSWER: 42",
    ],
)
def test_langchaingo_final_answer_variants(text):
    assert answer(text) == "42"


# --- Inputs over several lines and in fenced code --------------------------------------------


def test_multiline_input_is_kept_whole_with_its_thought_lines():
    text = "Action: write_note\nAction Input: line one\n\nThought: a line of the note\nline three"
    assert action(text) == ("write_note", "line one\n\nThought: a line of the note\nline three")


@pytest.mark.parametrize("language", ["", "json", "python"])
def test_fenced_input_loses_its_fence(language):
    text = f'Action: run\nAction Input:\n```{language}\n{{"a": [1,\n  2]}}\n```\n'
    assert action(text) == ("run", '{"a": [1,\n  2]}')


def test_keyword_lines_inside_a_fenced_input_are_code():
    text = (
        "Action: python\nAction Input: ```python\naction: int = 1\n"
        "Observation: str = 'x'\nFinal Answer: float = 2.0\n```\nObservation: made up"
    )
    assert action(text) == (
        "python",
        "action: int = 1\nObservation: str = 'x'\nFinal Answer: float = 2.0",
    )


def test_fenced_block_followed_by_text_keeps_its_fences():
    text = "Action: run\nAction Input: ```\ncode\n```\nthen more text"
    assert action(text) == ("run", "```\ncode\n```\nthen more text")


def test_one_line_fence_is_stripped():
    assert action("Action: run\nAction Input: ```print(1)```") == ("run", "print(1)")


def test_unclosed_fence_still_ends_at_an_observation_line():
    text = "Action: run\nAction Input: ```\nprint(1)\nObservation: made up"
    assert action(text) == ("run", "```\nprint(1)")


def test_fenced_final_answer_keeps_keyword_lines_inside():
    text = "Final Answer:\n```\nAction: is just text here\n```\nObservation: made up"
    assert answer(text) == "```\nAction: is just text here\n```"


# --- Replies wrapped in a code fence ------------------------------------------------------------

# How models wrap a reply: fence with or without a language tag, tildes, longer fences, CRLF.
_WRAPS = [
    ("```\n", "\n```"),
    ("```text\n", "\n```"),
    ("```markdown\n", "\n```\n"),
    ("~~~\n", "\n~~~"),
    ("````\n", "\n````"),
    ("  ```\n", "\n  ```  \n\n"),
    ("```\r\n", "\r\n```\r\n"),
    ("Thought: I will search.\n```\n", "\n```\nObservation: made up"),
]


@pytest.mark.parametrize(("opening", "closing"), _WRAPS)
def test_closing_fence_of_a_wrapped_action_is_not_in_the_input(opening, closing):
    text = f"{opening}Action: search\nAction Input: weather{closing}"
    step = parse_mrkl_output(text)
    assert isinstance(step, AgentAction)
    assert (step.tool, step.tool_input) == ("search", "weather")
    # The log keeps the closing fence line (the scratchpad stays balanced), nothing after it.
    assert (
        step.log
        == f"{opening}Action: search\nAction Input: weather{closing}".partition("\nObservation")[
            0
        ].rstrip()
    )


@pytest.mark.parametrize(("opening", "closing"), _WRAPS)
def test_closing_fence_of_a_wrapped_final_answer_is_not_in_the_answer(opening, closing):
    assert answer(f"{opening}Thought: done\nFinal Answer: 42{closing}") == "42"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('```\nAction: search\nAction Input: "weather"\n```', ("search", "weather")),
        ("```\nAction: search\nAction Input: `weather`\n```", ("search", "weather")),
        ('```\nAction: s\nAction Input:\n```json\n{"a": 1}\n```\n```', ("s", '{"a": 1}')),
        ('```\nAction: s\nAction Input: ```json\n{"a": 1}\n```\n```', ("s", '{"a": 1}')),
        ("~~~\nAction: s\nAction Input:\n```\nx = 1\n```\n~~~", ("s", "x = 1")),
        ("````\nAction: s\nAction Input: a\n```\nb\n```\n````", ("s", "a\n```\nb\n```")),
        ("```\nAction: s\nAction Input: line one\nline two\n```", ("s", "line one\nline two")),
        ("```\nAction: s\nAction Input:\n```", ("s", "")),
        ("Action: s\nAction Input: weather\n```", ("s", "weather")),
        ("Action: s\nAction Input: weather\n```\n\n", ("s", "weather")),
        ("Action: s Action Input: weather\n~~~", ("s", "weather")),
    ],
)
def test_fences_around_a_reply_or_its_input(text, expected):
    assert action(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "```\nFinal Answer: run this:\n```python\nprint(1)\n```\n```\nHope it helps",
            "run this:\n```python\nprint(1)\n```",
        ),
        ("```\nFinal Answer:\n```\ncode\n```\n```", "```\ncode\n```"),
        ("Final Answer: 42\n```", "42"),
        ("Final Answer: see\n```\ncode\n```", "see\n```\ncode\n```"),
        ("Final Answer: start\n```\nunclosed code", "start\n```\nunclosed code"),
    ],
)
def test_fences_in_a_final_answer(text, expected):
    assert answer(text) == expected


def test_a_closed_block_before_the_keyword_does_not_wrap_it():
    text = "Thought: here is code\n```python\nx = 1\n```\nAction: run\nAction Input: a\n```\nb\n```"
    assert action(text) == ("run", "a\n```\nb\n```")


def test_a_wrapping_fence_closed_before_the_input_does_not_cut_it():
    text = "```\nAction: run\n```\nAction Input: a\n```\nb\n```"
    assert action(text) == ("run", "a\n```\nb\n```")


@pytest.mark.parametrize(
    ("input_text", "expected"),
    [
        ("~~~\nx = 1\n~~~", "x = 1"),
        ('~~~json\n{"a": 1}\n~~~', '{"a": 1}'),
        ('```json {"a": 1}```', '{"a": 1}'),
        ('```JSON {"a": [1, 2]}```', '{"a": [1, 2]}'),
        ('```{"a": 1}\n```', '{"a": 1}'),
        ('```{"a":\n1}\n```', '{"a":\n1}'),
        ("```json\r\n{}\r\n```", "{}"),
        ("```python\nprint(1)\n```  ", "print(1)"),
        ("````\n```\ninner\n```\n````", "```\ninner\n```"),
        ("```weather```", "weather"),
        ("```weather\n```", "weather"),
        ("```json\n```", "json"),
        ("~~~\nx\n```", "~~~\nx\n```"),  # ``` does not close ~~~: not one block
        ("```x```y```", "```x```y```"),
        ("```", ""),  # a fence that closes nothing is no input
    ],
)
def test_fenced_input_forms(input_text, expected):
    assert action(f"Action: run\nAction Input: {input_text}") == ("run", expected)


@pytest.mark.parametrize(
    ("input_text", "expected"),
    [
        # Backticks in the code, even a fence line with an info string, do not close it.
        ("```python\nprint('```')\n```", "print('```')"),
        ("```\na\n```b\n````", "a\n```b"),
        ("````\na\n```\n````", "a\n```"),
        # The code keeps its indentation and whatever letters it starts or ends with.
        ("```\n  X = 1\nX\n```", "  X = 1\nX"),
        # Not one block: an unclosed fence, or code run on into the closing fence...
        ("```\na\nb```", "```\na\nb```"),
        ("```\na\n```x", "```\na\n```x"),
        # ...and tildes are no code span on one line, unlike backticks.
        ("~~~x~~~", "~~~x~~~"),
        # A one-line block drops a language tag only when code follows it.
        ("```json```", "json"),
        ("```weather report```", "weather report"),
        ("```json  {}```", "{}"),
    ],
)
def test_fence_rules_of_an_input(input_text, expected):
    assert action(f"Action: run\nAction Input: {input_text}") == ("run", expected)


def test_a_wrapped_input_holds_a_block_that_a_mismatched_fence_does_not_close():
    text = "```\nAction: s\nAction Input: a\n```python\nb\n~~~\nc\n```\n```\nObservation: x"
    assert action(text) == ("s", "a\n```python\nb\n~~~\nc\n```")


@pytest.mark.parametrize("inner_closer", ["```", "  ````  "])
def test_an_input_of_two_blocks_keeps_its_fences(inner_closer):
    # The wrapping ```` closes the second block, so the input runs on to the reply's end.
    value = f"```\na\n{inner_closer}\nb\n```\n````"
    assert action(f"````\nAction: s\nAction Input: {value}") == ("s", value)


def test_a_tilde_fence_may_have_backticks_in_its_info_string():
    text = "Final Answer:\n~~~ `x`\nObservation: code line\n~~~\nObservation: made up"
    assert answer(text) == "~~~ `x`\nObservation: code line\n~~~"


def test_a_backtick_fence_may_not_so_it_is_inline_code():
    text = "Final Answer:\n```x```\nObservation: made up\n```"
    assert answer(text) == "```x```"


# --- Quotes and backticks ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_text", "input_text"),
    [
        ('"search"', '"weather in Paris"'),
        ("'search'", "'weather in Paris'"),
        ("`search`", "`weather in Paris`"),
        ("  `search`  ", "  ` weather in Paris `  "),
        ("“search”", "「weather in Paris」"),
        ("**search**", "weather in Paris"),
    ],
)
def test_quotes_around_tool_and_input_are_stripped(tool_text, input_text):
    text = f"Action: {tool_text}\nAction Input: {input_text}"
    assert action(text) == ("search", "weather in Paris")


@pytest.mark.parametrize(
    ("input_text", "expected"),
    [
        ("`'quoted'`", "'quoted'"),  # one pair only
        ('"a" and "b"', '"a" and "b"'),  # the quote occurs inside: not one quoted value
        ('""doubled""', '""doubled""'),
        ("'tis", "'tis"),
        ('"unbalanced', '"unbalanced'),
        ('{"query": "x"}', '{"query": "x"}'),
    ],
)
def test_only_one_enclosing_pair_of_quotes_is_stripped(input_text, expected):
    assert action(f"Action: t\nAction Input: {input_text}") == ("t", expected)


# --- Numbers, case, colons, markdown, Chinese -------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Action 1: Search\nAction Input 1: NBA",
        "Action 1: Search\nAction 1 Input 1: NBA",
        "action: Search\naction input: NBA",
        "ACTION: Search\nACTION INPUT: NBA",
        "Action : Search\nAction Input : NBA",
        "Action：Search\nAction Input：NBA",
        "**Action:** Search\n**Action Input:** NBA",
        "**Action**: Search\n**Action Input**: NBA",
        "> Action: Search\n> Action Input: NBA",
        "- Action: Search\n- Action Input: NBA",
        "Action:\tSearch\r\nAction Input:\tNBA\r\n",
    ],
)
def test_action_keyword_forms(text):
    assert action(text) == ("Search", "NBA")


@pytest.mark.parametrize(
    "text",
    [
        "Final Answer：42",
        "final answer：42",
        "**Final Answer:** 42",
        "### Final Answer\t: 42",
        "Thought: I now know it. Final Answer: 42",
        "The final answer is： 42",
    ],
)
def test_final_answer_keyword_forms(text):
    assert answer(text) == "42"


@pytest.mark.parametrize(
    "text", ["Final answer - 42", "The answer is: 42", "Final\nAnswer: 42", "My final answer 42"]
)
def test_forms_without_a_final_answer_keyword(text):
    assert error(text) == MISSING_ACTION


def test_chinese_tool_and_input():
    text = "Thought: 我需要一个随机数\nAction：随机数计算工具\nAction Input：告诉我一个随机数"
    assert action(text) == ("随机数计算工具", "告诉我一个随机数")


def test_chinese_final_answer_and_typographic_quotes():
    assert answer("思考：完成。\nFinal Answer：“四十二”") == "“四十二”"
    assert action("Action: “随机数计算工具”\nAction Input: 「告诉我一个随机数」") == (
        "随机数计算工具",
        "告诉我一个随机数",
    )


def test_dotted_capital_i_does_not_shift_positions():
    # "İ".lower() is two characters; lower-case keywords are found on the lower-cased copy.
    assert action("Thought: İİİ\naction: Search\naction input: İzmir") == ("Search", "İzmir")


# --- Ordering and section ends ----------------------------------------------------------------


def test_final_answer_first_wins_and_ends_at_the_action_line():
    text = "Final Answer: 42\nmore of the answer\nAction: Search\nAction Input: x"
    assert answer(text) == "42\nmore of the answer"


def test_action_first_wins_over_a_later_final_answer():
    assert action("Action: Search\nAction Input: x\nFinal Answer: 42") == ("Search", "x")


def test_mid_line_final_answer_before_an_action_wins():
    text = "Thought: easy. Final Answer: 42\nAction: Search\nAction Input: x"
    assert answer(text) == "42"


def test_lower_case_mid_line_keywords_are_prose():
    text = (
        "Thought: before the final answer: I must take one action: a search\n"
        "Action: Search\nAction Input: x"
    )
    assert action(text) == ("Search", "x")


def test_exact_case_action_counts_mid_line():
    assert action("Thought: I will search. Action: Search\nAction Input: x") == ("Search", "x")


def test_keyword_inside_a_word_does_not_count():
    assert error("Thought: check the ReAction: 42\nMyFinal Answer: no") == MISSING_ACTION
    assert error("Action: pay\nTransaction Input: 5") == MISSING_ACTION_INPUT


@pytest.mark.parametrize(
    "observation", ["Observation:", "observation :", "OBSERVATION：", "**Observation:**"]
)
def test_input_ends_before_an_observation_line(observation):
    text = f"Action: Search\nAction Input: x\ny\n{observation} made up\nFinal Answer: z"
    assert action(text) == ("Search", "x\ny")


def test_input_ends_before_the_next_action():
    text = "Action: a\nAction Input: 1\nAction: b\nAction Input: 2"
    assert action(text) == ("a", "1")


def test_mid_line_observation_does_not_end_the_input():
    assert action("Action: echo\nAction Input: see Observation: below") == (
        "echo",
        "see Observation: below",
    )


def test_action_input_must_come_before_the_next_keyword_line():
    text = "Action: Search\nObservation: made up\nAction Input: x"
    assert error(text) == MISSING_ACTION_INPUT


def test_text_between_tool_line_and_input_is_ignored():
    text = "Action: Search\nI will look this up now.\nAction Input: NBA"
    assert action(text) == ("Search", "NBA")


def test_empty_tool_name_is_a_missing_action():
    assert error('Action: ""\nAction Input: x') == MISSING_ACTION


def test_empty_input_is_allowed():
    assert action("Action: list_files\nAction Input:") == ("list_files", "")


@pytest.mark.parametrize("text", ["", "   \n\n", "Thought: hmm"])
def test_replies_with_no_step(text):
    assert error(text) == MISSING_ACTION


def test_error_carries_the_model_output():
    with pytest.raises(OutputParserError) as info:
        parse_mrkl_output("Action: Search")
    assert info.value.llm_output == "Action: Search"
    assert isinstance(info.value, ValueError)


# --- Properties -------------------------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        "Action",
        "action input",
        "Final Answer",
        "Observation",
        "the final answer is",
        ":",
        "：",
        "\n",
        " ",
        "\t",
        "**",
        "```",
        '"',
        "`",
        "1",
        "İ",
        "随机",
        "Thought:",
        "> ",
        "#",
    ]
)


@given(st.lists(_PIECES | st.text(max_size=5), max_size=40).map("".join))
def test_any_reply_parses_or_raises_the_parser_error(text):
    try:
        step = parse_mrkl_output(text)
    except OutputParserError as error:
        assert error.observation in (MISSING_ACTION, MISSING_ACTION_INPUT)
        return
    if isinstance(step, AgentAction):
        assert text.startswith(step.log)
        assert step.tool and step.tool == step.tool.strip()
        assert step.tool_input in text or step.tool_input.strip("`\"'") in text


def outcome(read: Callable[[str], object], text: str) -> object:
    """What `read` gives for `text`: its step, or the observation of its parse error."""
    try:
        return read(text)
    except (OutputParserError, _mrkl.UnreadableReplyError) as error:
        return ("error", error.observation)


_PLAIN_PIECES = st.lists(
    st.sampled_from(
        [
            "Action: ",
            "\nAction Input:",
            "Final Answer:",
            "\n",
            " ",
            "\t",
            "\r",
            ":",
            "：",
            "`",
            "~",
            "*",
            "_",
            '"',
            "「",
            "」",
            "İ",
            "search",
            "is",
            "x-1.2",
            "Observation",
        ]
    )
    | st.text(max_size=4),
    max_size=8,
).map("".join)
# Mostly replies around the keywords of the plain shape, so both readings are compared often.
_KEYWORDS = st.sampled_from(
    ["\nAction: search\nAction Input:", "Action: a_b\nAction Input:", "\nFinal Answer:"]
)
_REPLIES = _PLAIN_PIECES | st.tuples(_PLAIN_PIECES, _KEYWORDS, _PLAIN_PIECES).map("".join)


@settings(max_examples=500)
@given(_REPLIES)
def test_a_reply_read_in_one_match_reads_as_the_grammar_reads_it(text):
    # parse_mrkl_output reads a reply in the prompt's plain shape in one match and leaves
    # every other reply to the grammar: both must agree on any reply.
    assert outcome(parse_mrkl_output, text) == outcome(_mrkl.read_step, text)


@pytest.mark.parametrize(
    "text",
    [
        " I should search.\nAction: search\nAction Input: what: is it",
        'Action: stock_price\nAction Input:  "ACME" ',
        "thinking\nstill thinking\nFinal Answer:  a: b Observation: c ",
        "Final Answer:",
        "İ think\nAction: İstanbul\nAction Input: 1",
    ],
)
def test_plain_replies_read_in_one_match_as_the_grammar_reads_them(text):
    assert _mrkl.PLAIN_REPLY.fullmatch(text) is not None  # the case is the plain shape
    assert parse_mrkl_output(text) == _mrkl.read_step(text)


_LINE = (
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters=":："
        ),
        min_size=1,
        max_size=30,
    )
    .map(str.strip)
    .filter(lambda s: s and s[0] not in "\"'`“‘「*" and s[-1] not in "\"'`”’」*")
)


@given(tool=_LINE, tool_input=_LINE)
def test_plain_action_round_trips(tool, tool_input):
    assert action(f"Thought: go\nAction: {tool}\nAction Input: {tool_input}") == (tool, tool_input)


_NO_FENCE_LINE = _LINE.filter(lambda s: "```" not in s and "~~~" not in s)


@given(
    tool=_NO_FENCE_LINE,
    tool_input=_NO_FENCE_LINE,
    opening=st.sampled_from(["```", "~~~", "```text", "````", "~~~~markdown"]),
)
def test_wrapped_action_round_trips(tool, tool_input, opening):
    closing = opening.rstrip("abcdefghijklmnopqrstuvwxyz")
    text = f"{opening}\nThought: go\nAction: {tool}\nAction Input: {tool_input}\n{closing}"
    assert action(text) == (tool, tool_input)


# --- Adversarial 1 MB replies (the result, not the time: timings live in bench/) ---------------

MB = 1_000_000


def cve_2024_58340(n: int) -> str:
    """The input of LangChain issue #6898 (CVE-2024-58340). At n=400 (2,047 chars)
    LangChain's pre-fix action regex took 64 s as reported, 40 s on this project's machine."""
    return (
        "Action"
        + "\n" * n
        + ":"
        + "\t" * n
        + "\t0Input:"
        + "\t" * n
        + "\nAction"
        + "\t" * n
        + "Input"
        + "\t" * n
        + "\t0Input:ActionInput:"
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("text", "observation"),
    [
        (cve_2024_58340(MB // 5), MISSING_ACTION),
        (cve_2024_58340(400) * (MB // 2047), MISSING_ACTION),
        ("Action:" * (MB // 7), MISSING_ACTION_INPUT),
        ("Action Input:\n" * (MB // 14), MISSING_ACTION),
        ("lorem ipsum " * (MB // 12), MISSING_ACTION),
        (" \t \n" * (MB // 4), MISSING_ACTION),
        ("\n" * MB, MISSING_ACTION),
        ("x action: y final answer: " * (MB // 26), MISSING_ACTION),
        ("Action" + " " * MB + "x", MISSING_ACTION),
        ("```\n" * (MB // 4), MISSING_ACTION),
        ("\n```" * (MB // 4) + "\nAction: a", MISSING_ACTION_INPUT),
        ("```" + "`" * MB, MISSING_ACTION),
    ],
)
def test_adversarial_megabyte_replies_raise(text, observation):
    assert error(text) == observation


@pytest.mark.timeout(60)
def test_megabyte_fenced_input_is_kept_whole():
    code = "print('x')  # Observation: in code\n" * (MB // 36)
    text = f"Action: python\nAction Input:\n```python\n{code}```\nObservation: made up"
    assert action(text) == ("python", code.rstrip("\n"))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fence_line", ["```", "~~~", "```python", "````"])
def test_megabyte_of_fence_lines_around_an_action(fence_line):
    fences = f"{fence_line}\n" * (MB // (2 * len(fence_line) + 2))
    text = f"{fences}Action: a\nAction Input: b\n{fences}"
    assert action(text)[0] == "a"


@pytest.mark.timeout(60)
def test_megabyte_one_line_input():
    body = "lorem ipsum " * (MB // 12)
    assert action("Action: echo Action Input: " + body) == ("echo", body.strip())


@pytest.mark.timeout(60)
def test_action_after_a_megabyte_of_observation_lines():
    text = "Observation:\n" * (MB // 13) + "Action: a\nAction Input: b"
    assert action(text) == ("a", "b")


def test_log_stops_where_the_input_ends():
    text = (
        " I need a number\nAction: random\nAction Input: 1-6\n"
        "Observation: 4\nThought: done\nFinal Answer: 4"
    )
    step = parse_mrkl_output(text)
    assert isinstance(step, AgentAction)
    assert step.log == " I need a number\nAction: random\nAction Input: 1-6"


@pytest.mark.parametrize(
    "text",
    [
        "I will take no Action: just answer.\nFinal Answer: 4",
        "Thought: no Action: needed here\nFinal Answer: 4",
    ],
)
def test_an_action_word_in_prose_gives_way_to_a_final_answer(text):
    assert answer(text) == "4"


def test_the_answer_after_a_prose_action_starts_on_the_next_line_and_loses_its_emphasis():
    assert answer("Thought: no Action:\nFinal Answer: 4") == "4"
    assert answer("Thought: no Action: x\n**Final Answer:** 4") == "4"


def test_an_action_at_line_start_without_input_still_fails():
    assert error("Action: search\nFinal Answer: 4") == MISSING_ACTION_INPUT


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no Action: x\nAction: calc\nAction Input: 1\nFinal Answer: 4", ("calc", "1")),
        ("Thought: no Action: needed\nAction: calc\nAction Input: 2", ("calc", "2")),
    ],
)
def test_an_action_word_in_prose_gives_way_to_the_next_action(text, expected):
    assert action(text) == expected
