"""Errors of chains: a chain called with, or returning, the wrong keys or types; chains that
do not fit together; call options that cannot work."""

from __future__ import annotations

from collections.abc import Sequence

from chainkit._errors import ChainkitError


class ChainKeyError(ChainkitError, ValueError):
    """Base of the key errors; `chain` names the chain and `keys` the keys at fault."""

    def __init__(self, message: str, chain: str, keys: Sequence[str]) -> None:
        super().__init__(message)
        self.chain = chain
        self.keys = list(keys)


class MissingInputKeysError(ChainKeyError):
    def __init__(self, chain: str, missing: Sequence[str], given: Sequence[str]) -> None:
        super().__init__(
            f"{chain} is missing input key(s) {list(missing)}; got {sorted(given)}", chain, missing
        )


class MissingOutputKeysError(ChainKeyError):
    def __init__(self, chain: str, missing: Sequence[str], produced: Sequence[str]) -> None:
        super().__init__(
            f"{chain} did not produce output key(s) {list(missing)}; "
            f"it produced {sorted(produced)}",
            chain,
            missing,
        )


class SingleKeyError(ChainKeyError):
    """`run` and `predict` need a chain with exactly one input (run) or output key."""

    def __init__(self, function: str, chain: str, kind: str, keys: Sequence[str]) -> None:
        super().__init__(
            f"{function}() needs a chain with exactly one {kind} key; {chain} has {list(keys)}"
            f"{'; use chains.call with a dict' if kind == 'input' else '; use chains.call'}",
            chain,
            keys,
        )


class OutputNotStringError(ChainkitError, TypeError):
    """`run` and `predict` return a string; the chain's output was something else."""

    def __init__(
        self, function: str, chain: str, key: str, value: object, *, known: str | None = None
    ) -> None:
        returned = known or f"returned {type(value).__name__}"
        super().__init__(
            f"{function}() needs a string output, but {chain} {returned} under {key!r}; "
            "use chains.call"
        )
        self.chain = chain
        self.key = key


class InputsTypeError(ChainkitError, TypeError):
    """A chain was called with inputs that are not a dict, or `batch` with inputs that are not
    a list (or any iterable) of dicts."""


class OutputsTypeError(ChainkitError, TypeError):
    """A chain's `_call` returned something other than a dict of output key to value."""


class ChainWiringError(ChainkitError, ValueError):
    """The parts of a chain do not fit together: the chains of a sequence, or a memory whose
    variables the prompt does not use; the message names the chain and key."""


class OptionsError(ChainkitError, ValueError):
    """Call options that cannot work: options that contradict each other, a `max_workers`
    below 1."""


class OptionsTypeError(ChainkitError, TypeError):
    """A call option of the wrong type, such as a `max_workers` that is not an int."""


class ChainAttributeError(ChainkitError, AttributeError):
    """A chain was asked for a method LangChain's chains have, such as `invoke` or `run`;
    chainkit runs a chain through the functions of `chains`, which the message names."""


class ChainTypeError(ChainkitError, TypeError):
    """A chain was built with an argument of the wrong type (not a prompt, model, chain or
    list of names where one is needed), or `chains.run`, `stream` and the like were given
    something that is no chain, such as a model."""


class AllStepsFailedError(ChainkitError, RuntimeError):
    """Every step of a `chains.fallbacks` failed, each with an error it falls back on.

    `errors` holds each step's name and its error, in the order they were tried; the message
    names them all. The last step's error is also the cause (`__cause__`)."""

    def __init__(self, errors: Sequence[tuple[str, Exception]]) -> None:
        tried = "; ".join(f"{name}: {type(error).__name__}: {error}" for name, error in errors)
        super().__init__(f"every step failed ({len(errors)} tried): {tried}")
        self.errors: tuple[tuple[str, Exception], ...] = tuple(errors)


class InputValueError(ChainkitError, ValueError):
    """An input a chain cannot work with, such as an empty question for an answer chain."""


class CitationError(ChainkitError, ValueError):
    """An answer chain with `strict=True` got an answer whose citations do not hold: the
    base of InventedCitationError and UncitedAnswerError. `answer` is the model's answer and
    `cited` the ids it cites that name a chunk it was shown."""

    def __init__(self, message: str, answer: str, cited: Sequence[str]) -> None:
        super().__init__(message)
        self.answer = answer
        self.cited = list(cited)


class InventedCitationError(CitationError):
    """The answer cites ids that name no chunk the model was shown (`invented`)."""

    def __init__(self, answer: str, cited: Sequence[str], invented: Sequence[str]) -> None:
        shown = ", ".join(repr(each) for each in invented[:5])
        more = f" and {len(invented) - 5} more" if len(invented) > 5 else ""
        super().__init__(
            f"the answer cites {shown}{more}, which name no document it was given", answer, cited
        )
        self.invented = list(invented)


class UncitedAnswerError(CitationError):
    """The answer cites no document at all (and is not the chain's not-found answer)."""

    def __init__(self, answer: str) -> None:
        super().__init__("the answer cites none of the documents it was given", answer, [])
