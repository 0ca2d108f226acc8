"""A batch job: an input file of records, an output file of results, and what is shown while
the runs go on. Engines (local, Ray) only run the records it hands out and give back the
results; skipping what is done, writing, counting and reporting happen here, once.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import suppress

from chainkit._batch import records
from chainkit._batch.output import OutputFile
from chainkit._batch.records import BadLine, Record, key_of
from chainkit._batch.runner import Result, add_usage, bad_line_result
from chainkit._progress import Progress
from chainkit._text import counted
from chainkit.callbacks import Prices, UsageTotals

LABEL = "chainkit batch"


class BatchJob:
    """The job of running `input_path`'s records into `output_path`.

    Opening it resumes the output (repairing a torn last line; with `retry_failed`, dropping
    failed runs). `pending()` yields the records still to run, once each, counting those done
    before and writing bad lines as errors as it meets them; `finish` writes each result.
    The input is read once, as the runs go: what is skipped is neither held nor parsed twice.
    `usage` sums the token usage of the runs this job made, by model, costed at `prices`.
    """

    def __init__(
        self,
        input_path: str,
        output_path: str,
        needed: Sequence[str],
        *,
        progress: bool,
        retry_failed: bool = False,
        prices: Prices | None = None,
    ) -> None:
        self.input_path = input_path
        self.usage = UsageTotals(prices)
        self.needed = list(needed)
        self._progress: Progress | None = None
        self.output = OutputFile(output_path)
        try:
            # Each run the output holds, with whether it failed; None once met in the input.
            self._done = self.output.resume(self.tell, drop_failed=retry_failed)
            total = _lines_in(input_path) if progress else 0
        except BaseException:
            self.output.close()
            raise
        self.finished = self.failed = self.bad = self.duplicates = 0
        self.skipped = self.failed_before = 0
        self._started = time.monotonic()
        if progress:
            self._progress = Progress(total, LABEL)

    @property
    def identity(self) -> str:
        """The job's identity, part of its runs' ids in a checkpoint store: the job is its
        output file (running it again goes on with it), named by its real path."""
        import hashlib

        path = os.path.realpath(self.output.path)
        return hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    def pending(self) -> Iterator[Record]:
        """The records to run, in input order, read as they are asked for."""
        seen: set[str] = set()
        for item in records.read(self.input_path, self.needed):
            key = key_of(item)
            failed_before = self._done.get(key, False)
            if failed_before is None or key in seen:
                self._repeated(item, key)
                continue
            if key in self._done:
                self._done[key] = None  # met: `seen` need not hold the keys done before
                self._skip(failed=failed_before)
                continue
            seen.add(key)
            if isinstance(item, BadLine):
                self.bad += 1
                self.tell(f"line {item.line} of {self.input_path}: {item.problem}")
                self.finish(bad_line_result(item))
                continue
            yield item

    def finish(self, result: Result) -> None:
        """Writes a run's result line and counts it."""
        self.output.append(result)
        add_usage(self.usage, result)
        failed = "error" in result
        self.finished += 1
        self.failed += failed
        if self._progress is not None:
            self._progress.add(failed=failed)

    def tell(self, text: str) -> None:
        """A line for the user on stderr, above the progress line."""
        line = f"{LABEL}: {text}"
        if self._progress is not None:
            self._progress.note(line)
            return
        with suppress(OSError, ValueError, AttributeError):
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def close(self, *, stopped: str = "", summary: bool = True) -> None:
        """Makes the output durable, ends the progress line and sums the job up: as `stopped`
        (e.g. "interrupted") early when it says why, not at all without `summary`.
        OutputWriteError if the last lines cannot be made durable."""
        try:
            self.output.close()
        finally:
            if self._progress is not None:
                self._progress.close()
                self._progress = None
        if not summary:
            return
        if stopped:
            self.tell(
                f"{stopped} after {counted(self.finished, 'run')}; the same command goes on "
                "where this one stopped"
            )
            return
        seconds = time.monotonic() - self._started
        parts = [f"{counted(self.finished, 'run')} done"]
        if self.failed:
            parts[0] += f" ({self.failed} failed)"
        if self.skipped:
            failed_before = f" ({self.failed_before} failed)" if self.failed_before else ""
            parts.append(f"{self.skipped} done before{failed_before}")
        if self.duplicates:
            parts.append(f"{counted(self.duplicates, 'line')} with a repeated id skipped")
        self.tell(f"{', '.join(parts)}, in {seconds:.1f} s; results in {self.output.path}")
        if self.usage.models:
            for line in self.usage.summary().splitlines():
                self.tell(f"usage: {line}")

    def _repeated(self, item: Record | BadLine, key: str) -> None:
        self.duplicates += 1
        if self._progress is not None:
            self._progress.drop()
        self.tell(f"line {item.line}: id {key} was given before; this line is skipped")

    def _skip(self, *, failed: bool) -> None:
        self.skipped += 1
        self.failed_before += failed
        if self._progress is not None:
            self._progress.skip()


def _lines_in(path: str) -> int:
    """How many lines of the file at `path` are not blank: the runs it asks for, less the
    repeated ids found as they are read."""
    with open(path, "rb") as lines:
        return sum(1 for raw in lines if raw.strip())
