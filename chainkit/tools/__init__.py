"""Tools an agent can call: subclass `Tool`, or decorate a typed function with `@tool`."""

from chainkit.tools.base import Tool, ToolError
from chainkit.tools.calculator import Calculator
from chainkit.tools.current_time import CurrentTime
from chainkit.tools.random_number import RandomNumber
from chainkit.tools.structured import InvalidArgumentsError, StructuredTool, tool

__all__ = [
    "Calculator",
    "CurrentTime",
    "InvalidArgumentsError",
    "RandomNumber",
    "StructuredTool",
    "Tool",
    "ToolError",
    "tool",
]
