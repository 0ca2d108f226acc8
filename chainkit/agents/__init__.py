"""Agents: the MRKL OneShotAgent, the native ToolCallingAgent, and the Executor that runs them."""

from chainkit.agents.agent import Agent
from chainkit.agents.approval import ApprovalRequest, Approve, Deny, Edit, PendingApproval
from chainkit.agents.base import BaseAgent, Constraint, PlanRequest, check_tools
from chainkit.agents.error_handler import ParserErrorHandler
from chainkit.agents.errors import (
    AgentConfigError,
    AgentTypeError,
    ConstraintRefusedError,
    DeadlineExceededError,
    NoReturnError,
    NotFinishedError,
    OutputParserError,
    UnknownToolError,
)
from chainkit.agents.executor import Executor
from chainkit.agents.interrupts import InputRequest, interrupt
from chainkit.agents.mrkl import OneShotAgent, create_mrkl_prompt
from chainkit.agents.mrkl_parser import parse_mrkl_output
from chainkit.agents.tool_calling import ToolCallingAgent

__all__ = [
    "Agent",
    "AgentConfigError",
    "AgentTypeError",
    "ApprovalRequest",
    "Approve",
    "BaseAgent",
    "Constraint",
    "ConstraintRefusedError",
    "DeadlineExceededError",
    "Deny",
    "Edit",
    "Executor",
    "InputRequest",
    "NoReturnError",
    "NotFinishedError",
    "OneShotAgent",
    "OutputParserError",
    "ParserErrorHandler",
    "PendingApproval",
    "PlanRequest",
    "ToolCallingAgent",
    "UnknownToolError",
    "check_tools",
    "create_mrkl_prompt",
    "interrupt",
    "parse_mrkl_output",
]
