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
    ChainWiringError,
    InputsTypeError,
    MissingInputKeysError,
    MissingOutputKeysError,
    OptionsError,
    OptionsTypeError,
    OutputNotStringError,
    SingleKeyError,
)
from chainkit.chains.llm import LLMChain
from chainkit.chains.sequential import SequentialChain, SimpleSequentialChain

__all__ = [
    "Chain",
    "ChainKeyError",
    "ChainWiringError",
    "InputsTypeError",
    "LLMChain",
    "MissingInputKeysError",
    "MissingOutputKeysError",
    "OptionsError",
    "OptionsTypeError",
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
