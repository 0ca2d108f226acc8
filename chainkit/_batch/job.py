"""A batch job: an input file of records, an output file of results, and what is shown while
the runs go on. Engines (local, Ray) only run the records it hands out and give back the
results; skipping what is done, writing, counting and reporting happen here, once.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import suppress

from chainkit._batch import records
from chainkit._batch.output import OutputFile
from chainkit._batch.records import BadLine, Record, id_key
from chainkit._batch.runner import Result, bad_line_result
from chainkit._progress import Progress

LABEL = "chainkit batch"


class BatchJob:
    """The job of running `input_path`'s records into `output_path`.

    Opening it resumes the output (repairing a torn last line; with `retry_failed`, dropping
    failed runs) and counts what is left. `pending()` yields the records still to run, once
    each, writing bad lines as errors as it meets them; `finish` writes each result.
    """

    def __init__(
        self,
        input_path: str,
        output_path: str,
        needed: Sequence[str],
        *,
        progress: bool,
        retry_failed: bool = False,
    ) -> None:
        self.input_path = input_path
        self.needed = list(needed)
        self._progress: Progress | None = None
        self.output = OutputFile(output_path)
        try:
            self._done, failed_before = self.output.resume(self.tell, drop_failed=retry_failed)
            total, self.skipped, self.failed_before = self._count(failed_before)
        except BaseException:
            self.output.close()
            raise
        self.finished = self.failed = self.bad = self.duplicates = 0
        self._started = time.monotonic()
        if progress:
            self._progress = Progress(total, LABEL, skipped=self.skipped)

    def _count(self, failed_before: set[str]) -> tuple[int, int, int]:
        """The input's runs (its distinct ids), how many of them the output holds already,
        and how many of those failed."""
        ids = {id_key(item.id) for item in records.read(self.input_path, ())}
        return len(ids), len(ids & self._done), len(ids & failed_before)

    def pending(self) -> Iterator[Record]:
        """The records to run, in input order, read as they are asked for."""
        seen: set[str] = set()
        for item in records.read(self.input_path, self.needed):
            key = id_key(item.id)
            if key in self._done:
                continue
            if key in seen:
                self.duplicates += 1
                self.tell(f"line {item.line}: id {key} was given before; this line is skipped")
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

    def close(self, *, interrupted: bool = False) -> None:
        """Makes the output durable, ends the progress line and sums the job up."""
        self.output.close()
        if self._progress is not None:
            self._progress.close()
            self._progress = None
        if interrupted:
            self.tell(
                f"interrupted after {self.finished} runs; the same command goes on where "
                "this one stopped"
            )
            return
        seconds = time.monotonic() - self._started
        parts = [f"{self.finished} runs done"]
        if self.failed:
            parts[0] += f" ({self.failed} failed)"
        if self.skipped:
            failed_before = f" ({self.failed_before} failed)" if self.failed_before else ""
            parts.append(f"{self.skipped} done before{failed_before}")
        if self.duplicates:
            parts.append(f"{self.duplicates} lines with a repeated id skipped")
        self.tell(f"{', '.join(parts)}, in {seconds:.1f} s; results in {self.output.path}")
