"""The functions users call chains through: call, run, predict, batch, and async twins.

`call` makes a chain's `_call` a "chain" run with what every chain needs: memory in, key
checks, chain callbacks, memory out. The sync and async twins share every step but the call
itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import copy_context
from typing import Any, Unpack

from chainkit._pipe import Pipeable
from chainkit._progress import Progress
from chainkit._stop import call_guarded, stop_escaped
from chainkit._text import shorten
from chainkit._threads import in_thread
from chainkit.callbacks import Handlers
from chainkit.callbacks.combining import CombiningHandler, guard, join
from chainkit.callbacks.run import enter
from chainkit.chains.chain import Chain
from chainkit.chains.errors import (
    ChainTypeError,
    InputsTypeError,
    MissingInputKeysError,
    MissingOutputKeysError,
    OptionsError,
    OptionsTypeError,
    OutputNotStringError,
    OutputsTypeError,
    SingleKeyError,
)
from chainkit.llms import Model
from chainkit.llms.options import KNOWN_OPTIONS, CallOptions, check_options
from chainkit.prompts import BasePromptTemplate

_NO_INPUT: Any = object()
"""`run`'s input when none was given (None is an input like any other)."""


def check_chain(function: str, chain: object) -> None:
    """Raises ChainTypeError, before any work, when what `function` was given to run is no
    chain; a model or a pipeline step (a tool, a prompt, `chains.pick(...)`) is told how to
    become one."""
    if Chain in type(chain).__mro__:  # cheaper than an isinstance test of the ABC
        return
    advice = (
        "pass a Chain: a pipeline (prompt | model | parser), a chains.LLMChain, an "
        "agents.Executor, or a Chain subclass of yours"
    )
    if isinstance(chain, Model):
        advice = (
            "pipe a prompt into the model: prompts.PromptTemplate.from_template('{question}') "
            "| model | parsers.TextParser(), or call it with llms.call(model, prompt)"
        )
    elif isinstance(chain, BasePromptTemplate):
        advice = "pipe the prompt into a model: prompt | model | parsers.TextParser()"
    elif isinstance(chain, Pipeable):
        advice = "it is a pipeline step: run it as a pipeline, chains.pipe(step)"
    raise ChainTypeError(f"chains.{function} runs a chain, got {type(chain).__name__}: {advice}")


def _given_inputs(
    function: str, inputs: Mapping[str, Any] | None, options: CallOptions
) -> Mapping[str, Any]:
    """`inputs`; InputsTypeError, before any work, when they came as keyword arguments
    (LangChain's `chain.predict(question=...)`) or not at all."""
    if inputs is None:
        raise inputs_not_given(function, options)
    return inputs


def _given_input(function: str, input: Any, options: CallOptions) -> Any:
    """`run`'s `input`, as `_given_inputs` checks a chain's inputs."""
    if input is _NO_INPUT:
        raise inputs_not_given(function, options)
    return input


def inputs_not_given(function: str, options: CallOptions) -> InputsTypeError:
    """The error naming the call to write instead, for inputs given by name or not at all."""
    named = [name for name in options if name not in KNOWN_OPTIONS]
    by_name = ", ".join(f"{name!r}: ..." for name in named)
    if function in ("run", "arun"):
        way = f"chains.{function}(chain, text) for a chain of one input"
        if named:
            way += f", or chains.predict(chain, {{{by_name}}})"
    else:
        way = f"chains.{function}(chain, {{{by_name or repr('input') + ': ...'}}})"
    if not named:
        return InputsTypeError(
            f"chains.{function} needs the chain's inputs as its second argument: write {way}"
        )
    return InputsTypeError(
        f"chains.{function} takes the chain's inputs as its second argument, not as keyword "
        f"arguments ({', '.join(named)}): write {way}"
    )


def _prepare(chain: Chain, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs with the memory's variables added; raises, before any work, for inputs the
    chain cannot take or a memory that could not save the exchange."""
    full = _inputs_dict(chain, inputs)
    if chain.memory is not None:
        _add_memory(full, chain.memory.load_memory_variables(full))
    return _checked_inputs(chain, full)


async def _aprepare(chain: Chain, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Async twin of `_prepare`: a memory's `aload_memory_variables`, when it has one, loads
    without holding up the event loop (a history in a database)."""
    full = _inputs_dict(chain, inputs)
    memory = chain.memory
    if memory is not None:
        aload = getattr(memory, "aload_memory_variables", None)
        _add_memory(full, await aload(full) if aload else memory.load_memory_variables(full))
    return _checked_inputs(chain, full)


def _check_item(chain: Chain, inputs: Mapping[str, Any]) -> None:
    """Raises what `_prepare` would for `inputs`, without loading the memory: its variables
    are only named (a batch checks every item before the first call, and loading a history
    from a database for each would cost as much as the calls' own loads)."""
    full = _inputs_dict(chain, inputs)
    if chain.memory is not None:
        _add_memory(full, dict.fromkeys(chain.memory.memory_variables))
    _checked_inputs(chain, full)


def _inputs_dict(chain: Chain, inputs: Mapping[str, Any]) -> dict[str, Any]:
    if type(inputs) is not dict and not isinstance(inputs, Mapping):  # the ABC check is slow
        raise InputsTypeError(
            f"{chain.name} needs its inputs as a dict of key to value, got "
            f"{type(inputs).__name__}; use chains.run for a single input"
        )
    return dict(inputs)


def _add_memory(full: dict[str, Any], variables: Mapping[str, Any]) -> None:
    for key, value in variables.items():
        full.setdefault(key, value)


def _checked_inputs(chain: Chain, full: dict[str, Any]) -> dict[str, Any]:
    keys = chain.input_keys
    if not all(map(full.__contains__, keys)):  # no comprehension frame on every call
        missing = [key for key in keys if key not in full]
        raise MissingInputKeysError(chain.name, missing, list(full))
    if chain.memory is not None:
        chain.memory.check_keys(full.keys(), chain.output_keys)
    return full


def _start(
    chain: Chain, inputs: Mapping[str, Any], options: CallOptions
) -> tuple[CombiningHandler | None, dict[str, Any], dict[str, Any]]:
    """The chain run's own handler (the chain's, joined with a `callbacks` option), the options
    passed on to the chain, and the full inputs: every check made before any work."""
    own, rest = _own_options(chain, options)
    return own, rest, _prepare(chain, inputs)


async def _astart(
    chain: Chain, inputs: Mapping[str, Any], options: CallOptions
) -> tuple[CombiningHandler | None, dict[str, Any], dict[str, Any]]:
    """Async twin of `_start`."""
    own, rest = _own_options(chain, options)
    return own, rest, await _aprepare(chain, inputs)


def _own_options(
    chain: Chain, options: CallOptions
) -> tuple[CombiningHandler | None, dict[str, Any]]:
    rest: dict[str, Any] = options  # type: ignore[assignment]  # the call's own **options
    own = chain.handler
    if rest:  # most calls give no options: nothing to check
        _check_no_input_among(chain, rest)
        check_options(rest)
        given = rest.pop("callbacks", None)
        if given is not None:
            own = join(own, guard(given))
    return own, rest


def _check_no_input_among(chain: Chain, options: Mapping[str, Any]) -> None:
    """Raises InputsTypeError for an option named after one of the chain's inputs: an input
    given by name beside the inputs dict, which no model option could be."""
    inputs = [name for name in options if name not in KNOWN_OPTIONS and name in chain.input_keys]
    if inputs:
        raise InputsTypeError(
            f"{', '.join(map(repr, inputs))} {'is an input' if len(inputs) == 1 else 'are inputs'} "
            f"of {chain.name}, given as a call option: put it in the inputs dict"
        )


def _finish(
    chain: Chain,
    full: dict[str, Any],
    outputs: dict[str, Any],
    string_for: str | None,
    save: bool = True,
) -> dict[str, Any]:
    """Checks the outputs, then saves them to memory (unless `save` is False: `_afinish`
    saves); `string_for` names the function (run or predict) that needs the one output as a
    str, so a wrong type is refused before it is saved."""
    if type(outputs) is not dict and not isinstance(outputs, Mapping):
        raise OutputsTypeError(
            f"{chain.name}._call must return a dict of output key to value, got "
            f"{type(outputs).__name__}: {outputs!r:.80}"
        )
    keys = chain.output_keys
    if not all(map(outputs.__contains__, keys)):  # no comprehension frame on every call
        missing = [key for key in keys if key not in outputs]
        raise MissingOutputKeysError(chain.name, missing, list(outputs))
    if string_for is not None:
        key = keys[0] if len(keys) == 1 else str(chain.answer_key)
        if not isinstance(outputs[key], str):
            raise OutputNotStringError(string_for, chain.name, key, outputs[key])
    if save and chain.memory is not None:
        chain.memory.save_context(full, outputs)
    return outputs


async def _afinish(
    chain: Chain, full: dict[str, Any], outputs: dict[str, Any], string_for: str | None
) -> dict[str, Any]:
    """Async twin of `_finish`: a memory's `asave_context`, when it has one, saves without
    holding up the event loop (a history in a database, a summary's model call)."""
    _finish(chain, full, outputs, string_for, save=False)
    memory = chain.memory
    if memory is not None:
        asave = getattr(memory, "asave_context", None)
        if asave is None:
            memory.save_context(full, outputs)
        else:
            await asave(full, outputs)
    return outputs


def call(
    chain: Chain, inputs: Mapping[str, Any] | None = None, **options: Unpack[CallOptions]
) -> dict[str, Any]:
    """Runs `chain` on `inputs` as a "chain" run, with memory, key checks and callbacks;
    returns its outputs.

    A `callbacks` option (a Handler, or a list of them) hears this run and every run inside
    it, besides the chain's own `callbacks`. Inputs, options and the memory are checked before
    the chain starts; a chain start is always followed by exactly one chain end or chain error.
    """
    check_chain("call", chain)
    return _call(chain, _given_inputs("call", inputs, options), options, None)


async def acall(
    chain: Chain, inputs: Mapping[str, Any] | None = None, **options: Unpack[CallOptions]
) -> dict[str, Any]:
    """Async twin of `call`."""
    check_chain("acall", chain)
    return await _acall(chain, _given_inputs("acall", inputs, options), options, None)


def resume(
    chain: Chain,
    state_or_run_id: object,
    decisions: object = None,
    *,
    interrupted: str = "raise",
    callbacks: Handlers = None,
) -> dict[str, Any]:
    """Continues a run of `chain` (an agents.Executor) that stopped (a crash, a kill, a
    deploy): `state_or_run_id` is the run's id in the Executor's checkpointer, or its
    `checkpoints.RunState` (or that state's JSON form). Returns the run's outputs, as `call`
    would have; the resumed run is a "chain" run for callbacks, and memory saves it.

    A tool call that completed is never repeated; one cut in the middle is repeated only for
    an idempotent tool, else `interrupted` decides: "raise" (raises
    checkpoints.InterruptedCallError naming it), "repeat", or "skip" (the model is told its
    outcome is unknown). A decision taken before the run stopped is kept (a denied call never
    runs); a call that waited for a person waits still. With a checkpointer the store's record
    of the run is what continues: a state given that is older continues from it, and with
    decisions raises checkpoints.StaleStateError (nothing runs twice). Raises
    checkpoints.RunLockedError while another process holds the run,
    checkpoints.StateMismatchError for a state of another agent kind or needing a tool the
    agent lacks, checkpoints.StateFormatError for another format version. `decisions` answer
    the calls a run paused on (see agents.PendingApproval): a decision for a call waiting for
    approval, any JSON value for a tool's question (agents.interrupt); a dict keyed by each
    call's tool_call_id (or position), or a list in the requests' order. `callbacks` hear the
    resumed run, as `call`'s option does.
    """
    check_chain("resume", chain)
    resumption = chain._resumed(state_or_run_id, decisions, interrupted)
    with enter("chain", chain.name, _handler(chain, callbacks)) as run:
        if run.handler is not None:
            run.handler.handle_chain_start(chain.name, resumption.inputs)
        outputs = call_guarded(f"chain {chain.name}", resumption.call)
        outputs = _finish(chain, resumption.inputs, outputs, None)
        run.end(outputs)
        return outputs


async def aresume(
    chain: Chain,
    state_or_run_id: object,
    decisions: object = None,
    *,
    interrupted: str = "raise",
    callbacks: Handlers = None,
) -> dict[str, Any]:
    """Async twin of `resume`."""
    check_chain("aresume", chain)
    # Its load and hold wait for the database: not on the event loop.
    resumption = await in_thread(chain._resumed, state_or_run_id, decisions, interrupted)
    with enter("chain", chain.name, _handler(chain, callbacks)) as run:
        if run.handler is not None:
            run.handler.handle_chain_start(chain.name, resumption.inputs)
        outputs = await _afinish(chain, resumption.inputs, await resumption.acall(), None)
        run.end(outputs)
        return outputs


def _handler(chain: Chain, callbacks: Handlers) -> CombiningHandler | None:
    """The chain's handler, joined with the `callbacks` of the call."""
    return chain.handler if callbacks is None else join(chain.handler, guard(callbacks))


def _call(
    chain: Chain, inputs: Mapping[str, Any], options: CallOptions, string_for: str | None
) -> dict[str, Any]:
    own, rest, full = _start(chain, inputs, options)
    with enter("chain", chain.name, own) as run:
        if run.handler is not None:
            run.handler.handle_chain_start(chain.name, full)
        # call_guarded's work in line: it would make a frame and format the source's text on
        # every run, for an error that almost never comes.
        try:
            outputs = chain._call(full, **rest)
        except (StopIteration, StopAsyncIteration) as error:
            raise stop_escaped(error, f"chain {chain.name}") from error
        outputs = _finish(chain, full, outputs, string_for)
        if run.handler is not None:  # else no one hears the end: no call to make
            run.end(outputs)
        return outputs


async def _acall(
    chain: Chain, inputs: Mapping[str, Any], options: CallOptions, string_for: str | None
) -> dict[str, Any]:
    own, rest, full = await _astart(chain, inputs, options)
    with enter("chain", chain.name, own) as run:
        if run.handler is not None:
            run.handler.handle_chain_start(chain.name, full)
        outputs = await _afinish(chain, full, await chain._acall(full, **rest), string_for)
        if run.handler is not None:
            run.end(outputs)
        return outputs


def _single_input(chain: Chain, value: Any) -> dict[str, Any]:
    keys = chain.input_keys
    if chain.memory is not None:
        memory_keys = set(chain.memory.memory_variables)
        keys = [key for key in keys if key not in memory_keys]
    if len(keys) != 1:
        raise SingleKeyError("run", chain.name, "input", keys)
    if isinstance(value, Mapping) and list(value) == keys:
        # {"input": ...} given where the input goes would reach the prompt as a dict's repr.
        raise InputsTypeError(
            f"chains.run takes the input itself, got the inputs dict {shorten(repr(value), 60)}: "
            f"write chains.run(chain, {shorten(repr(value[keys[0]]), 40)}), or "
            "chains.predict(chain, inputs)"
        )
    return {keys[0]: value}


def _output_key(function: str, chain: Chain) -> str:
    """The one output key `run` and `predict` return (the chain's `answer_key` among
    several), which must hold text; checked before the chain runs."""
    keys = chain.output_keys
    key = keys[0] if len(keys) == 1 else chain.answer_key
    if key is None:
        raise SingleKeyError(function, chain.name, "output", keys)
    known = chain.output_not_text
    if known is not None:
        raise OutputNotStringError(function, chain.name, key, None, known=known)
    return key


def run(chain: Chain, input: Any = _NO_INPUT, **options: Unpack[CallOptions]) -> str:
    """Runs a chain that takes one input and returns one string."""
    check_chain("run", chain)
    input = _given_input("run", input, options)
    key = _output_key("run", chain)
    value: str = _call(chain, _single_input(chain, input), options, "run")[key]
    return value


async def arun(chain: Chain, input: Any = _NO_INPUT, **options: Unpack[CallOptions]) -> str:
    """Async twin of `run`."""
    check_chain("arun", chain)
    input = _given_input("arun", input, options)
    key = _output_key("run", chain)
    value: str = (await _acall(chain, _single_input(chain, input), options, "run"))[key]
    return value


def predict(
    chain: Chain, inputs: Mapping[str, Any] | None = None, **options: Unpack[CallOptions]
) -> str:
    """Runs a chain that returns one string, with several inputs."""
    check_chain("predict", chain)
    given = _given_inputs("predict", inputs, options)
    key = _output_key("predict", chain)
    value: str = _call(chain, given, options, "predict")[key]
    return value


async def apredict(
    chain: Chain, inputs: Mapping[str, Any] | None = None, **options: Unpack[CallOptions]
) -> str:
    """Async twin of `predict`."""
    check_chain("apredict", chain)
    given = _given_inputs("apredict", inputs, options)
    key = _output_key("predict", chain)
    value: str = (await _acall(chain, given, options, "predict"))[key]
    return value


def _batch_inputs(
    function: str,
    chain: Chain,
    inputs: Iterable[Mapping[str, Any]],
    max_workers: int,
    options: CallOptions,
) -> list[Mapping[str, Any]]:
    """The inputs as a list, every one of them and the options checked before any call starts:
    a bad item found halfway would leave the calls before it done and those after it not."""
    check_chain(function, chain)
    if not isinstance(max_workers, int) or isinstance(max_workers, bool):
        raise OptionsTypeError(f"max_workers must be an int, got {type(max_workers).__name__}")
    if max_workers < 1:
        raise OptionsError(f"max_workers must be at least 1, got {max_workers}")
    if isinstance(inputs, Mapping | str | bytes):
        raise InputsTypeError(
            f"{function}() takes a list of input dicts, got one {type(inputs).__name__}; "
            "use chains.call (or chains.run) for a single input"
        )
    try:
        items = list(inputs)
    except TypeError:
        raise InputsTypeError(
            f"{function}() takes a list (or any iterable) of input dicts, got "
            f"{type(inputs).__name__}"
        ) from None
    check_options(options)
    guard(options.get("callbacks"))
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InputsTypeError(
                f"{function}() takes a list of input dicts; item {index} is "
                f"{type(item).__name__}: {item!r:.80}"
            )
        try:
            _check_item(chain, item)
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
    **options: Unpack[CallOptions],
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

    def show_done(future: Future[dict[str, Any]]) -> None:
        if shown is not None and not future.cancelled():
            shown.add(failed=future.exception() is not None)

    def one(item: Mapping[str, Any]) -> dict[str, Any]:
        return call(chain, item, **options)

    try:
        with ThreadPoolExecutor(max_workers=min(max_workers, max(len(items), 1))) as pool:
            # Each call in a copy of this context: the current run becomes each item's parent.
            futures = [pool.submit(copy_context().run, one, item) for item in items]
            for future in futures:
                future.add_done_callback(show_done)
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
    **options: Unpack[CallOptions],
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
