"""Time to connect to an MCP server over stdio and list its tools, against the protocol's part.

The server is `python -m chainkit mcp-serve chainkit.tools:builtin_tools`. Connecting starts
the process, initialises the session and lists the tools; over the open session the bench then
times listing the tools again (one tools/list round trip) and calling a tool, which show how
little of the connect time is the protocol: the rest is the server process starting. Reports
medians. Run from the repository root:

    python bench/bench_mcp_connect.py [--connects N] [--calls N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chainkit import tools

ROOT = Path(__file__).resolve().parent.parent
SERVER = [sys.executable, "-m", "chainkit", "mcp-serve", "chainkit.tools:builtin_tools"]


def connect() -> tuple[float, tools.MCPTools]:
    mcp_tools = tools.MCPTools(command=SERVER, env={"PYTHONPATH": str(ROOT)}, cwd=ROOT)
    started = time.perf_counter()
    mcp_tools.__enter__()
    elapsed = time.perf_counter() - started
    assert len(mcp_tools.tools) == 3
    return elapsed, mcp_tools


def timed(action: object, times: int) -> float:
    assert callable(action)
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connects", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    connects = []
    for _ in range(args.connects):
        elapsed, mcp_tools = connect()
        mcp_tools.close()
        connects.append(elapsed)
    _, mcp_tools = connect()
    try:
        calculator = next(tool for tool in mcp_tools if tool.name == "calculator")
        listing = timed(mcp_tools.refresh, args.calls)
        call = timed(lambda: calculator.call("6 * 7"), args.calls)
    finally:
        mcp_tools.close()
    print(f"connect + initialise + list tools (stdio): {statistics.median(connects) * 1000:.0f} ms")
    print(f"list tools again on the open session:      {listing * 1000:.2f} ms")
    print(f"one tool call on the open session:         {call * 1000:.2f} ms")


if __name__ == "__main__":
    main()
