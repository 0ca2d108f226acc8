"""Builds bench/data/bfcl_tools.jsonl.gz from a checkout of ShishirPatil/gorilla (Apache-2.0).

Run once, by hand: `python bench/data/extract_bfcl.py GORILLA_GIT_DIR [COMMIT]` (the extract
in the repository came from commit 6ea57973c7a6097fd7c5915698c54c17c5b1b6c8). It reads the
single-turn categories of the Berkeley Function Calling Leaderboard (v4 data: simple, multiple,
parallel, parallel_multiple, their "live" versions of user-contributed questions, and the Java
and JavaScript ones), whose every question comes with the functions it may call and the calls
it should make, and writes one JSON line per function of the pooled catalog, then one per
question:

    {"tool": NAME, "description": ..., "parameters": {...}}
    {"question": TEXT, "id": BFCL_ID, "gold": [NAME, ...]}

Functions with the same name and text are one tool; where one name has several texts (such as
`get_current_weather`, written anew for many questions), each text keeps its name behind a
prefix of its own (`s3_get_current_weather`), as `MCPTools(prefix=)` namespaces servers'
tools, and a question's gold names the one it was given.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

CATEGORIES = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
DATA = "berkeley-function-call-leaderboard/bfcl_eval/data"
OUTPUT = Path(__file__).resolve().parent / "bfcl_tools.jsonl.gz"


def lines(git_dir: str, commit: str, path: str) -> list[dict[str, Any]]:
    text = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def question_text(turns: list[list[dict[str, str]]]) -> str:
    return "\n".join(m["content"] for turn in turns for m in turn if m["role"] == "user")


def main() -> None:
    git_dir, commit = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "HEAD"
    texts: dict[str, list[str]] = {}  # name -> the distinct texts (JSON) it has
    definitions: dict[str, dict[str, Any]] = {}  # text -> the function
    questions = []
    for category in CATEGORIES:
        asked = lines(git_dir, commit, f"{DATA}/BFCL_v4_{category}.json")
        answers = {
            a["id"]: a
            for a in lines(git_dir, commit, f"{DATA}/possible_answer/BFCL_v4_{category}.json")
        }
        for question in asked:
            given = {}
            for function in question["function"]:
                text = json.dumps(function, sort_keys=True)
                definitions[text] = function
                known = texts.setdefault(function["name"], [])
                if text not in known:
                    known.append(text)
                given[function["name"]] = text
            gold = [name for call in answers[question["id"]]["ground_truth"] for name in call]
            gold_texts = list(dict.fromkeys(given[name] for name in gold))
            questions.append((question["id"], question_text(question["question"]), gold_texts))
    names = {}
    for name, variants in texts.items():
        for number, text in enumerate(variants):
            names[text] = name if len(variants) == 1 else f"s{number}_{name}"
    with gzip.open(OUTPUT, "wt", encoding="utf-8", compresslevel=9) as out:
        for text, function in definitions.items():
            row = {
                "tool": names[text],
                "description": function.get("description", ""),
                "parameters": function.get("parameters", {}),
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        for identifier, text, gold_texts in questions:
            row = {"question": text, "id": identifier, "gold": [names[t] for t in gold_texts]}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
