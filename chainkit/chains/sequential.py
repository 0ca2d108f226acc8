"""Chains run one after another, each seeing the outputs of those before it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chainkit.callbacks import Handlers
from chainkit.chains import api
from chainkit.chains.chain import Chain
from chainkit.chains.errors import ChainWiringError as ChainWiringError
from chainkit.schema import Memory


class SequentialChain(Chain):
    """Runs `chains` in order; each reads from the inputs and the outputs of earlier chains.

    The wiring is checked when the sequence is built: every key a chain needs is given by the
    inputs, the memory or an earlier chain, and no chain overwrites a key that already exists.
    """

    def __init__(
        self,
        chains: Sequence[Chain],
        input_variables: Sequence[str],
        output_variables: Sequence[str] | None = None,
        *,
        memory: Memory | None = None,
        callbacks_handler: Handlers = None,
    ) -> None:
        if not chains:
            raise ChainWiringError("SequentialChain needs at least one chain")
        self.chains = list(chains)
        self.input_variables = list(input_variables)
        self.memory = memory
        self.callbacks_handler = callbacks_handler
        known = set(self.input_variables)
        if memory is not None:
            overlap = known.intersection(memory.memory_variables)
            if overlap:
                raise ChainWiringError(
                    f"input variables {sorted(overlap)} are also memory variables"
                )
            known.update(memory.memory_variables)
        for index, chain in enumerate(self.chains):
            missing = [key for key in chain.input_keys if key not in known]
            if missing:
                raise ChainWiringError(
                    f"chain {index} ({chain.name}) needs {missing}, which neither the inputs "
                    f"nor an earlier chain provide; available: {sorted(known)}"
                )
            clash = [key for key in chain.output_keys if key in known]
            if clash:
                raise ChainWiringError(
                    f"chain {index} ({chain.name}) would overwrite existing key(s) {clash}"
                )
            known.update(chain.output_keys)
        if output_variables is None:
            output_variables = self.chains[-1].output_keys
        missing = [key for key in output_variables if key not in known]
        if missing:
            raise ChainWiringError(
                f"output variables {missing} are produced by no chain; available: {sorted(known)}"
            )
        self.output_variables = list(output_variables)

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

    def call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        values = dict(inputs)
        for chain in self.chains:
            values.update(api.call(chain, values, **options))
        return {key: values[key] for key in self.output_variables}

    async def acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        values = dict(inputs)
        for chain in self.chains:
            values.update(await api.acall(chain, values, **options))
        return {key: values[key] for key in self.output_variables}


class SimpleSequentialChain(Chain):
    """Feeds the single string output of each chain to the single input of the next."""

    input_key = "input"
    output_key = "output"

    def __init__(self, chains: Sequence[Chain], *, callbacks_handler: Handlers = None) -> None:
        if not chains:
            raise ChainWiringError("SimpleSequentialChain needs at least one chain")
        for index, chain in enumerate(chains):
            if len(chain.input_keys) != 1 or len(chain.output_keys) != 1:
                raise ChainWiringError(
                    f"chain {index} ({chain.name}) must have one input and one output key; it "
                    f"has inputs {chain.input_keys} and outputs {chain.output_keys}"
                )
        self.chains = list(chains)
        self.callbacks_handler = callbacks_handler

    def __repr__(self) -> str:
        return f"SimpleSequentialChain({[chain.name for chain in self.chains]})"

    @property
    def input_keys(self) -> list[str]:
        return [self.input_key]

    @property
    def output_keys(self) -> list[str]:
        return [self.output_key]

    def call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        value = inputs[self.input_key]
        for chain in self.chains:
            value = api.run(chain, value, **options)
        return {self.output_key: value}

    async def acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        value = inputs[self.input_key]
        for chain in self.chains:
            value = await api.arun(chain, value, **options)
        return {self.output_key: value}
