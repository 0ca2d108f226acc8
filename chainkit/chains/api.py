"""The functions users call chains through: call, run, predict, apply, batch, and async twins.

`call` wraps a chain's own `call` with what every chain needs: memory in, key checks, chain
callbacks, memory out. The sync and async twins share every step but the call itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from chainkit._stop import call_guarded
from chainkit.callbacks import CombiningHandler
from chainkit.chains.chain import Chain
from chainkit.chains.errors import (
    MissingInputKeysError,
    MissingOutputKeysError,
    OutputNotStringError,
    SingleKeyError,
)
from chainkit.chains.options import with_callbacks


def _prepare(
    chain: Chain, inputs: Mapping[str, Any], callbacks: CombiningHandler | None
) -> dict[str, Any]:
    if not isinstance(inputs, Mapping):
        raise TypeError(
            f"{chain.name} needs its inputs as a dict of key to value, got "
            f"{type(inputs).__name__}; use chains.run for a single input"
        )
    full = dict(inputs)
    if chain.memory is not None:
        for key, value in chain.memory.load_memory_variables(full).items():
            full.setdefault(key, value)
    missing = [key for key in chain.input_keys if key not in full]
    if missing:
        raise MissingInputKeysError(chain.name, missing, list(full))
    if callbacks is not None:
        callbacks.handle_chain_start(chain.name, full)
    return full


def _finish(
    chain: Chain,
    full: dict[str, Any],
    outputs: dict[str, Any],
    callbacks: CombiningHandler | None,
) -> dict[str, Any]:
    missing = [key for key in chain.output_keys if key not in outputs]
    if missing:
        raise MissingOutputKeysError(chain.name, missing, list(outputs))
    if chain.memory is not None:
        chain.memory.save_context(full, outputs)
    if callbacks is not None:
        callbacks.handle_chain_end(chain.name, outputs)
    return outputs


def call(chain: Chain, inputs: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    """Runs `chain` on `inputs` with memory, key checks and callbacks; returns its outputs.

    A `callbacks` option (a Handler) hears this call's events, and those of everything the
    chain calls, besides the chain's own `callbacks_handler`.
    """
    callbacks, options = with_callbacks(options, chain.callbacks)
    full = _prepare(chain, inputs, callbacks)
    try:
        outputs = call_guarded(f"chain {chain.name}", chain.call, full, **options)
        return _finish(chain, full, outputs, callbacks)
    except BaseException as error:  # an interrupted run still closes its trace
        if callbacks is not None:
            callbacks.handle_chain_error(chain.name, error)
        raise


async def acall(chain: Chain, inputs: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    """Async twin of `call`."""
    callbacks, options = with_callbacks(options, chain.callbacks)
    full = _prepare(chain, inputs, callbacks)
    try:
        return _finish(chain, full, await chain.acall(full, **options), callbacks)
    except BaseException as error:
        if callbacks is not None:
            callbacks.handle_chain_error(chain.name, error)
        raise


def _single_input(chain: Chain, value: Any) -> dict[str, Any]:
    memory_keys = set(chain.memory.memory_variables) if chain.memory is not None else set()
    keys = [key for key in chain.input_keys if key not in memory_keys]
    if len(keys) != 1:
        raise SingleKeyError("run", chain.name, "input", keys)
    return {keys[0]: value}


def _string_output(function: str, chain: Chain, outputs: Mapping[str, Any]) -> str:
    keys = chain.output_keys
    if len(keys) != 1:
        raise SingleKeyError(function, chain.name, "output", keys)
    value = outputs[keys[0]]
    if not isinstance(value, str):
        raise OutputNotStringError(function, chain.name, keys[0], value)
    return value


def run(chain: Chain, input: Any, **options: Any) -> str:
    """Runs a chain that takes one input and returns one string."""
    return _string_output("run", chain, call(chain, _single_input(chain, input), **options))


async def arun(chain: Chain, input: Any, **options: Any) -> str:
    """Async twin of `run`."""
    outputs = await acall(chain, _single_input(chain, input), **options)
    return _string_output("run", chain, outputs)


def predict(chain: Chain, inputs: Mapping[str, Any], **options: Any) -> str:
    """Runs a chain that returns one string, with several inputs."""
    return _string_output("predict", chain, call(chain, inputs, **options))


async def apredict(chain: Chain, inputs: Mapping[str, Any], **options: Any) -> str:
    """Async twin of `predict`."""
    return _string_output("predict", chain, await acall(chain, inputs, **options))


def batch(
    chain: Chain,
    inputs: Sequence[Mapping[str, Any]],
    *,
    max_workers: int = 5,
    return_exceptions: bool = False,
    **options: Any,
) -> list[Any]:
    """Calls `chain` on each inputs in threads; results keep the order of `inputs`.

    With `return_exceptions=True` a failed call yields its exception in its place; otherwise
    the first failure, in input order, is raised once the running calls have ended.
    """
    if max_workers < 1:
        raise ValueError(f"max_workers must be at least 1, got {max_workers}")
    with ThreadPoolExecutor(max_workers=min(max_workers, max(len(inputs), 1))) as pool:
        futures = [pool.submit(call, chain, item, **options) for item in inputs]
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
    return results


async def abatch(
    chain: Chain,
    inputs: Sequence[Mapping[str, Any]],
    *,
    max_workers: int = 5,
    return_exceptions: bool = False,
    **options: Any,
) -> list[Any]:
    """Async twin of `batch`: at most `max_workers` calls run at once. Without
    `return_exceptions`, the first failure cancels the calls not yet finished, and the error
    raised is the first in input order among those that failed."""
    import asyncio  # loaded already by the running event loop, not at import

    if max_workers < 1:
        raise ValueError(f"max_workers must be at least 1, got {max_workers}")
    limit = asyncio.Semaphore(max_workers)

    async def one(item: Mapping[str, Any]) -> dict[str, Any]:
        async with limit:
            return await acall(chain, item, **options)

    tasks = [asyncio.ensure_future(one(item)) for item in inputs]
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
    chain: Chain, inputs: Sequence[Mapping[str, Any]], *, max_workers: int = 5, **options: Any
) -> list[dict[str, Any]]:
    """Calls `chain` on each inputs concurrently; keeps order and raises the first error."""
    return batch(chain, inputs, max_workers=max_workers, **options)


async def aapply(
    chain: Chain, inputs: Sequence[Mapping[str, Any]], *, max_workers: int = 5, **options: Any
) -> list[dict[str, Any]]:
    """Async twin of `apply`."""
    return await abatch(chain, inputs, max_workers=max_workers, **options)
