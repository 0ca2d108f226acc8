"""What the tests share, one module per thing:

- servers on 127.0.0.1: `openai_server` (an OpenAI-compatible server in a thread),
  `mcp_server` and `mcp_legacy_server` (MCP servers run as processes, by path),
  `mcp_status_server` (an MCP server answering with an HTTP error status on request),
  `mcp_server_process` (starting and stopping an MCP server process over HTTP),
  `idle_reset_proxy` (a proxy that resets a connection left idle);
- factories the CLI loads by name: `batch_factories` (`chainkit batch --agent`) and
  `mcp_serve_factories` (`chainkit mcp-serve`);
- `event_recorder` (the handler that records every callback event), `tool_catalog`
  (generated catalogs for tool retrieval), `chat_templates` (real models' chat templates,
  from a package on PyPI);
- `stub_tools` (tools with a fixed behaviour: one `Echo`), `stub_chains` (the base of the
  tests' own chains), `concurrency_peak` (how much runs at once);
- `modes`: the one sync/async parametrization, the `mode` fixture of tests/conftest.py;
- checks: `named_errors` (every error chainkit raises is a ChainkitError, autouse) and
  `typecheck` (mypy --strict on a user's file).
"""
