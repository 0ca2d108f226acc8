"""Model Context Protocol: MCP servers' tools as chainkit tools, and chainkit tools served over MCP.

`chainkit.tools` exports the public names lazily; nothing here imports the `mcp` package until a
session connects or a server starts.
"""
