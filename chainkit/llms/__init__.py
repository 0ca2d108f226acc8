"""Models: the `Model` contract, the FakeLLM test double, and backends."""

from chainkit.llms.fake import FakeCall, FakeLLM, FakeLLMExhaustedError
from chainkit.llms.model import BaseModel, Model, StreamingFunc, acall, call
from chainkit.llms.offline import OfflineModel

__all__ = [
    "BaseModel",
    "FakeCall",
    "FakeLLM",
    "FakeLLMExhaustedError",
    "Model",
    "OfflineModel",
    "StreamingFunc",
    "acall",
    "call",
]
