"""chainkit tools for the MCP round trip: served by
`chainkit mcp-serve tests.support.mcp_serve_factories:…` and loaded back with MCPTools, they
must behave like these originals."""

from __future__ import annotations

from typing import Literal

from chainkit import agents, llms, tools


@tools.tool
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """Current weather (天气) for a city.

    Args:
        city: the city name, e.g. 北京
    """
    return f"{city}: 21 {unit}, sunny"


@tools.tool
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@tools.tool
async def shout(text: str) -> str:
    """Upper-cases the text."""
    return text.upper()


@tools.tool
def refuse(reason: str) -> str:
    """Always refuses, saying why."""
    raise tools.ToolError(f"refused: {reason}")


@tools.tool
def crash() -> str:
    """Fails with an exception that is not a ToolError."""
    raise KeyError("missing")


@tools.tool
def chatter(text: str) -> str:
    """Prints the text on stdout, and returns it."""
    print(f"chatter says {text}")  # served over stdio, this must not reach the protocol
    return text


class Reverse(tools.Tool):
    name = "reverse"
    description = "Reverses its input text."

    def call(self, input: str) -> str:
        return input[::-1]


def make_tools() -> list[tools.Tool]:
    return [get_weather, add, shout, refuse, crash, chatter, Reverse(), tools.Calculator()]


def make_agent() -> agents.OneShotAgent:
    return agents.OneShotAgent(llms.FakeLLM([]), [Reverse(), add])


def make_number() -> int:
    return 42


def make_duplicates() -> list[tools.Tool]:
    return [Reverse(), Reverse()]


def make_noisy() -> list[tools.Tool]:
    print("building the tools")  # over stdio, this must not reach the protocol's stdout
    return [Reverse()]


class Shouted(Reverse):
    name = "REVERSE"


def make_case_clash() -> list[tools.Tool]:
    return [Reverse(), Shouted()]


class Tally(tools.Tool):
    """A tool that returns a dict, as code typed loosely does: its output is sent as JSON."""

    name = "tally"
    description = "Counts the words of its input."

    def call(self, input: str) -> str:
        count: object = {"words": len(input.split()), "单位": "个"}
        return count  # type: ignore[return-value]


def make_tally() -> list[tools.Tool]:
    return [Tally()]
