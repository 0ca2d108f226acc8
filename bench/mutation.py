"""Mutation testing of one module against its own tests, with mutmut 3. Run from the checkout:

    python bench/mutation.py chainkit/_mrkl.py \\
        tests/agents/test_mrkl_parser.py tests/agents/test_parser_hostile.py

mutmut copies `chainkit/` and `tests/` into `mutants/` (removed first, so every run starts
afresh), mutates the one module there, runs the given tests against each mutant in up to
`--max-children` forked workers, and this prints how many mutants were killed, survived and
timed out, the kill rate, and the names of the survivors (`mutmut show NAME` prints one's diff);
`--only NAME...` runs just those mutants (e.g. the survivors, after adding tests).
The tests import the mutated copy: mutmut puts `mutants/` first on sys.path and takes the
checkout off it, and the editable install's finder comes after sys.path; so chainkit must not
be imported here before mutmut runs.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
from collections import Counter
from pathlib import Path

from mutmut import configuration
from mutmut.__main__ import cli
from mutmut.stats import status_by_exit_code

_MUTANTS = Path("mutants")


def run_mutmut(module: str, tests: list[str], max_children: int, names: list[str]) -> None:
    """mutmut's `run` with the [tool.mutmut] settings of pyproject.toml narrowed to `module`."""
    settings = configuration.config()
    settings.only_mutate = [module]
    settings.pytest_add_cli_args_test_selection = tests
    try:
        cli(["run", "--max-children", str(max_children), *names], standalone_mode=False)
    except SystemExit as stopped:
        if stopped.code:
            raise


def statuses(module: str) -> dict[str, str]:
    """Each mutant's name and what became of it, from mutmut's record of `module`."""
    record = json.loads((_MUTANTS / f"{module}.meta").read_text())
    return {name: status_by_exit_code[code] for name, code in record["exit_code_by_key"].items()}


def report(outcome: dict[str, str]) -> str:
    counts = Counter(outcome.values())
    total = len(outcome)
    caught = counts["killed"] + counts["timeout"]
    lines = [
        f"killed {counts['killed']}  survived {counts['survived']}  timeout {counts['timeout']}"
        f"  no tests {counts['no tests']}  other {total - sum(counts[s] for s in _KNOWN)}"
        f"  total {total}",
        f"kill rate {caught / total:.1%}" if total else "kill rate: no mutants",
    ]
    survivors = sorted(name for name, status in outcome.items() if status not in _CAUGHT)
    if survivors:
        lines.append("not killed:")
        lines.extend(f"  {name} ({outcome[name]})" for name in survivors)
    return "\n".join(lines)


_CAUGHT = {"killed", "timeout"}
_KNOWN = ("killed", "survived", "timeout", "no tests")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", help="the module to mutate, e.g. chainkit/agents/executor.py")
    parser.add_argument("tests", nargs="+", help="the test files (or node ids) that pin it")
    parser.add_argument("--max-children", type=int, default=2, help="parallel workers")
    parser.add_argument(
        "--only",
        nargs="+",
        default=[],
        metavar="NAME",
        help="run only these mutants (names or patterns, such as the survivors of a run)",
    )
    args = parser.parse_args()
    if not Path(args.module).is_file() or not args.module.startswith("chainkit/"):
        raise SystemExit(f"{args.module!r} is not a module under chainkit/ (run from the checkout)")
    shutil.rmtree(_MUTANTS, ignore_errors=True)
    run_mutmut(args.module, args.tests, args.max_children, args.only)
    outcome = statuses(args.module)
    if args.only:
        outcome = {
            name: status
            for name, status in outcome.items()
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in args.only)
        }
    print(report(outcome))


if __name__ == "__main__":
    main()
