"""The functions users call chains through: call, run, predict, apply, batch, and async twins.

`call` wraps a chain's own `call` with what every chain needs: memory in, key checks, chain
callbacks, memory out. The sync and async twins share every step but the call itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from chainkit._progress import Progress
from chainkit._stop import call_guarded
from chainkit.callbacks import CombiningHandler
from chainkit.chains.chain import Chain
from chainkit.chains.errors import (
    MissingInputKeysError,
    MissingOutputKeysError,
    OutputNotStringError,
    SingleKeyError,
)
from chainkit.chains.options import check_options, with_callbacks


def _prepare(chain: Chain, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs with the memory's variables added; raises, before any work, for inputs the
    chain cannot take or a memory that could not save the exchange."""
    if not isinstance(inputs, Mapping):
        raise TypeError(
            f"{chain.name} needs its inputs as a dict of key to value, got "
            f"{type(inputs).__name__}; use chains.run for a single input"
        )
    full = dict(inputs)
    memory = chain.memory
    if memory is not None:
        # Optional on Memory: whether the outputs will say what to save, known before the run.
        check_outputs = getattr(memory, "check_output_keys", None)
        if check_outputs is not None:
            check_outputs(chain.output_keys)
        for key, value in memory.load_memory_variables(full).items():
            full.setdefault(key, value)
    missing = [key for key in chain.input_keys if key not in full]
    if missing:
        raise MissingInputKeysError(chain.name, missing, list(full))
    return full


def _start(
    chain: Chain, inputs: Mapping[str, Any], options: dict[str, Any]
) -> tuple[CombiningHandler | None, dict[str, Any], dict[str, Any]]:
    """The call's handler, options and full inputs, every check made before any work."""
    callbacks, options = with_callbacks(options, chain.callbacks)
    check_options(options)
    return callbacks, options, _prepare(chain, inputs)


def _finish(chain: Chain, full: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
    missing = [key for key in chain.output_keys if key not in outputs]
    if missing:
        raise MissingOutputKeysError(chain.name, missing, list(outputs))
    if chain.memory is not None:
        chain.memory.save_context(full, outputs)
    return outputs


def call(chain: Chain, inputs: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    """Runs `chain` on `inputs` with memory, key checks and callbacks; returns its outputs.

    A `callbacks` option (a Handler, or a list of them) hears this call's events, and those of
    everything the chain calls, besides the chain's own `callbacks_handler`. Inputs, options
    and the memory are checked before the chain starts; a chain start is always followed by
    exactly one chain end or chain error.
    """
    callbacks, options, full = _start(chain, inputs, options)
    try:
        if callbacks is not None:
            callbacks.handle_chain_start(chain.name, full)
        outputs = call_guarded(f"chain {chain.name}", chain.call, full, **options)
        outputs = _finish(chain, full, outputs)
    except BaseException as error:  # an interrupted run still closes its trace
        if callbacks is not None:
            callbacks.handle_chain_error(chain.name, error)
        raise
    if callbacks is not None:
        callbacks.handle_chain_end(chain.name, outputs)
    return outputs


async def acall(chain: Chain, inputs: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    """Async twin of `call`."""
    callbacks, options, full = _start(chain, inputs, options)
    try:
        if callbacks is not None:
            callbacks.handle_chain_start(chain.name, full)
        outputs = _finish(chain, full, await chain.acall(full, **options))
    except BaseException as error:
        if callbacks is not None:
            callbacks.handle_chain_error(chain.name, error)
        raise
    if callbacks is not None:
        callbacks.handle_chain_end(chain.name, outputs)
    return outputs


def _single_input(chain: Chain, value: Any) -> dict[str, Any]:
    memory_keys = set(chain.memory.memory_variables) if chain.memory is not None else set()
    keys = [key for key in chain.input_keys if key not in memory_keys]
    if len(keys) != 1:
        raise SingleKeyError("run", chain.name, "input", keys)
    return {keys[0]: value}


def _single_output(function: str, chain: Chain) -> str:
    """The one output key `run` and `predict` return; checked before the chain runs."""
    keys = chain.output_keys
    if len(keys) != 1:
        raise SingleKeyError(function, chain.name, "output", keys)
    return keys[0]


def _string(function: str, chain: Chain, key: str, outputs: Mapping[str, Any]) -> str:
    value = outputs[key]
    if not isinstance(value, str):
        raise OutputNotStringError(function, chain.name, key, value)
    return value


def run(chain: Chain, input: Any, **options: Any) -> str:
    """Runs a chain that takes one input and returns one string."""
    inputs, key = _single_input(chain, input), _single_output("run", chain)
    return _string("run", chain, key, call(chain, inputs, **options))


async def arun(chain: Chain, input: Any, **options: Any) -> str:
    """Async twin of `run`."""
    inputs, key = _single_input(chain, input), _single_output("run", chain)
    return _string("run", chain, key, await acall(chain, inputs, **options))


def predict(chain: Chain, inputs: Mapping[str, Any], **options: Any) -> str:
    """Runs a chain that returns one string, with several inputs."""
    key = _single_output("predict", chain)
    return _string("predict", chain, key, call(chain, inputs, **options))


async def apredict(chain: Chain, inputs: Mapping[str, Any], **options: Any) -> str:
    """Async twin of `predict`."""
    key = _single_output("predict", chain)
    return _string("predict", chain, key, await acall(chain, inputs, **options))


def _batch_inputs(
    function: str,
    chain: Chain,
    inputs: Iterable[Mapping[str, Any]],
    max_workers: int,
    options: dict[str, Any],
) -> list[Mapping[str, Any]]:
    """The inputs as a list, every one of them and the options checked before any call starts:
    a bad item found halfway would leave the calls before it done and those after it not."""
    if not isinstance(max_workers, int) or isinstance(max_workers, bool):
        raise TypeError(f"max_workers must be an int, got {type(max_workers).__name__}")
    if max_workers < 1:
        raise ValueError(f"max_workers must be at least 1, got {max_workers}")
    if isinstance(inputs, Mapping | str | bytes):
        raise TypeError(
            f"{function}() takes a list of input dicts, got one {type(inputs).__name__}; "
            "use chains.call (or chains.run) for a single input"
        )
    try:
        items = list(inputs)
    except TypeError:
        raise TypeError(
            f"{function}() takes a list (or any iterable) of input dicts, got "
            f"{type(inputs).__name__}"
        ) from None
    check_options(options)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TypeError(
                f"{function}() takes a list of input dicts; item {index} is "
                f"{type(item).__name__}: {item!r:.80}"
            )
        try:
            _prepare(chain, item)
        except Exception as error:
            error.add_note(f"(item {index} of the {len(items)} given to chains.{function})")
            raise
    return items


def batch(
    chain: Chain,
    inputs: Iterable[Mapping[str, Any]],
    *,
    max_workers: int = 5,
    return_exceptions: bool = False,
    progress: bool = False,
    **options: Any,
) -> list[Any]:
    """Calls `chain` on each inputs in threads; results keep the order of `inputs`.

    `inputs` may be any iterable (a generator is read whole first). Every item, and the
    options, are checked before the first call starts. With `return_exceptions=True` a failed
    call yields its exception in its place; otherwise the first failure, in input order, is
    raised once the running calls have ended. `progress=True` shows a progress line on
    stderr: done, failed and total, the rate and the time left.
    """
    items = _batch_inputs("batch", chain, inputs, max_workers, options)
    shown = Progress(len(items), "chains.batch") if progress else None

    def count(future: Future[dict[str, Any]]) -> None:
        if shown is not None and not future.cancelled():
            shown.add(failed=future.exception() is not None)

    try:
        with ThreadPoolExecutor(max_workers=min(max_workers, max(len(items), 1))) as pool:
            futures = [pool.submit(call, chain, item, **options) for item in items]
            for future in futures:
                future.add_done_callback(count)
            results: list[Any] = []
            for future in futures:
                error = future.exception()
                if error is None:
                    results.append(future.result())
                elif return_exceptions:
                    results.append(error)
                else:
                    for pending in futures:
                        pending.cancel()
                    raise error
    finally:
        if shown is not None:
            shown.close()
    return results


async def abatch(
    chain: Chain,
    inputs: Iterable[Mapping[str, Any]],
    *,
    max_workers: int = 5,
    return_exceptions: bool = False,
    progress: bool = False,
    **options: Any,
) -> list[Any]:
    """Async twin of `batch`: at most `max_workers` calls run at once. Without
    `return_exceptions`, the first failure cancels the calls not yet finished, and the error
    raised is the first in input order among those that failed."""
    import asyncio  # loaded already by the running event loop, not at import

    items = _batch_inputs("abatch", chain, inputs, max_workers, options)
    limit = asyncio.Semaphore(max_workers)
    shown = Progress(len(items), "chains.abatch") if progress else None

    async def one(item: Mapping[str, Any]) -> dict[str, Any]:
        async with limit:
            if shown is None:
                return await acall(chain, item, **options)
            try:
                outputs = await acall(chain, item, **options)
            except Exception:
                shown.add(failed=True)
                raise
            shown.add()
            return outputs

    tasks = [asyncio.ensure_future(one(item)) for item in items]
    try:
        return await _gathered(tasks, return_exceptions)
    finally:
        if shown is not None:
            shown.close()


async def _gathered(tasks: list[Any], return_exceptions: bool) -> list[Any]:
    """The results of `tasks` in order; without `return_exceptions`, the first failure
    cancels the tasks not yet finished, and the first error in order is raised."""
    import asyncio  # loaded already by the running event loop, not at import

    if return_exceptions or not tasks:
        return list(await asyncio.gather(*tasks, return_exceptions=True))
    cancelled_here = set()
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
                cancelled_here.add(task)
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for task, result in zip(tasks, results, strict=True):
        if isinstance(result, BaseException) and task not in cancelled_here:
            raise result
    return results


def apply(
    chain: Chain, inputs: Iterable[Mapping[str, Any]], *, max_workers: int = 5, **options: Any
) -> list[dict[str, Any]]:
    """Calls `chain` on each inputs concurrently; keeps order and raises the first error."""
    return batch(chain, inputs, max_workers=max_workers, **options)


async def aapply(
    chain: Chain, inputs: Iterable[Mapping[str, Any]], *, max_workers: int = 5, **options: Any
) -> list[dict[str, Any]]:
    """Async twin of `apply`."""
    return await abatch(chain, inputs, max_workers=max_workers, **options)
