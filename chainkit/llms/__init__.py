"""Models: the `Model` contract, the FakeLLM test double, the offline model, and the
OpenAI-compatible backend (which imports openai only when it first sends a request)."""

from typing import TYPE_CHECKING

from chainkit._lazy import lazy_exports
from chainkit.llms.errors import (
    AllModelsFailedError,
    FakeLLMExhaustedError,
    ModelAttributeError,
    ModelConfigError,
    ModelConnectionError,
    ModelError,
    ModelRefusalError,
    ModelReplyShapeError,
    ModelRequestError,
    ModelResponseError,
    ModelStatusError,
    ModelTimeoutError,
    ModelTypeError,
    OutputValidationError,
    RejectedOutput,
    UnknownOptionError,
)
from chainkit.llms.fake import FakeCall, FakeLLM
from chainkit.llms.model import BaseModel, Model, ModelRequest, acall, call
from chainkit.llms.options import CallOptions, DefaultOptions, StreamingFunc
from chainkit.llms.output_strategies import StrategyName
from chainkit.llms.structured import ObjectResult, PartialFunc, agenerate_object, generate_object

if TYPE_CHECKING:
    from chainkit.llms.fallbacks import Fallbacks
    from chainkit.llms.offline.model import OfflineModel
    from chainkit.llms.openai.chat import OpenAI
    from chainkit.llms.openai.embeddings import OpenAIEmbeddings
    from chainkit.llms.rate_limit import RateLimiter
    from chainkit.llms.retry import Backoff

# Loaded on first use, so that chains, prompts and callbacks, which import the model
# contract from here, do not pay for the backends at import time.
_LAZY = {
    "Backoff": "chainkit.llms.retry",
    "Fallbacks": "chainkit.llms.fallbacks",
    "OpenAIEmbeddings": "chainkit.llms.openai.embeddings",
    "OfflineModel": "chainkit.llms.offline.model",
    "OpenAI": "chainkit.llms.openai.chat",
    "RateLimiter": "chainkit.llms.rate_limit",
}


__getattr__, __dir__ = lazy_exports("chainkit.llms", _LAZY, globals())


__all__ = [
    "AllModelsFailedError",
    "Backoff",
    "BaseModel",
    "CallOptions",
    "DefaultOptions",
    "FakeCall",
    "FakeLLM",
    "FakeLLMExhaustedError",
    "Fallbacks",
    "Model",
    "ModelAttributeError",
    "ModelConfigError",
    "ModelConnectionError",
    "ModelError",
    "ModelRefusalError",
    "ModelReplyShapeError",
    "ModelRequest",
    "ModelRequestError",
    "ModelResponseError",
    "ModelStatusError",
    "ModelTimeoutError",
    "ModelTypeError",
    "ObjectResult",
    "OfflineModel",
    "OpenAI",
    "OpenAIEmbeddings",
    "OutputValidationError",
    "PartialFunc",
    "RateLimiter",
    "RejectedOutput",
    "StrategyName",
    "StreamingFunc",
    "UnknownOptionError",
    "acall",
    "agenerate_object",
    "call",
    "generate_object",
]
