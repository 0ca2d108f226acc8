"""Chains: one contract, `_call(inputs) -> outputs`, and the functions to run them."""

from chainkit.chains.api import (
    abatch,
    acall,
    apredict,
    arun,
    batch,
    call,
    predict,
    run,
)
from chainkit.chains.chain import Chain
from chainkit.chains.errors import (
    ChainAttributeError,
    ChainKeyError,
    ChainTypeError,
    ChainWiringError,
    InputsTypeError,
    MissingInputKeysError,
    MissingOutputKeysError,
    OptionsError,
    OptionsTypeError,
    OutputNotStringError,
    OutputsTypeError,
    SingleKeyError,
)
from chainkit.chains.llm import LLMChain
from chainkit.chains.sequential import SequentialChain, SimpleSequentialChain
from chainkit.chains.stream import AsyncEventStream, EventStream, astream, stream

__all__ = [
    "AsyncEventStream",
    "Chain",
    "ChainAttributeError",
    "ChainKeyError",
    "ChainTypeError",
    "ChainWiringError",
    "EventStream",
    "InputsTypeError",
    "LLMChain",
    "MissingInputKeysError",
    "MissingOutputKeysError",
    "OptionsError",
    "OptionsTypeError",
    "OutputNotStringError",
    "OutputsTypeError",
    "SequentialChain",
    "SimpleSequentialChain",
    "SingleKeyError",
    "abatch",
    "acall",
    "apredict",
    "arun",
    "astream",
    "batch",
    "call",
    "predict",
    "run",
    "stream",
]
