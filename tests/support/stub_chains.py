"""A base for the chains tests write: one text in under "input", one out under "output"."""

from abc import ABC

from chainkit import chains


class InputOutputChain(chains.Chain, ABC):
    """A chain whose inputs are {"input": ...} and outputs {"output": ...}; a subclass
    writes `_call` (and `_acall` if it awaits)."""

    @property
    def input_keys(self) -> list[str]:
        return ["input"]

    @property
    def output_keys(self) -> list[str]:
        return ["output"]
