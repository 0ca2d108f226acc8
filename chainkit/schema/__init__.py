"""Plain data types shared by every part of chainkit. Imports nothing else from chainkit."""

from chainkit.schema.agent import AgentAction, AgentFinish, AgentStep
from chainkit.schema.agentic import (
    AgenticMessage,
    AssistantGenText,
    ContentBlock,
    FunctionToolCall,
    FunctionToolResult,
    Reasoning,
    UserInputFile,
    UserInputImage,
    UserInputText,
)
from chainkit.schema.concat import concat_agentic_messages, concat_messages
from chainkit.schema.convert import (
    REASONING_SIGNATURE_KEY,
    from_agentic,
    to_agentic,
)
from chainkit.schema.errors import ConcatError, ConversionError, MessageFormatError
from chainkit.schema.memory import Memory
from chainkit.schema.message import (
    ROLES,
    ContentPart,
    FilePart,
    FunctionCall,
    ImagePart,
    Message,
    ResponseMeta,
    Role,
    TextPart,
    TokenUsage,
    ToolCall,
)
from chainkit.schema.output_parser import OutputParser
from chainkit.schema.tool import ToolInfo

__all__ = [
    "REASONING_SIGNATURE_KEY",
    "ROLES",
    "AgentAction",
    "AgentFinish",
    "AgentStep",
    "AgenticMessage",
    "AssistantGenText",
    "ConcatError",
    "ContentBlock",
    "ContentPart",
    "ConversionError",
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
    "ResponseMeta",
    "Role",
    "TextPart",
    "TokenUsage",
    "ToolCall",
    "ToolInfo",
    "UserInputFile",
    "UserInputImage",
    "UserInputText",
    "concat_agentic_messages",
    "concat_messages",
    "from_agentic",
    "to_agentic",
]
