"""Models: the `Model` contract, the FakeLLM test double, the offline model, and the
OpenAI-compatible backend (which imports openai only when it first sends a request)."""

from chainkit.llms._retry import Backoff
from chainkit.llms.embeddings import OpenAIEmbeddings
from chainkit.llms.errors import (
    ModelConfigError,
    ModelConnectionError,
    ModelError,
    ModelReplyShapeError,
    ModelResponseError,
    ModelStatusError,
    ModelTimeoutError,
)
from chainkit.llms.fake import FakeCall, FakeLLM, FakeLLMExhaustedError
from chainkit.llms.model import BaseModel, Model, ModelRequest, StreamingFunc, acall, call
from chainkit.llms.offline import OfflineModel
from chainkit.llms.openai import OpenAI

__all__ = [
    "Backoff",
    "BaseModel",
    "FakeCall",
    "FakeLLM",
    "FakeLLMExhaustedError",
    "Model",
    "ModelConfigError",
    "ModelConnectionError",
    "ModelError",
    "ModelReplyShapeError",
    "ModelRequest",
    "ModelResponseError",
    "ModelStatusError",
    "ModelTimeoutError",
    "OfflineModel",
    "OpenAI",
    "OpenAIEmbeddings",
    "StreamingFunc",
    "acall",
    "call",
]
