"""Models: the `Model` contract, the FakeLLM test double, the offline model, and the
OpenAI-compatible backend (which imports openai only when it first sends a request).

Errors a model call fails with are exported here; every error of this package, those that
report a mistake in the caller's code or settings included, is in `chainkit.llms.errors`.
"""

import typing

from chainkit._lazy import lazy_exports as _lazy_exports
from chainkit.llms import errors as errors
from chainkit.llms.cache import CachedReply, CacheStats, InMemoryCache, ResponseCache, set_cache
from chainkit.llms.cached_embeddings import CachedEmbeddings
from chainkit.llms.embedding_cache import EmbeddingCache, InMemoryEmbeddingCache
from chainkit.llms.errors import (
    AllModelsFailedError,
    ModelConnectionError,
    ModelError,
    ModelRefusalError,
    ModelResponseError,
    ModelStatusError,
    ModelTimeoutError,
    OutputValidationError,
)
from chainkit.llms.fake import FakeLLM
from chainkit.llms.model import BaseModel, Model, ModelRequest, acall, call
from chainkit.llms.options import CallOptions, DefaultOptions
from chainkit.llms.structured import ObjectResult, PartialFunc, agenerate_object, generate_object

if typing.TYPE_CHECKING:
    from chainkit.llms.fallbacks import Fallbacks
    from chainkit.llms.local_embeddings import LocalEmbeddings
    from chainkit.llms.offline.model import OfflineModel
    from chainkit.llms.openai.chat import OpenAI
    from chainkit.llms.openai.embeddings import OpenAIEmbeddings
    from chainkit.llms.rate_limit import RateLimiter
    from chainkit.llms.retry import Backoff
    from chainkit.llms.sql_cache import SQLCache
    from chainkit.llms.sql_embedding_cache import SQLEmbeddingCache

# Loaded on first use, so that chains, prompts and callbacks, which import the model
# contract from here, do not pay for the backends at import time.
_LAZY = {
    "Backoff": "chainkit.llms.retry",
    "Fallbacks": "chainkit.llms.fallbacks",
    "LocalEmbeddings": "chainkit.llms.local_embeddings",
    "OpenAIEmbeddings": "chainkit.llms.openai.embeddings",
    "OfflineModel": "chainkit.llms.offline.model",
    "OpenAI": "chainkit.llms.openai.chat",
    "RateLimiter": "chainkit.llms.rate_limit",
    "SQLCache": "chainkit.llms.sql_cache",
    "SQLEmbeddingCache": "chainkit.llms.sql_embedding_cache",
}


__getattr__, __dir__ = _lazy_exports("chainkit.llms", _LAZY, globals())


__all__ = [
    "AllModelsFailedError",
    "Backoff",
    "BaseModel",
    "CacheStats",
    "CachedEmbeddings",
    "CachedReply",
    "CallOptions",
    "DefaultOptions",
    "EmbeddingCache",
    "FakeLLM",
    "Fallbacks",
    "InMemoryCache",
    "InMemoryEmbeddingCache",
    "LocalEmbeddings",
    "Model",
    "ModelConnectionError",
    "ModelError",
    "ModelRefusalError",
    "ModelRequest",
    "ModelResponseError",
    "ModelStatusError",
    "ModelTimeoutError",
    "ObjectResult",
    "OfflineModel",
    "OpenAI",
    "OpenAIEmbeddings",
    "OutputValidationError",
    "PartialFunc",
    "RateLimiter",
    "ResponseCache",
    "SQLCache",
    "SQLEmbeddingCache",
    "acall",
    "agenerate_object",
    "call",
    "generate_object",
    "set_cache",
]
