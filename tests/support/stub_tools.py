"""Tools with a fixed behaviour, for tests that need a tool to call."""

from chainkit import tools


class Echo(tools.Tool):
    """Answers "echo: <input>" and keeps every input it was called with."""

    name = "echo"
    description = "repeats its input"

    def __init__(self) -> None:
        self.inputs: list[str] = []

    def call(self, input: str) -> str:
        self.inputs.append(input)
        return f"echo: {input}"


def named(tool_name, result, direct=False):
    """A tool called `tool_name` that answers `result`, returning it directly if `direct`."""

    class Named(tools.Tool):
        name = tool_name
        description = tool_name
        return_direct = direct

        def call(self, input):
            return result

    return Named()
