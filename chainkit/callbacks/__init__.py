"""Callbacks observe a run: what went into the model, what it chose, what the tools returned.

Every event belongs to a run: `current_run()`, called in a handler method, says which. The
current run and the active handlers are carried by context variables, into threads started
by chainkit and asyncio tasks alike, and into a pool of your own if it is a
`ContextThreadPoolExecutor`. Every error of this package is in `chainkit.callbacks.errors`.
"""

from chainkit.callbacks import errors as errors
from chainkit.callbacks.combining import Handlers
from chainkit.callbacks.errors import StreamClosed, TraceFormatError
from chainkit.callbacks.events import Event, EventHandler
from chainkit.callbacks.final_answer import AnswerRestart, FinalAnswerStream
from chainkit.callbacks.handler import Handler
from chainkit.callbacks.log import LogHandler
from chainkit.callbacks.otel import OpenTelemetryHandler
from chainkit.callbacks.run import RunInfo, current_run
from chainkit.callbacks.threads import ContextThreadPoolExecutor
from chainkit.callbacks.trace_file import TraceFile
from chainkit.callbacks.usage import ModelUsage, Prices, UsageTotals

__all__ = [
    "AnswerRestart",
    "ContextThreadPoolExecutor",
    "Event",
    "EventHandler",
    "FinalAnswerStream",
    "Handler",
    "Handlers",
    "LogHandler",
    "ModelUsage",
    "OpenTelemetryHandler",
    "Prices",
    "RunInfo",
    "StreamClosed",
    "TraceFile",
    "TraceFormatError",
    "UsageTotals",
    "current_run",
]
