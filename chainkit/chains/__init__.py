"""Chains: one contract, `_call(inputs) -> outputs`, and the functions to run them."""

from chainkit.chains.api import (
    abatch,
    acall,
    apredict,
    aresume,
    arun,
    batch,
    call,
    predict,
    resume,
    run,
)
from chainkit.chains.chain import Chain, Resumption
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
    "Resumption",
    "SequentialChain",
    "SimpleSequentialChain",
    "SingleKeyError",
    "abatch",
    "acall",
    "apredict",
    "aresume",
    "arun",
    "astream",
    "batch",
    "call",
    "predict",
    "resume",
    "run",
    "stream",
]
