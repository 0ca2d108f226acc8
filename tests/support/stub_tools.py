"""Tools that answer a fixed text, for agent tests that need a tool by name."""

from chainkit import tools


def named(tool_name, result, direct=False):
    class Named(tools.Tool):
        name = tool_name
        description = tool_name
        return_direct = direct

        def call(self, input):
            return result

    return Named()
