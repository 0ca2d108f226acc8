"""Agents: the MRKL OneShotAgent, the native ToolCallingAgent, and the Executor that runs them.

Errors a run ends with are exported here; every error of this package, those that report a
mistake in the caller's code or settings included, is in `chainkit.agents.errors`.
"""

from chainkit.agents import errors as errors
from chainkit.agents.agent import Agent
from chainkit.agents.approval import (
    ApprovalRequest,
    Approve,
    Approver,
    Decision,
    Deny,
    Edit,
    PendingApproval,
)
from chainkit.agents.base import BaseAgent, PlanRequest
from chainkit.agents.error_handler import ParserErrorHandler
from chainkit.agents.errors import (
    ConstraintRefusedError,
    DeadlineExceededError,
    NotFinishedError,
    OutputParserError,
)
from chainkit.agents.executor import Executor
from chainkit.agents.interrupts import InputRequest, interrupt
from chainkit.agents.mrkl import OneShotAgent
from chainkit.agents.tool_calling import ToolCallingAgent

__all__ = [
    "Agent",
    "ApprovalRequest",
    "Approve",
    "Approver",
    "BaseAgent",
    "ConstraintRefusedError",
    "DeadlineExceededError",
    "Decision",
    "Deny",
    "Edit",
    "Executor",
    "InputRequest",
    "NotFinishedError",
    "OneShotAgent",
    "OutputParserError",
    "ParserErrorHandler",
    "PendingApproval",
    "PlanRequest",
    "ToolCallingAgent",
    "interrupt",
]
