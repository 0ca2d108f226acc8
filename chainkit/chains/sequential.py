"""Chains run one after another, each seeing the outputs of those before it."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from chainkit.callbacks import Handlers
from chainkit.chains import api
from chainkit.chains.chain import Chain
from chainkit.chains.errors import ChainTypeError
from chainkit.chains.errors import ChainWiringError as ChainWiringError
from chainkit.schema import Memory


class SequentialChain(Chain):
    """Runs `chains` in order; each reads from the inputs and the outputs of earlier chains.

    The wiring is checked when the sequence is built: every key a chain needs is given by the
    inputs, the sequence's memory, an earlier chain or the chain's own memory; no chain
    overwrites a key that already exists; and every memory can tell which keys hold the
    exchange it saves. While running, a chain that returns a key it did not declare and that
    already exists is refused rather than allowed to overwrite it.
    """

    def __init__(
        self,
        chains: Sequence[Chain],
        input_variables: Sequence[str],
        output_variables: Sequence[str] | None = None,
        *,
        memory: Memory | None = None,
        callbacks: Handlers = None,
    ) -> None:
        self.chains = _chain_list("SequentialChain", chains)
        self.input_variables = _names("input_variables", input_variables)
        self.memory = memory
        self.callbacks = callbacks
        known = set(self.input_variables)
        if memory is not None:
            overlap = known.intersection(memory.memory_variables)
            if overlap:
                raise ChainWiringError(
                    f"input variables {sorted(overlap)} are also memory variables"
                )
            known.update(memory.memory_variables)
        for index, chain in enumerate(self.chains):
            _check_step(index, chain, known)
            clash = [key for key in chain.output_keys if key in known]
            if clash:
                raise ChainWiringError(
                    f"chain {index} ({chain.name}) would overwrite existing key(s) {clash}"
                )
            known.update(chain.output_keys)
        if output_variables is None:
            output_variables = self.chains[-1].output_keys
        self.output_variables = _names("output_variables", output_variables)
        missing = [key for key in self.output_variables if key not in known]
        if missing:
            raise ChainWiringError(
                f"output variables {missing} are produced by no chain; available: {sorted(known)}"
            )
        if memory is not None:
            _check_memory(
                "the sequence's memory",
                memory,
                [*self.input_variables, *memory.memory_variables],
                self.output_variables,
            )

    def __repr__(self) -> str:
        names = [chain.name for chain in self.chains]
        return (
            f"SequentialChain({names}, input_variables={self.input_variables}, "
            f"output_variables={self.output_variables})"
        )

    @property
    def input_keys(self) -> list[str]:
        return self.input_variables

    @property
    def output_keys(self) -> list[str]:
        return self.output_variables

    @property
    def output_not_text(self) -> str | None:
        for chain in self.chains:
            if set(chain.output_keys) & set(self.output_variables):
                known = chain.output_not_text
                if known is not None:
                    return f"takes its output from {chain.name}, which {known}"
        return None

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        values = dict(inputs)
        for index, chain in enumerate(self.chains):
            _merge(index, chain, values, api.call(chain, values, **options))
        return {key: values[key] for key in self.output_variables}

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        values = dict(inputs)
        for index, chain in enumerate(self.chains):
            _merge(index, chain, values, await api.acall(chain, values, **options))
        return {key: values[key] for key in self.output_variables}


class SimpleSequentialChain(Chain):
    """Feeds the single string output of each chain to the single input of the next; an input
    a chain's own memory fills does not count."""

    input_key = "input"
    output_key = "output"

    def __init__(self, chains: Sequence[Chain], *, callbacks: Handlers = None) -> None:
        self.chains = _chain_list("SimpleSequentialChain", chains)
        for index, chain in enumerate(self.chains):
            inputs = _free_inputs(chain)
            if len(inputs) != 1 or len(chain.output_keys) != 1:
                raise ChainWiringError(
                    f"chain {index} ({chain.name}) must have one input and one output key; it "
                    f"has inputs {inputs}"
                    f"{' besides its memory' if chain.memory is not None else ''} and outputs "
                    f"{chain.output_keys}"
                )
            _check_step(index, chain, set(inputs))
            if (known := chain.output_not_text) is not None:
                raise ChainWiringError(
                    f"chain {index} ({chain.name}) {known}, but SimpleSequentialChain hands "
                    "each chain's text to the next: use a SequentialChain"
                )
        self.callbacks = callbacks

    def __repr__(self) -> str:
        return f"SimpleSequentialChain({[chain.name for chain in self.chains]})"

    @property
    def input_keys(self) -> list[str]:
        return [self.input_key]

    @property
    def output_keys(self) -> list[str]:
        return [self.output_key]

    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        value = inputs[self.input_key]
        for chain in self.chains:
            value = api.run(chain, value, **options)
        return {self.output_key: value}

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        value = inputs[self.input_key]
        for chain in self.chains:
            value = await api.arun(chain, value, **options)
        return {self.output_key: value}


def _chain_list(owner: str, chains: Sequence[Chain]) -> list[Chain]:
    if not isinstance(chains, list | tuple):
        raise ChainTypeError(f"{owner} needs a list of chains, got {type(chains).__name__}")
    for index, chain in enumerate(chains):
        if not isinstance(chain, Chain):
            raise ChainTypeError(
                f"{owner}: chains[{index}] is not a Chain, got {type(chain).__name__}"
            )
    if not chains:
        raise ChainWiringError(f"{owner} needs at least one chain")
    return list(chains)


def _names(argument: str, names: Sequence[str]) -> list[str]:
    # A str is a sequence of one-letter names; taking it so would wire "topic" as t, o, p, ...
    if isinstance(names, str) or not isinstance(names, list | tuple):
        raise ChainTypeError(
            f"{argument} must be a list of names, got {type(names).__name__} {names!r}"
            f"{f'; write [{names!r}]' if isinstance(names, str) else ''}"
        )
    for name in names:
        if not isinstance(name, str):
            raise ChainTypeError(
                f"{argument} must hold str names, got {type(name).__name__} {name!r}"
            )
    return list(names)


def _free_inputs(chain: Chain) -> list[str]:
    """The inputs of `chain` its own memory does not fill."""
    filled = chain.memory.memory_variables if chain.memory is not None else ()
    return [key for key in chain.input_keys if key not in filled]


def _check_step(index: int, chain: Chain, known: set[str]) -> None:
    """Raises unless `chain`, called with the values `known` at its step, gets every input and
    its memory can load and save."""
    missing = [key for key in _free_inputs(chain) if key not in known]
    if missing:
        raise ChainWiringError(
            f"chain {index} ({chain.name}) needs {missing}, which neither the inputs "
            f"nor an earlier chain provide; available: {sorted(known)}"
        )
    if chain.memory is None:
        return
    shadowed = sorted(known.intersection(chain.memory.memory_variables))
    if shadowed:
        # chains.call lets a given value win over the memory's, so the memory would be unread.
        raise ChainWiringError(
            f"chain {index} ({chain.name}) has memory variable(s) {shadowed}, which the inputs "
            "or an earlier chain already give, so its memory would never be read"
        )
    _check_memory(
        f"chain {index} ({chain.name})",
        chain.memory,
        [*known, *chain.memory.memory_variables],
        chain.output_keys,
    )


def _check_memory(
    owner: str, memory: Memory, input_keys: Collection[str], output_keys: Collection[str]
) -> None:
    try:
        memory.check_keys(input_keys, output_keys)
    except ValueError as error:
        raise ChainWiringError(f"{owner}: {error}") from error


def _merge(index: int, chain: Chain, values: dict[str, Any], outputs: dict[str, Any]) -> None:
    declared = chain.output_keys
    clash = [key for key in outputs if key in values and key not in declared]
    if clash:
        raise ChainWiringError(
            f"chain {index} ({chain.name}) returned key(s) {clash} it does not declare in "
            f"output_keys {declared}, which would overwrite the value already there"
        )
    values.update(outputs)
