"""The grammar of a MRKL / ReAct reply ("Thought / Action / Action Input / Final Answer"): the
step it decides on, and, while it is still being written, how much of its final answer is
settled. `agents.parse_mrkl_output` and `callbacks.FinalAnswerStream` both read replies here.

Grammar
-------
A keyword is `Action`, `Action Input`, `Observation` or `Final Answer` followed by a colon,
ASCII `:` or full-width `：`. Keywords match in any case (`action:`, `ACTION INPUT:`). The
first three may carry a step number (`Action 1:`, `Action Input 1:`), any keyword may have
spaces before its colon (`final answer :`) and markdown emphasis around it (`**Action:**`,
`**Final Answer**:`). `The final answer is:` is a Final Answer keyword too.

Where a keyword counts:

- at the start of a line, after optional indentation and markdown (`>`, `#`, `-`, `*`, `_`),
  in any case;
- anywhere after a non-alphanumeric character when written exactly `Action:` or
  `Final Answer:`, as LangChain finds them ("I know it now. Final Answer: 42"); other cases
  mid-line are prose ("before I give the final answer: ...") and do not count;
- `Action Input:`, in any case, anywhere after the `Action:` it belongs to
  ("Action: foo Action Input: bar", a langchaingo case).

The first `Action:` or `Final Answer:` keyword in the text decides the reply:

- `Final Answer:` gives `AgentFinish({"output": answer})`; the answer is the text after the
  keyword up to the next keyword line.
- `Action:` gives `AgentAction`, whose `log` is the reply up to the end of the input (what the
  model made up after it is dropped, so it never reaches the scratchpad). The tool is the
  first non-blank line after the keyword, cut at an `Action Input:` on that line; other lines
  before `Action Input:` are ignored. The
  `Action Input:` must come before the next keyword line; the input is the text after it up to
  the next keyword line.

"The next keyword line" is the next line that starts with any keyword: an `Observation:` line
(it and what follows are made up by the model), another `Action:` / `Action Input:` (a second
step) or a `Final Answer:`. `Thought:` lines do not end a section, since input text may hold
one. A section that opens with a fenced code block (```, ~~~, with or without a language tag)
runs at least to its closing fence, so keyword-looking lines of code stay in it.

Code fences around the reply: a model often wraps its whole reply, or the part from some
line on, in a fenced block (```` ``` ````, ```` ```text ````, `~~~`). When the fence is still
open where the decisive keyword stands, the fence line that closes it ends the section, as a
keyword line would; the action's `log` keeps that closing line, so the scratchpad stays
balanced. Fences opened inside the section pair up among themselves first (an answer may hold
a code block). A bare fence line at the very end of a section that closes nothing is dropped
too: it closes a fence opened where the parser cannot see it. Fences are paired up to
`MAX_FENCE_LINES` (200) fence lines in each stretch the parser reads; past that, the reply's
fences are read as plain text.

Cleaning: whitespace is trimmed. The tool name and the input lose one enclosing pair of quotes
or backticks (" ' ` “” ‘’ 「」) when that quote does not also occur inside; an input that is
exactly one fenced block (```json, the code, ```; ~~~ alike; or ```json {"a": 1}``` on one
line) is reduced to the code. Markdown `*` around the tool name is dropped. The answer is only
trimmed.

An `Action:` found mid-line ("Thought: no Action: needed") with no `Action Input:` after it
was prose: the next `Action:` or `Final Answer:` keyword line decides instead, as in LangChain
and langchaingo.

Not accepted, by choice: `Final answer -` and other forms without a colon (a dash is common in
prose), langchaingo's `The answer is:`, and keywords broken across lines.

A reply the grammar cannot read raises `UnreadableReplyError` (`agents.parse_mrkl_output`
makes it an `OutputParserError`); its `observation` tells the model what to fix. No `Action:`
(or an empty tool name) and no final answer gives `MISSING_ACTION`; an `Action:` without an
`Action Input:` before the next keyword line gives `MISSING_ACTION_INPUT`.

A reply being streamed
----------------------
`settled_answer(text)` reads the beginning of a reply: when it decides on a final answer, it
gives the part of the answer that no text added to the reply can change, so a stream can show
it at once. It leaves out what the rest of the reply may still alter: the last line when it
may yet become a keyword or fence line (which would end the answer before it), the first two
characters after the keyword's colon (which may close its markdown, `**Final Answer:**`), and
trailing space. The decision itself cannot change: the first keyword, and a mid-line `Action:`
read as prose, are settled by text that is already there. One case alone can break the
promise: a reply whose fence lines pass `MAX_FENCE_LINES` later on is read with its fences as
plain text.

`StreamedReply` says the same of each piece of a reply as it comes, reading each piece once
and the reply whole only where its answer's course may change (see its docstring), so a
stream's cost stays linear in its reply where `settled_answer` on the text so far would read
it again at every piece.

Deliberate differences from LangChain's MRKLOutputParser and langchaingo's OneShotZeroAgent:
a reply holding both an action and a final answer is decided by position instead of raising
(LangChain) or preferring the answer (langchaingo); the input stops at an `Observation:` line
instead of keeping it (langchaingo trims it later, LangChain relies on the stop sequence); a
fully fenced input loses its fences and trailing newlines are trimmed.

Cost
----
Linear in the length of the reply. Keywords are found by a few compiled patterns in which
every repetition is possessive (`*+`, `++`, `?+`), so the engine never backtracks into one,
and alternatives begin with distinct letters. Each pattern opens with a literal (a newline or
the keyword), so `re` moves between candidates by substring search, and an attempt reads only
its candidate and the run of spaces, digits or markdown beside it. Fence lines are found the
same way (a newline, then three backticks or tildes). Each part of the reply is searched a
fixed number of times. `bench/bench_parser.py` times 1 MB adversarial replies, LangChain's
CVE-2024-58340 input among them.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from chainkit.schema import AgentAction, AgentFinish

__all__ = [
    "MAX_FENCE_LINES",
    "MISSING_ACTION",
    "MISSING_ACTION_INPUT",
    "PLAIN_REPLY",
    "Settled",
    "StreamedReply",
    "UnreadableReplyError",
    "final_answer",
    "read_step",
    "settled_answer",
    "unquote",
]

MISSING_ACTION = "Invalid Format: Missing 'Action:' after 'Thought:'"
MISSING_ACTION_INPUT = "Invalid Format: Missing 'Action Input:' after 'Action:'"
# Fence lines paired up in one stretch of a reply; a reply with more is read as plain text.
MAX_FENCE_LINES = 200

# Pieces of the keyword patterns that run on the lower-cased reply (see `_lowered`).
_LINE_START = r"\n[ \t>#*_-]*+"
_ACTION = r"action[ \t0-9]*+"
_INPUT = r"input[ \t0-9]*+"
_OBSERVATION = r"observation[ \t0-9]*+"
_FINAL = r"final[ \t]*+answer(?:[ \t]++is)?+[ \t]*+"
_COLON = r"[*_]*+:"

# An `Action:` or `Final Answer:` line: the keywords that decide the reply.
# Group 1 is the keyword, past indentation and markdown.
_DECISION_LINE = re.compile(rf"{_LINE_START}({_ACTION}|{_FINAL}|the[ \t]++{_FINAL}){_COLON}")
# Any keyword line: where a section ends.
_KEYWORD_LINE = re.compile(
    rf"{_LINE_START}(?:{_ACTION}(?:{_INPUT})?+|{_OBSERVATION}|{_FINAL}|the[ \t]++{_FINAL}){_COLON}"
)
# The lookbehind sits after the literal so `re` still finds candidates by substring search.
_INPUT_ANYWHERE = re.compile(rf"action(?<![a-z0-9]action)[ \t0-9]*+{_INPUT}{_COLON}")

# Patterns that run on the reply as written: the exact-case keywords LangChain finds mid-line.
_ACTION_INLINE = re.compile(r"Action(?<![A-Za-z0-9]Action)[ \t0-9]*+[*_]*+[:：]")
_FINAL_INLINE = re.compile(
    r"Final Answer(?<![A-Za-z0-9]Final Answer)(?:[ \t]++is)?+[ \t]*+[*_]*+[:：]"
)
# A code fence: three or more backticks or tildes. On the probe, at the start of a line.
_COLONS = re.compile("[:：]")
_FENCE_LINE = re.compile(r"\n[ \t]*+(`{3,}+|~{3,}+)")
_LEADING_FENCE = re.compile(r"[ \t\r\n]*+(`{3,}+|~{3,}+)")
# What may follow a fence on its line as a language tag ("json", "c++", "objective-c").
_LANGUAGE_TAG = re.compile(r"[A-Za-z0-9_+#.-]++")
# Tags dropped from a one-line fence (```json {"a": 1}```), where a word could also be code.
_ONE_LINE_TAGS = frozenset(
    ("json", "python", "py", "sql", "sh", "bash", "text", "yaml", "js", "xml")
)

# A reply in the prompt's own shape, read in one match: lines with no colon (so no keyword
# among them), then `Action: tool` and `Action Input:` on the next line, or `Final Answer:`,
# the input or answer on that line to the end, and no fence or full-width colon anywhere.
# The grammar (`read_step`) reads such a reply as this one match does.
# Each line before the keyword is read once, possessively: none is given back.
PLAIN_REPLY = re.compile(
    r"(?:[^:：`~\n]*+\n)*+(?:Action: ([\w.-]++)\nAction Input:|Final Answer:)([^\n`~]*+)"
)

_DECORATION = " \t>#*_-"
# What a keyword or fence line begins with past its indentation and markdown: the first words
# of each keyword pattern above, or a fence's marker.
_FENCE_MARKERS = ("```", "~~~")
_LINE_WORDS = ("action", "observation", "final", "the final", *_FENCE_MARKERS)
_QUOTE_PAIRS = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’", "「": "」"}


class UnreadableReplyError(Exception):
    """The reply holds no step: `observation` (MISSING_ACTION or MISSING_ACTION_INPUT) says
    what the model must fix."""

    def __init__(self, observation: str) -> None:
        super().__init__(observation)
        self.observation = observation


class _TooManyFencesError(Exception):
    """More fence lines than the parser pairs up in one stretch of a reply."""


@dataclass(slots=True, frozen=True)
class _Fence:
    """A code-fence line: its marker (```, ~~~~), the text after the marker on its line, and
    where the line starts and ends in the reply."""

    marker: str
    info: str
    start: int
    end: int

    def closes(self, opener: _Fence) -> bool:
        """Whether this line closes the block `opener` opened (CommonMark's rule)."""
        return (
            not self.info
            and self.marker[0] == opener.marker[0]
            and len(self.marker) >= len(opener.marker)
        )


_Step = tuple[bool, int, int]
"""The keyword that decides the reply: whether it is `Action:`, where it starts and where the
text after it starts. A plain tuple: one is made on every parse."""


def final_answer(text: str) -> str | None:
    """The final answer of a whole reply; None when it decides on an action or on nothing."""
    try:
        step = read_step(text)
    except UnreadableReplyError:
        return None
    return step.return_values["output"] if isinstance(step, AgentFinish) else None


def settled_answer(text: str) -> str | None:
    """The beginning of the final answer of a reply that is still being written, as far as no
    text added to `text` can change it: the answer `read_step` gives for the whole reply
    starts with it. None while `text` decides on no final answer (an action, or nothing yet).
    """
    return _settled(text).answer


@dataclass(slots=True, frozen=True)
class _Settled:
    """What `settled_answer` reads in a reply: how far it has got (`stage`), the answer, and,
    once the answer's section was read, where the answer starts, where its section ends and
    how much of the reply was read (all of it but a last line that may still end the answer).
    """

    stage: _Stage
    answer: str | None
    start: int = 0
    end: int = 0
    read: int = 0


class _Stage(enum.Enum):
    UNDECIDED = enum.auto()  # no step yet: only a keyword ending at a colon can decide one
    ACTION = enum.auto()  # an action: no text added can make it a final answer
    OPENING = enum.auto()  # a final answer whose opening may still change
    FENCED = enum.auto()  # a final answer on the keyword's line that opens a code block
    SECTION = enum.auto()  # a final answer whose section was read


def _settled(text: str) -> _Settled:
    probe = _lowered(text)
    try:
        decided = _decision(text, probe)
    except UnreadableReplyError:
        return _Settled(_Stage.UNDECIDED, None)
    if isinstance(decided, AgentAction):
        return _Settled(_Stage.ACTION, None)
    keyword_start, start = decided
    if len(text) - start < 2:
        # The markdown that closes the keyword's may come next: `**Final Answer:**`.
        return _Settled(_Stage.OPENING, "")
    # The last line may still turn out to end the answer: as a keyword or fence line or, on
    # the keyword's own line, as a fence opening the answer. If it may, the answer is read as
    # if the reply ended before it, as it would when that line came.
    last_line = text.rfind("\n", start) + 1
    if not last_line:
        if _may_become(text[start:], " \t", _FENCE_MARKERS):
            fenced = len(_line_begins(text[start:], " \t")) >= len(_FENCE_MARKERS[0])
            return _Settled(_Stage.FENCED if fenced else _Stage.OPENING, "")
    elif _may_become(text[last_line:], _DECORATION, _LINE_WORDS):
        text, probe = text[: last_line - 1], probe[:last_line]
    end, _ = _section(text, probe, keyword_start, start)
    return _Settled(_Stage.SECTION, text[start:end].strip(), start, end, len(text))


class Settled(NamedTuple):
    """What a piece of a reply does to its settled answer: `text` is the answer whole when
    `whole`, else what the piece adds to the answer given before."""

    text: str
    whole: bool


# Before a colon, a keyword is a few words between runs of spaces, step numbers or markdown.
# In text with each such run squeezed to one space, it is one of these (read lower-cased: a
# keyword line, or `Action Input:` anywhere; read as written: LangChain's mid-line keywords).
# Squeezing only makes them match more, and what they match is short.
_RUN = re.compile(r"[ \t0-9*_>#-]+")
_KEYWORD_BEFORE_COLON = re.compile(
    r"(?:\A|\n) ?(?:action ?(?:input ?)?|observation ?|(?:the ?)?final ?answer(?: ?is)? ?)\Z"
    r"|action ?input ?\Z"
)
_INLINE_BEFORE_COLON = re.compile(r"(?<![A-Za-z0-9])(?:Action|Final Answer(?: ?is)?) ?\Z")
# Squeezed text kept to look behind a colon: more than any keyword squeezed.
_RECENT = 64


def _squeezed(text: str) -> str:
    return _RUN.sub(" ", text)


class StreamedReply:
    """A reply read as it is written: `add` takes each piece and says what `settled_answer`
    says of the text so far.

    Each piece is read on its own: before a keyword decides the reply, only a colon that may
    end a keyword can change anything (the text before it is kept squeezed, a few dozen
    characters); after an action, nothing can; in a final answer, a piece adds to the answer
    what it adds to the lines that cannot end it (a line that may still become a keyword or
    fence line waits until it is whole or cannot). The reply is read whole only where the
    answer's course may change: at a colon that may end a keyword, while the answer's first
    characters may still close the keyword's markdown or open a code block, and at a whole
    line inside the answer that is a keyword or fence line. Each of those costs one read of
    the reply so far: linear for prose, and for answers with a few code blocks.
    """

    __slots__ = (
        "_answer",
        "_blank",
        "_ended",
        "_frozen",
        "_held",
        "_nonblank",
        "_pieces",
        "_recent",
        "_stage",
        "_stray",
        "_watched",
    )

    def __init__(self) -> None:
        self._pieces: list[str] = []  # the text so far, joined when read whole
        self._recent = ""  # its end, squeezed (`_squeezed`)
        self._stage = _Stage.UNDECIDED
        self._answer: list[str] = []  # the settled answer, in pieces
        # Once the answer's section was read: the last line, while it may still become a
        # keyword or fence line (None once it cannot), or while it holds an "İ", which
        # `_may_become` lower-cases to two characters where the keyword patterns read one;
        # the blank text after the answer's
        # last non-blank character; whether there is one yet; whether the section has ended
        # (then nothing changes it but new text after a stray fence, or, unless `frozen`, a
        # keyword or fence line).
        self._held: list[str] | None = None
        self._watched: list[str] | None = None  # the last line, when it holds an "İ"
        self._blank: list[str] = []
        self._nonblank = False
        self._ended = False
        self._stray = False
        self._frozen = False

    def add(self, piece: str) -> Settled | None:
        """What `piece`, the next text of the reply, does to its settled answer; None while
        the reply decides on no final answer (an action, or nothing yet)."""
        self._pieces.append(piece)
        stage = self._stage
        if stage is _Stage.ACTION:
            return None
        if stage is _Stage.SECTION:
            added = self._added(piece)
            if added is not None:
                if added:
                    self._answer.append(added)
                return Settled(added, whole=False)
        elif stage is _Stage.UNDECIDED and not self._may_decide(piece):
            return None
        elif stage is _Stage.FENCED and "\n" not in piece:
            return Settled("", whole=False)  # the fence's line goes on: it holds no answer
        return self._read_whole()

    def answer(self) -> str:
        """The settled answer so far ("" before there is one)."""
        if len(self._answer) > 1:
            self._answer = ["".join(self._answer)]
        return self._answer[0] if self._answer else ""

    def _may_decide(self, piece: str) -> bool:
        """Whether a keyword may end at a colon in `piece`."""
        *before_colons, after = _COLONS.split(piece)
        for text in before_colons:
            recent = _squeezed(self._recent + text)[-_RECENT:]
            if _KEYWORD_BEFORE_COLON.search(
                recent.replace("İ", "I").lower()
            ) or _INLINE_BEFORE_COLON.search(recent):
                return True
            self._recent = recent + ":"
        self._recent = _squeezed(self._recent + after)[-_RECENT:]
        return False

    def _read_whole(self) -> Settled | None:
        text = "".join(self._pieces)
        self._pieces = [text]
        settled = _settled(text)
        self._stage = settled.stage
        if settled.stage is _Stage.UNDECIDED:
            self._recent = _squeezed(text)[-_RECENT:]
        if settled.answer is None:
            return None
        self._answer = [settled.answer]
        if settled.stage is _Stage.SECTION:
            self._follow(text, settled)
        return Settled(settled.answer, whole=True)

    def _follow(self, text: str, settled: _Settled) -> None:
        """Sets what `_added` reads from the section `settled` found in `text`."""
        start, end, read = settled.start, settled.end, settled.read
        line_start = text.rfind("\n", start) + 1
        last_line = text[line_start:]
        self._held = [last_line] if read < len(text) else None
        watch = line_start and self._held is None and "İ" in last_line
        self._watched = [last_line] if watch else None
        self._ended = end < read
        if self._ended:
            # A bare fence line at the section's end with only blanks after it is dropped as
            # stray, until text comes after it; or it closes a fence opened before.
            self._stray = not text[end:read].strip(" \t\r\n`~")
            self._frozen = not self._stray and _LEADING_FENCE.match(text, start) is None
        else:
            section = text[start:read]
            kept = len(section.rstrip())
            self._blank = [section[kept:]]
            self._nonblank = kept > 0

    def _added(self, piece: str) -> str | None:
        """What `piece` adds to the answer; None when the reply must be read whole."""
        if self._frozen:
            return ""
        first, *lines = piece.split("\n")
        added = [self._continued(first)]
        for line in lines:
            held = self._held
            if held is not None:
                if _ends_or_fences("".join(held)):
                    return None
                added.append(self._considered("\n" + "".join(held)))
            self._held, self._watched = [line], None
            added.append(self._continued(""))
        if None in added:
            return None
        return "".join(added)  # type: ignore[arg-type]

    def _continued(self, text: str) -> str | None:
        """What `text`, added to the last line, adds to the answer."""
        held = self._held
        if held is None:
            watched = self._watched
            if watched is not None:
                watched.append(text)
                if _KEYWORD_LINE.match(_lowered("".join(watched))):
                    return None
            return self._considered(text)
        held.append(text)
        line = "".join(held)
        self._held = [line]
        if _may_become(line, _DECORATION, _LINE_WORDS):
            return ""
        self._held = None
        if "İ" in line:
            self._watched = [line]
            if _KEYWORD_LINE.match(_lowered(line)):
                return None
        return self._considered("\n" + line)

    def _considered(self, text: str) -> str | None:
        """What `text`, added to the text read of the section, adds to the answer; None
        when it may undo a stray fence."""
        if self._ended:
            return None if self._stray and text.strip() else ""
        kept = text.rstrip()
        if not kept:
            self._blank.append(text)
            return ""
        added = "".join(self._blank) + kept
        if not self._nonblank:
            added = added.lstrip()
            self._nonblank = True
        self._blank = [text[len(kept) :]]
        return added


def _ends_or_fences(line: str) -> bool:
    """Whether `line`, whole, is a keyword line or a fence line."""
    probe = _lowered(line)
    return bool(_KEYWORD_LINE.match(probe) or _FENCE_LINE.match(probe))


def _may_become(line: str, decoration: str, words: tuple[str, ...]) -> bool:
    """Whether `line`, the beginning of a line still being written, past `decoration`, may
    turn out to begin with one of `words` (spaces between them counting as one) once the
    rest of it comes."""
    begins = _line_begins(line, decoration)
    return any(word.startswith(begins[: len(word)]) for word in words)


def _line_begins(line: str, decoration: str) -> str:
    """The first two words of `line` past `decoration`, lower-cased: more text can only add
    to them."""
    # The words are one or two (`the final`): the line's first two are all that can match.
    return " ".join(line.lstrip(decoration).split(None, 2)[:2]).lower()


def read_step(text: str) -> AgentAction | AgentFinish:
    """The step a whole reply decides on; raises `UnreadableReplyError`."""
    probe = _lowered(text)
    decided = _decision(text, probe)
    if isinstance(decided, AgentAction):
        return decided
    keyword_start, start = decided
    answer_end, _ = _section(text, probe, keyword_start, start)
    return AgentFinish({"output": text[start:answer_end].strip()}, log=text)


def _decision(text: str, probe: str) -> AgentAction | tuple[int, int]:
    """The action the reply decides on, or where its deciding `Final Answer:` keyword starts
    and where the answer after it starts."""
    step = _first_step(text, probe)
    if step is None:
        raise UnreadableReplyError(MISSING_ACTION)
    is_action, start, end = step
    if is_action:
        try:
            return _action(text, probe, end)
        except UnreadableReplyError:
            # "Thought: no Action: needed\nFinal Answer: 4": an `Action:` inside a sentence,
            # with no input, was prose; the next keyword line decides (as the peers have it).
            following = _next_line_step(text, probe, end) if _mid_line(text, start) else None
            if following is None:
                raise
            is_action, start, end = following
            if is_action:
                return _action(text, probe, end)
    return start, end


def _mid_line(text: str, position: int) -> bool:
    """Whether words precede `position` on its line (not just indentation or markdown)."""
    line_start = text.rfind("\n", 0, position) + 1
    return bool(text[line_start:position].strip(_DECORATION))


def _next_line_step(text: str, probe: str, position: int) -> _Step | None:
    """The first `Action:` or `Final Answer:` keyword line after `position`, if any."""
    line = _DECISION_LINE.search(probe, position + 1)
    if line is None:
        return None
    start = line.start(1) - 1
    is_action = probe.startswith("action", start + 1)
    return is_action, start, _after_emphasis(text, start, line.end() - 1)


def _lowered(text: str) -> str:
    """`text` lower-cased with full-width colons made ASCII, after one newline.

    The newline lets line patterns match the first line too. Index `i` of `text` is index
    `i + 1` here: lower-casing keeps the length for every character but "İ", which is replaced.
    """
    probe = ("\n" + text).lower()
    if len(probe) != len(text) + 1:
        probe = ("\n" + text.replace("İ", "I")).lower()
    return probe.replace("：", ":")


def _first_step(text: str, probe: str) -> _Step | None:
    """The first `Action:` or `Final Answer:` keyword of the reply, if any."""
    line = _DECISION_LINE.search(probe)
    if line is None:
        is_action, start, end = False, len(text), -1
    else:
        start = line.start(1) - 1
        is_action, end = probe.startswith("action", start + 1), line.end() - 1
    # Keywords never overlap, so one that starts before the first found also ends before it:
    # each search can stop there.
    inline = _ACTION_INLINE.search(text, 0, start)
    if inline is not None:
        is_action, start, end = True, inline.start(), inline.end()
    inline = _FINAL_INLINE.search(text, 0, start)
    if inline is not None:
        is_action, start, end = False, inline.start(), inline.end()
    if end < 0:
        return None
    return is_action, start, _after_emphasis(text, start, end)


def _action(text: str, probe: str, keyword_end: int) -> AgentAction:
    """The action whose `Action:` keyword ends at `keyword_end`."""
    next_line = _KEYWORD_LINE.search(probe, keyword_end + 1)
    limit = len(probe) if next_line is None else next_line.end()
    found = _INPUT_ANYWHERE.search(probe, keyword_end + 1, limit)
    if found is None:
        raise UnreadableReplyError(MISSING_ACTION_INPUT)
    input_keyword = found.start() - 1
    tool = _tool_name(text[keyword_end:input_keyword])
    if not tool:
        raise UnreadableReplyError(MISSING_ACTION)
    start = _after_emphasis(text, input_keyword, found.end() - 1)
    end, log_end = _section(text, probe, input_keyword, start)
    # The log goes back to the model in the scratchpad: what follows the input (an
    # Observation, a Final Answer the model made up) must not reach it as if it were real.
    return AgentAction(tool, _clean_input(text[start:end]), text[:log_end].rstrip())


def _after_emphasis(text: str, keyword_start: int, colon_end: int) -> int:
    """`colon_end`, moved past a `**` (or `*`, `__`, `_`) that closes one opened before the keyword.

    So `**Final Answer:** 42` answers "42", not "** 42".
    """
    if not keyword_start or text[keyword_start - 1] not in "*_":
        return colon_end  # no markdown before the keyword: almost always
    before = text[max(keyword_start - 2, 0) : keyword_start]
    opener = before[len(before.rstrip("*_")) :]
    if text.startswith(opener, colon_end):
        return colon_end + len(opener)
    return colon_end


def _section(text: str, probe: str, keyword_start: int, start: int) -> tuple[int, int]:
    """Where the section whose text begins at `start` ends, and where the step's log ends.

    The section ends before the next keyword line, or before the fence line that closes a
    fence open at `keyword_start` or a stray one at its end; the log keeps that fence line.

    A fenced block that opens the section is kept whole, whatever lines it holds.
    """
    # One character is found by memchr, far faster than a search for three.
    if "`" in text or "~" in text:
        try:
            return _fenced_section(text, probe, keyword_start, start)
        except _TooManyFencesError:
            pass  # fences are read as plain text, so the work stays bounded
    end = _next_keyword_line(text, probe, start)
    return end, end


def _fenced_section(text: str, probe: str, keyword_start: int, start: int) -> tuple[int, int]:
    resume = scan_from = start
    inner: _Fence | None = None
    leading = _leading_fence(text, start)
    if leading is not None:
        closing = next(
            (f for f in _fences(text, probe, leading.end, len(text)) if f.closes(leading)), None
        )
        if closing is None:
            inner, scan_from = leading, leading.end  # still open: what follows is its code
        else:
            resume = scan_from = closing.end
    end = _next_keyword_line(text, probe, resume)
    wrapper = _open_fence(text, probe, keyword_start)
    for fence in _fences(text, probe, scan_from, end):
        if inner is not None:
            inner = None if fence.closes(inner) else inner
        elif wrapper is not None and fence.closes(wrapper):
            return fence.start, fence.end
        else:
            inner = fence
    if inner is not None and not inner.info and not text[inner.end : end].strip():
        return inner.start, inner.end  # closes a fence opened out of sight
    return end, end


def _next_keyword_line(text: str, probe: str, position: int) -> int:
    """Where the next keyword line after `position` begins (its newline), or the text's end."""
    next_line = _KEYWORD_LINE.search(probe, position + 1)
    return len(text) if next_line is None else next_line.start() - 1


def _fences(text: str, probe: str, start: int, end: int) -> Iterator[_Fence]:
    """The fence lines that start at or after `start` and whose marker ends by `end`.

    Raises _TooManyFencesError past MAX_FENCE_LINES of them.
    """
    position = start
    # Index `i` of `text` is `i + 1` of the probe: the search stops where `text` reaches `end`.
    for _ in range(MAX_FENCE_LINES):
        found = _FENCE_LINE.search(probe, position, end + 1)
        if found is None:
            return
        # The newline's probe index is the text index where the line starts.
        fence = _fence_at(text, found.start(), found.start(1) - 1, found.end(1) - 1)
        if fence is not None:
            yield fence
        position = found.end()
    if _FENCE_LINE.search(probe, position, end + 1) is not None:
        raise _TooManyFencesError


def _leading_fence(text: str, start: int) -> _Fence | None:
    """The fence that opens the section at `start`, past blank space, if one does."""
    found = _LEADING_FENCE.match(text, start)
    if found is None:
        return None
    return _fence_at(text, found.start(1), found.start(1), found.end(1))


def _fence_at(text: str, line_start: int, marker_start: int, marker_end: int) -> _Fence | None:
    """The fence whose marker is `text[marker_start:marker_end]`; None when the rest of its
    line holds a backtick after backticks (```code``` is inline code, not a fence)."""
    line_end = text.find("\n", marker_end)
    line_end = len(text) if line_end == -1 else line_end
    marker = text[marker_start:marker_end]
    info = text[marker_end:line_end].strip()
    if marker[0] == "`" and "`" in info:
        return None
    return _Fence(marker, info, line_start, line_end)


def _open_fence(text: str, probe: str, position: int) -> _Fence | None:
    """The fence opened before `position` and not closed by then, if any."""
    opener: _Fence | None = None
    for fence in _fences(text, probe, 0, position):
        if opener is None:
            opener = fence
        elif fence.closes(opener):
            opener = None
    return opener


def _tool_name(between: str) -> str:
    """The tool named by the text between `Action:` and `Action Input:`: its first line."""
    first_line = between.strip().partition("\n")[0]
    return unquote(first_line.strip().strip("*").strip())


def _clean_input(raw: str) -> str:
    """The input trimmed, without enclosing quotes or, when it is one fenced block, fences."""
    value = raw.strip()
    if value[:3] in ("```", "~~~") and value.endswith(value[0] * 3):
        return _unfence(value)
    return unquote(value)


def _unfence(value: str) -> str:
    """The code in `value` when `value` is exactly one fenced block, else `value` unchanged."""
    first_newline = value.find("\n")
    if first_newline == -1:
        return _unfence_one_line(value)
    opener = _leading_fence(value[:first_newline], 0)
    if opener is None:
        return value
    last_newline = value.rfind("\n")
    closer = value[last_newline + 1 :].strip()
    body = value[first_newline + 1 : last_newline]
    if closer.strip(opener.marker[0]) or len(closer) < len(opener.marker):
        return value
    if _closing_line_in(body, opener.marker):
        return value  # the block closes before the end: more than one block
    if opener.info and (not body.strip() or not _LANGUAGE_TAG.fullmatch(opener.info)):
        # ```{"a": 1} on the fence line is the code itself, not a language tag.
        return value[len(opener.marker) : last_newline].strip()
    return body.strip("\r\n")


def _closing_line_in(body: str, marker: str) -> bool:
    """Whether a line of `body` is a fence that closes one opened by `marker` (```, ~~~~).

    Other backticks in the code (`print("```")`, a ```json line) are code."""
    for line in body.split("\n"):
        bare = line.strip()
        if len(bare) >= len(marker) and not bare.strip(marker[0]):
            return True
    return False


def _unfence_one_line(value: str) -> str:
    """```code``` and ```json {"a": 1}```, without their fences and language tag."""
    inner = value[3:-3]
    if len(value) < 6 or value[0] != "`" or "`" in inner:
        return value
    tag, space, rest = inner.strip().partition(" ")
    if space and rest.strip() and tag.lower() in _ONE_LINE_TAGS:
        return rest.strip()
    return inner.strip()


def unquote(value: str) -> str:
    """`value` without one pair of quotes around it, when that quote does not occur inside."""
    if len(value) < 2:
        return value
    closing = _QUOTE_PAIRS.get(value[0])
    if closing is None or value[-1] != closing:
        return value
    inner = value[1:-1]
    if value[0] in inner or closing in inner:
        return value
    return inner.strip()
