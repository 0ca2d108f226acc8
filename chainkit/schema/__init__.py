"""Plain data types shared by every part of chainkit. Imports nothing else from chainkit.

Every error of this package is in `chainkit.schema.errors`.
"""

from chainkit.schema import errors as errors
from chainkit.schema.agent import AgentAction, AgentFinish, AgentStep
from chainkit.schema.agentic import (
    AgenticMessage,
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    Reasoning,
    UserInputFile,
    UserInputImage,
    UserInputText,
)
from chainkit.schema.convert import from_agentic, to_agentic
from chainkit.schema.errors import MessageFormatError
from chainkit.schema.memory import Memory
from chainkit.schema.message import (
    FilePart,
    FunctionCall,
    ImagePart,
    Message,
    TextPart,
    TokenUsage,
    ToolCall,
)
from chainkit.schema.output_parser import OutputParser
from chainkit.schema.tool import ToolInfo

__all__ = [
    "AgentAction",
    "AgentFinish",
    "AgentStep",
    "AgenticMessage",
    "AssistantGenText",
    "FilePart",
    "FunctionCall",
    "FunctionToolCall",
    "FunctionToolResult",
    "ImagePart",
    "Memory",
    "Message",
    "MessageFormatError",
    "OutputParser",
    "Reasoning",
    "TextPart",
    "TokenUsage",
    "ToolCall",
    "ToolInfo",
    "UserInputFile",
    "UserInputImage",
    "UserInputText",
    "from_agentic",
    "to_agentic",
]
