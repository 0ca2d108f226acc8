"""Callbacks observe a run: what went into the model, what it chose, what the tools returned.

Every event belongs to a run: `current_run()`, called in a handler method, says which. The
current run and the active handlers are carried by context variables, into threads started
by chainkit and asyncio tasks alike, and into a pool of your own if it is a
`ContextThreadPoolExecutor`.
"""

from chainkit.callbacks.combining import CombiningHandler, Handlers, guard, join
from chainkit.callbacks.errors import (
    HandlerConfigError,
    HandlerDependencyError,
    HandlerTypeError,
    StreamClosed,
    TraceFormatError,
)
from chainkit.callbacks.events import Event, EventHandler
from chainkit.callbacks.final_answer import AnswerRestart, FinalAnswerStream
from chainkit.callbacks.handler import Handler
from chainkit.callbacks.log import LogHandler
from chainkit.callbacks.observed import Observed
from chainkit.callbacks.otel import OpenTelemetryHandler
from chainkit.callbacks.run import Run, RunInfo, RunKind, current_run
from chainkit.callbacks.threads import ContextThreadPoolExecutor
from chainkit.callbacks.trace_file import TraceFile
from chainkit.callbacks.usage import ModelUsage, Prices, UsageTotals

__all__ = [
    "AnswerRestart",
    "CombiningHandler",
    "ContextThreadPoolExecutor",
    "Event",
    "EventHandler",
    "FinalAnswerStream",
    "Handler",
    "HandlerConfigError",
    "HandlerDependencyError",
    "HandlerTypeError",
    "Handlers",
    "LogHandler",
    "ModelUsage",
    "Observed",
    "OpenTelemetryHandler",
    "Prices",
    "Run",
    "RunInfo",
    "RunKind",
    "StreamClosed",
    "TraceFile",
    "TraceFormatError",
    "UsageTotals",
    "current_run",
    "guard",
    "join",
]
