"""The functions users call chains through: call, run, predict, apply, batch, and async twins.

`call` wraps a chain's own `call` with what every chain needs: memory in, key checks, chain
callbacks, memory out. The sync and async twins share every step but the call itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

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
    if chain.memory is not None:
        chain.memory.check_keys(full.keys(), chain.output_keys)
    if callbacks is not None:
        callbacks.handle_chain_start(chain.name, full)
    return full


def _finish(
    chain: Chain,
    full: dict[str, Any],
    outputs: dict[str, Any],
    callbacks: CombiningHandler | None,
    string_for: str | None,
) -> dict[str, Any]:
    """Checks the outputs, then saves them to memory; `string_for` names the function (run or
    predict) that needs the one output as a str, so a wrong type is refused before it is
    saved."""
    missing = [key for key in chain.output_keys if key not in outputs]
    if missing:
        raise MissingOutputKeysError(chain.name, missing, list(outputs))
    if string_for is not None:
        key = chain.output_keys[0]
        if not isinstance(outputs[key], str):
            raise OutputNotStringError(string_for, chain.name, key, outputs[key])
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
    return _call(chain, inputs, options, None)


def _call(
    chain: Chain, inputs: Mapping[str, Any], options: dict[str, Any], string_for: str | None
) -> dict[str, Any]:
    callbacks, options = with_callbacks(options, chain.callbacks)
    full = _prepare(chain, inputs, callbacks)
    try:
        return _finish(chain, full, chain.call(full, **options), callbacks, string_for)
    except BaseException as error:  # an interrupted run still closes its trace
        if callbacks is not None:
            callbacks.handle_chain_error(chain.name, error)
        raise


async def acall(chain: Chain, inputs: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    """Async twin of `call`."""
    return await _acall(chain, inputs, options, None)


async def _acall(
    chain: Chain, inputs: Mapping[str, Any], options: dict[str, Any], string_for: str | None
) -> dict[str, Any]:
    callbacks, options = with_callbacks(options, chain.callbacks)
    full = _prepare(chain, inputs, callbacks)
    try:
        return _finish(chain, full, await chain.acall(full, **options), callbacks, string_for)
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


def _output_key(function: str, chain: Chain) -> str:
    """The one output key `run` and `predict` return; checked before the chain runs."""
    keys = chain.output_keys
    if len(keys) != 1:
        raise SingleKeyError(function, chain.name, "output", keys)
    return keys[0]


def run(chain: Chain, input: Any, **options: Any) -> str:
    """Runs a chain that takes one input and returns one string."""
    key = _output_key("run", chain)
    value: str = _call(chain, _single_input(chain, input), options, "run")[key]
    return value


async def arun(chain: Chain, input: Any, **options: Any) -> str:
    """Async twin of `run`."""
    key = _output_key("run", chain)
    value: str = (await _acall(chain, _single_input(chain, input), options, "run"))[key]
    return value


def predict(chain: Chain, inputs: Mapping[str, Any], **options: Any) -> str:
    """Runs a chain that returns one string, with several inputs."""
    key = _output_key("predict", chain)
    value: str = _call(chain, inputs, options, "predict")[key]
    return value


async def apredict(chain: Chain, inputs: Mapping[str, Any], **options: Any) -> str:
    """Async twin of `predict`."""
    key = _output_key("predict", chain)
    value: str = (await _acall(chain, inputs, options, "predict"))[key]
    return value


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
