"""The GBNF grammar of the next MRKL step (llama.cpp's grammar language), for servers that
constrain decoding: every reply it allows reads back with `parse_mrkl_output` as the step it
spells, and the shape leads the run to an answer.

The shape of a reply, after the prompt's `Thought:`:

- a thought: one line of at most `THOUGHT_LIMIT` characters, with no colon (so no keyword),
  backtick or tilde (so no fence);
- then `Action: <tool>` on its own line, the tool one of those offered, and
  `Action Input: <input>`, one line that does not begin with a space, quote, backtick or
  tilde (the parser would trim them away) and that differs from every input this tool was
  already given in the run: the same action twice is never allowed;
- or `Final Answer: <answer>`, one line. After `answer_now` (the agent's `answer_after` tool
  calls) only the final answer is allowed; given after a tool's result, it begins with that
  result's first line: a small model that has just been told the result tends to ask again,
  or to pass on a number of its own, rather than pass the result on.
- `final_answer_grammar` is the reply to the request for a final answer at a limit, whose
  prompt already ends with `Final Answer:`: the answer line alone.

Tool names, inputs and answers are written as GBNF string literals, escaped; inputs already
taken are excluded by a trie of rules, one rule per character, so the grammar grows linearly
with them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

__all__ = ["THOUGHT_LIMIT", "final_answer_grammar", "step_grammar"]

THOUGHT_LIMIT = 150
"""Characters a thought may have: a small model may otherwise write one until its budget ends.
A reply cut short by `max_tokens` within the thought or the keyword lines after it would not
parse: with 200 tokens or more, the thought and those lines always fit."""
_LINE = "[^\\n]"
_Trie = dict[str, "_Trie"]
"""A node of a trie of texts: the node each next character leads to."""
_THOUGHT = f"[^:`~\\n]{{0,{THOUGHT_LIMIT}}}"
# What an input may not begin with: what the parser trims (space, quotes) or reads as a fence.
_INPUT_OPENERS = " \t\"'`~“‘「"


def step_grammar(
    tools: Sequence[str],
    taken: Mapping[str, Iterable[str]],
    answered: str | None,
    answer_now: bool,
) -> str:
    """The grammar of the next step: an action, one of `tools` with an input not among
    `taken[tool]`, or a final answer, which begins with the first line of `answered` (the
    result of the tool that just answered) when there is one; with `answer_now`, or no tool
    offered, only the final answer."""
    answer = ("root", f'thought "\\nFinal Answer: " {_answer(answered)} "\\n"')
    if answer_now or not tools:
        return _rules(answer, ("thought", _THOUGHT))
    rules: list[tuple[str, str]] = []
    actions = []
    for index, tool in enumerate(tools):
        input_rule = f"input-{index}"
        actions.append(f'"Action: " {literal(tool)} "\\nAction Input: " {input_rule} "\\n"')
        rules.extend(_excluding(input_rule, taken.get(tool, ())))
    return _rules(
        ("root", 'thought "\\n" ( action | "Final Answer: " answer "\\n" )'),
        ("thought", _THOUGHT),
        ("action", " | ".join(actions)),
        ("answer", _answer(answered)),
        *rules,
    )


def final_answer_grammar(answered: str | None) -> str:
    """The grammar of the answer after a prompt that ends with `Final Answer:`: one line,
    beginning with `answered`'s first line when a tool just answered."""
    return _rules(("root", f'" " {_answer(answered)} "\\n"'))


def _answer(answered: str | None) -> str:
    """An answer line, beginning with the first line of `answered` when there is one, which
    ends there or goes on after a space, comma or semicolon: a result is never lengthened
    ("12" into "120")."""
    first_line = "" if answered is None else answered.strip().partition("\n")[0].strip()
    if not first_line:
        return f"[^`~\\n] {_LINE}*"
    return f"{literal(first_line)} ( [ ,;] {_LINE}* )?"


def _rules(*rules: tuple[str, str]) -> str:
    return "".join(f"{name} ::= {body}\n" for name, body in rules)


def _excluding(name: str, excluded: Iterable[str]) -> list[tuple[str, str]]:
    """Rules for `name`: one line, not beginning with one of `_INPUT_OPENERS`, equal to none
    of `excluded`.

    Each rule stands for a node of the trie of `excluded`: the line so far matches the path
    to it. From there the line may go on with a child's character (its rule), with any other
    character (then it differs from them all: any rest), or end, unless the path is itself
    excluded (or empty)."""
    trie: _Trie = {}
    ends = "\0end"  # not a character: marks a path that is excluded as a whole
    for text in excluded:
        node = trie
        for character in text:
            node = node.setdefault(character, {})
        node[ends] = {}
    rules: list[tuple[str, str]] = []
    pending = [(name, trie, True)]
    while pending:
        rule, node, is_root = pending.pop()
        children = [c for c in node if c != ends]
        alternatives = []
        for character in children:
            child = f"{name}-{len(rules) + len(pending) + 1}"
            alternatives.append(f"{literal(character)} {child}")
            pending.append((child, node[character], False))
        banned = "".join(children) + (_INPUT_OPENERS if is_root else "")
        alternatives.append(f"[^\\n{_class_escaped(banned)}] {_LINE}*")
        body = " | ".join(alternatives)
        may_end = not is_root and ends not in node
        rules.append((rule, f"( {body} )?" if may_end else body))
    return rules


def literal(text: str) -> str:
    """`text` as a GBNF string literal: quoted, with quotes, backslashes and any character
    that is not printable ASCII escaped."""
    return '"' + "".join(_escaped(c, '"\\') for c in text) + '"'


def _class_escaped(characters: str) -> str:
    """`characters` escaped for the inside of a GBNF character class."""
    return "".join(_escaped(c, "\\]^-[") for c in dict.fromkeys(characters))


def _escaped(character: str, special: str) -> str:
    if character in special:
        return "\\" + character
    code = ord(character)
    if 0x20 <= code < 0x7F:
        return character
    if code <= 0xFF:
        return f"\\x{code:02X}"
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"
