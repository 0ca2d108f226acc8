"""A real small model as a MRKL agent, with and without a constrained reply format.

The model is Gemma 3 270M (base, Q4_K_M) behind llama.cpp's OpenAI-compatible server
(`llama-cpp-python[server]`). The same 24 runs of `agents.OneShotAgent` with chainkit's
built-in tools (12 arithmetic questions for the calculator, 6 for a random number, 6 for the
time) run with decoding free and with `constrain="grammar"`, for the default agent and for
one set up for a small base model (below). For each it reports the runs that finished, the
right answers (checked here: the exact result of the arithmetic, a number in the range asked
for, a time of day), the replies that did not parse, model calls and seconds per run. Then
structured output: the share of `llms.generate_object` calls (one reply each, no second try)
that give a valid object of a small dataclass, with the schema in the prompt alone and with the
strategy chainkit chooses (on this server, a tool call constrained to the schema).

The set-up for a small base model: the MRKL format instructions end with one worked example
per tool, and a `tools.ToolRetriever` offers the calculator and the tool whose description
shares a word with the question (so the grammar lets the model choose among the tools
offered). The server passes the prompt to the model as it is (its chat format "raw": see
tests/support/llama_server.py); with llama.cpp's fallback `[INST]` template this model starts
a new document instead of going on with the prompt.

The server is started here (from CHAINKIT_LLAMA_VENV, default `.llama`, with the model
CHAINKIT_LLAMA_MODEL, default `gemma.gguf` in it: `.ci/run` makes both), or given with
`--base-url`. Run from the repository root:

    python bench/bench_local_model.py [--base-url http://127.0.0.1:8011/v1]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit import agents, callbacks, chains, llms, tools
from chainkit.agents import mrkl_prompt
from chainkit.agents.errors import PARSE_ERROR_TOOL
from chainkit.llms.output_strategies import StrategyName
from chainkit.schema import AgentStep, Message
from chainkit.tools.builtin import Calculator, CurrentTime, RandomNumber
from tests.support.llama_server import LlamaServer, missing

ARITHMETIC = (
    ("What is 17 * 23?", 391),
    ("What is 144 / 12?", 12),
    ("What is 25 + 38?", 63),
    ("What is 1000 - 357?", 643),
    ("What is 12 * 12?", 144),
    ("What is 81 / 9?", 9),
    ("What is 256 + 512?", 768),
    ("What is 99 * 3?", 297),
    ("What is 7 * 8 + 5?", 61),
    ("What is 2 ** 10?", 1024),
    ("What is 45 - 19?", 26),
    ("What is 13 * 17?", 221),
)
RANDOM = (
    ("Give me a random number between 1 and 100.", (1, 100)),
    ("Pick a random number from 1 to 6.", (1, 6)),
    ("Roll a random number between 1 and 20.", (1, 20)),
    ("I need a random number between 10 and 50.", (10, 50)),
    ("Choose a random number from 1 to 1000.", (1, 1000)),
    ("Give me a random integer between 5 and 15.", (5, 15)),
)
TIME = (
    "What time is it now?",
    "What is the current time?",
    "Tell me the time right now.",
    "What time is it in UTC?",
    "Can you tell me the current time?",
    "What is the time at the moment?",
)
EXAMPLES = """

Examples:

Question: What is 12 * 7?
Thought: I should use the calculator.
Action: calculator
Action Input: 12 * 7
Observation: 84
Thought: I now know the final answer
Final Answer: 84

Question: Give me a random number between 1 and 10.
Thought: I should use random_number.
Action: random_number
Action Input: 1-10
Observation: 7
Thought: I now know the final answer
Final Answer: 7

Question: What is the date today?
Thought: I should use current_time.
Action: current_time
Action Input: UTC
Observation: 2024-05-01T09:30:00+00:00 Wednesday (UTC)
Thought: I now know the final answer
Final Answer: 2024-05-01T09:30:00+00:00 Wednesday (UTC)"""
"""One worked example per tool, after the format instructions: a base model copies a pattern
it has seen far better than it follows a description of one."""
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_TIME_OF_DAY = re.compile(r"\b\d{1,2}:\d{2}\b")

OBJECT_PROMPTS = (
    "Paris",
    "Tokyo",
    "Cairo",
    "Lima",
    "Berlin",
    "Toronto",
    "Sydney",
    "Madrid",
    "Nairobi",
    "Seoul",
    "Rome",
    "Oslo",
)


@dataclass(slots=True)
class Question:
    text: str
    kind: str
    expected: Any = None

    def right(self, answer: str) -> bool:
        numbers = [float(n) for n in _NUMBER.findall(answer)]
        if self.kind == "arithmetic":
            return float(self.expected) in numbers
        if self.kind == "random":
            low, high = self.expected
            return any(low <= n <= high for n in numbers)
        return _TIME_OF_DAY.search(answer) is not None


def questions() -> list[Question]:
    return [
        *(Question(text, "arithmetic", value) for text, value in ARITHMETIC),
        *(Question(text, "random", bounds) for text, bounds in RANDOM),
        *(Question(text, "time") for text in TIME),
    ]


class CallCounter(callbacks.Handler):
    """Counts the model calls of a run."""

    def __init__(self) -> None:
        self.calls = 0

    def handle_llm_start(self, messages: Sequence[Message], options: Mapping[str, Any]) -> None:
        self.calls += 1


@dataclass(slots=True)
class Tally:
    runs: int = 0
    finished: int = 0
    right: int = 0
    unparsed: int = 0
    calls: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


def build_agent(llm: llms.Model, coached: bool, constrain: str | None) -> agents.OneShotAgent:
    """The agent of a run: the default OneShotAgent, or (`coached`) one set up for a small
    base model, with worked examples and a tool retriever."""
    offered = [Calculator(), RandomNumber(), CurrentTime()]
    if not coached:
        return agents.OneShotAgent(llm, offered, constrain=constrain)
    return agents.OneShotAgent(
        llm,
        offered,
        format_instructions=mrkl_prompt.FORMAT_INSTRUCTIONS + EXAMPLES,
        tool_retriever=tools.ToolRetriever(offered, top_k=1, always_include=["calculator"]),
        constrain=constrain,
    )


def run_one(llm: llms.Model, question: Question, agent: agents.OneShotAgent, tally: Tally) -> None:
    counter = CallCounter()
    executor = agents.Executor(
        agent,
        max_iterations=4,
        early_stopping_method="generate",
        error_handler=agents.ParserErrorHandler(),
        return_intermediate_steps=True,
        callbacks=counter,
    )
    started = time.perf_counter()
    steps: list[AgentStep] = []
    try:
        outputs = chains.call(executor, {"input": question.text})
        steps = outputs["intermediate_steps"]
        answer = outputs["output"]
        tally.finished += 1
        if question.right(answer):
            tally.right += 1
        else:
            tally.failures.append(f"{question.text!r}: answered {answer!r}")
    except agents.NotFinishedError as error:
        steps = error.steps
        tally.failures.append(f"{question.text!r}: {error}")
    except agents.OutputParserError as error:
        tally.unparsed += 1
        tally.failures.append(f"{question.text!r}: {error}")
    tally.seconds += time.perf_counter() - started
    tally.runs += 1
    tally.calls += counter.calls
    tally.unparsed += sum(step.action.tool == PARSE_ERROR_TOOL for step in steps)


@dataclass
class Place:
    city: str
    country: str


def objects(llm: llms.Model, strategy: StrategyName | None) -> int:
    """How many of the prompts get a valid Place from `llms.generate_object` in one reply (no
    second try): `strategy` "prompted" asks with the schema in the prompt alone; None lets
    chainkit choose (on llama-cpp-python's server json_schema is refused, and the forced tool
    call it goes on with is constrained to the schema)."""
    valid = 0
    for city in OBJECT_PROMPTS:
        prompt = f'Reply with a JSON object with the keys "city" and "country" for the city {city}.'
        try:
            place = llms.generate_object(
                llm, prompt, Place, strategy=strategy, max_retries=0, max_tokens=80
            )
        except llms.OutputValidationError:
            continue
        valid += bool(place.city.strip() and place.country.strip())
    return valid


def report(tallies: Mapping[str, Tally], valid: Mapping[str, int]) -> str:
    lines = [
        "| agent, decoding | runs finished | right answers | replies not parsed "
        "| model calls / run | s / run |",
        "|---|---|---|---|---|---|",
    ]
    for name, t in tallies.items():
        lines.append(
            f"| {name} | {t.finished}/{t.runs} | {t.right}/{t.runs} | {t.unparsed}/{t.calls} "
            f"| {t.calls / t.runs:.1f} | {t.seconds / t.runs:.1f} |"
        )
    total = len(OBJECT_PROMPTS)
    lines += ["", "| structured output | valid objects |", "|---|---|"]
    lines += [f"| {name} | {count}/{total} |" for name, count in valid.items()]
    return "\n".join(lines)


def measure(base_url: str, verbose: bool) -> str:
    llm = llms.OpenAI(
        "gemma", base_url=base_url, timeout=120, max_attempts=2, temperature=0, max_tokens=200
    )
    tallies: dict[str, Tally] = {}
    for coached in (False, True):
        for constrain in (None, "grammar"):
            name = f"{'examples + retriever' if coached else 'default agent'}, " + (
                "free" if constrain is None else f'constrain="{constrain}"'
            )
            tally = tallies[name] = Tally()
            for question in questions():
                run_one(llm, question, build_agent(llm, coached, constrain), tally)
            if verbose:
                print(f"{name}:", *tally.failures, sep="\n  ", file=sys.stderr, flush=True)
    valid = {
        'generate_object, strategy="prompted" (the schema in the prompt)': objects(llm, "prompted"),
        "generate_object, chosen by chainkit (a constrained tool call here)": objects(llm, None),
    }
    return report(tallies, valid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--base-url", help="a running server; else one is started here")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print the runs that went wrong"
    )
    arguments = parser.parse_args()
    if arguments.base_url:
        print(measure(arguments.base_url, arguments.verbose))
        return
    why = missing()
    if why is not None:
        sys.exit(f"cannot start llama.cpp's server: {why}")
    with (
        tempfile.TemporaryDirectory() as directory,
        LlamaServer(Path(directory) / "server.log") as server,
    ):
        print(measure(server.base_url, arguments.verbose))


if __name__ == "__main__":
    main()
