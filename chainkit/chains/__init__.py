"""Chains: one contract, `_call(inputs) -> outputs`, and the functions to run them.

The errors of this package all report a mistake in the caller's code or settings (keys that
do not fit, an option of the wrong type): they are in `chainkit.chains.errors`.
"""

from chainkit.chains import errors as errors
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
from chainkit.chains.chain import Chain
from chainkit.chains.llm import LLMChain
from chainkit.chains.sequential import SequentialChain, SimpleSequentialChain
from chainkit.chains.stream import AsyncEventStream, EventStream, astream, stream

__all__ = [
    "AsyncEventStream",
    "Chain",
    "EventStream",
    "LLMChain",
    "SequentialChain",
    "SimpleSequentialChain",
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
