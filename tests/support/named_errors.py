"""The check that every error chainkit raises is a `chainkit.ChainkitError`.

`every_error_is_named` (autouse, through conftest.py) wraps `pytest.raises` and
`chains.batch`/`abatch`: an `Exception` a test catches, or gets back from a batch with
`return_exceptions=True`, whose innermost traceback frame is in the chainkit package must be a
ChainkitError, else the test fails naming the exception, the file and the line. Errors raised
by a test's own code (a tool, a chain, a model written in the test) end in a test file and pass
through unchecked; bare BaseExceptions (KeyboardInterrupt, CancelledError) are not errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.raises import RaisesExc

import chainkit
from chainkit import chains

CHAINKIT_DIR = Path(chainkit.__file__).resolve().parent


def unnamed_chainkit_error(error: BaseException) -> str | None:
    """What is wrong with `error`, if chainkit raised it without deriving it from
    ChainkitError; None when chainkit did not raise it or it is one."""
    if not isinstance(error, Exception) or isinstance(error, chainkit.ChainkitError):
        return None
    innermost = error.__traceback__
    if innermost is None:
        return None
    while innermost.tb_next is not None:
        innermost = innermost.tb_next
    file = Path(innermost.tb_frame.f_code.co_filename).resolve()
    if not file.is_relative_to(CHAINKIT_DIR):
        return None
    return (
        f"chainkit raised {type(error).__module__}.{type(error).__qualname__}({error}) at "
        f"{file}:{innermost.tb_lineno}, which is not a chainkit.ChainkitError"
    )


def _check_results(results: list[Any]) -> list[Any]:
    for result in results:
        problem = unnamed_chainkit_error(result) if isinstance(result, BaseException) else None
        if problem is not None:
            pytest.fail(f"chains.batch returned an error: {problem}")
    return results


@pytest.fixture(autouse=True)
def every_error_is_named(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    catch = RaisesExc.__exit__
    batch, abatch = chains.batch, chains.abatch

    def checked_catch(self: RaisesExc[BaseException], *exc_info: Any) -> bool:
        __tracebackhide__ = True
        caught = catch(self, *exc_info)
        problem = unnamed_chainkit_error(exc_info[1]) if caught else None
        if problem is not None:
            pytest.fail(problem)
        return caught

    def checked_batch(*args: Any, **kwargs: Any) -> list[Any]:
        return _check_results(batch(*args, **kwargs))

    async def checked_abatch(*args: Any, **kwargs: Any) -> list[Any]:
        return _check_results(await abatch(*args, **kwargs))

    monkeypatch.setattr(RaisesExc, "__exit__", checked_catch)
    monkeypatch.setattr(chains, "batch", checked_batch)
    monkeypatch.setattr(chains, "abatch", checked_abatch)
    yield
