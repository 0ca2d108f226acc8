"""Times PromptTemplate.format on a ~1.5 KB agent-style template with 4 variables.

Run from the repo root: `PYTHONPATH=. python bench/bench_prompt_format.py`. Prints µs per format.
"""

from __future__ import annotations

import argparse
import timeit

from chainkit.prompts import PromptTemplate

_FILLER = (
    "Answer the question as well as you can. Think step by step, use a tool when it helps, "
    "and write {{braces}} literally when you need them.\n"
)
TEMPLATE = (
    "You are a careful assistant. Today is {date}.\n"
    + _FILLER * 6
    + "You have these tools:\n{tools}\n"
    + _FILLER * 4
    + "Question: {input}\n"
    + _FILLER
    + "Thought:{agent_scratchpad}"
)
VALUES = {
    "date": "2025-01-31",
    "tools": "search: look things up\ncalculator: do arithmetic",
    "input": "What is the population of France divided by 3?",
    "agent_scratchpad": " I should search.\nAction: search\nObservation: 68 million\n",
}


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    prompt = PromptTemplate.from_template(TEMPLATE)
    rendered = prompt.format(**VALUES)
    number = 200_000
    best = min(timeit.repeat(lambda: prompt.format(**VALUES), number=number, repeat=5))
    print(
        f"template {len(TEMPLATE)} chars, {len(prompt.input_variables)} variables, "
        f"output {len(rendered)} chars: {best / number * 1e6:.2f} µs per format"
    )


if __name__ == "__main__":
    main()
