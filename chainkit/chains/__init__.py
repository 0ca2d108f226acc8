"""Chains: one contract, `call(inputs) -> outputs`, and the functions to run them."""

from chainkit.chains.api import (
    aapply,
    abatch,
    acall,
    apply,
    apredict,
    arun,
    batch,
    call,
    predict,
    run,
)
from chainkit.chains.chain import Chain
from chainkit.chains.errors import (
    ChainKeyError,
    MissingInputKeysError,
    MissingOutputKeysError,
    OutputNotStringError,
    SingleKeyError,
)
from chainkit.chains.llm import LLMChain
from chainkit.chains.options import OptionsError
from chainkit.chains.sequential import ChainWiringError, SequentialChain, SimpleSequentialChain

__all__ = [
    "Chain",
    "ChainKeyError",
    "ChainWiringError",
    "LLMChain",
    "MissingInputKeysError",
    "MissingOutputKeysError",
    "OptionsError",
    "OutputNotStringError",
    "SequentialChain",
    "SimpleSequentialChain",
    "SingleKeyError",
    "aapply",
    "abatch",
    "acall",
    "apply",
    "apredict",
    "arun",
    "batch",
    "call",
    "predict",
    "run",
]
