"""Chains: one contract, `_call(inputs) -> outputs`, and the functions to run them.

The errors of this package all report a mistake in the caller's code or settings (keys that
do not fit, an option of the wrong type): they are in `chainkit.chains.errors`.
"""

import typing

from chainkit._lazy import lazy_exports as _lazy_exports
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
from chainkit.chains.errors import (
    AllStepsFailedError,
    CitationError,
    InventedCitationError,
    UncitedAnswerError,
)
from chainkit.chains.history import SessionChain, WithHistory, with_history
from chainkit.chains.llm import LLMChain
from chainkit.chains.pipeline import Pipeline, pipe
from chainkit.chains.sequential import SequentialChain, SimpleSequentialChain
from chainkit.chains.steps import assign, branch, fallbacks, pick, retry, step
from chainkit.chains.stream import AsyncEventStream, EventStream, astream, stream

if typing.TYPE_CHECKING:
    from chainkit.chains.answer import AnswerChain, answer_chain

# Loaded on first use: a chain that answers from no documents pays nothing for documents,
# indexes and retrievers.
__getattr__, __dir__ = _lazy_exports(
    "chainkit.chains",
    dict.fromkeys(("AnswerChain", "answer_chain"), "chainkit.chains.answer"),
    globals(),
)

__all__ = [
    "AllStepsFailedError",
    "AnswerChain",
    "AsyncEventStream",
    "Chain",
    "CitationError",
    "EventStream",
    "InventedCitationError",
    "LLMChain",
    "Pipeline",
    "SequentialChain",
    "SessionChain",
    "SimpleSequentialChain",
    "UncitedAnswerError",
    "WithHistory",
    "abatch",
    "acall",
    "answer_chain",
    "apredict",
    "aresume",
    "arun",
    "assign",
    "astream",
    "batch",
    "branch",
    "call",
    "fallbacks",
    "pick",
    "pipe",
    "predict",
    "resume",
    "retry",
    "run",
    "step",
    "stream",
    "with_history",
]
