"""Prompt templates: text and chat templates with named variables.

f-string templates accept plain `{name}` fields only; jinja2 templates render in a sandbox,
each rendering within a TemplateLimits budget, and jinja2 is imported only when a jinja2
template is built. Every error of this package is in `chainkit.prompts.errors`.
"""

from chainkit.prompts import errors as errors
from chainkit.prompts.base import BasePromptTemplate
from chainkit.prompts.chat import ChatPromptTemplate
from chainkit.prompts.chat_template import render_chat
from chainkit.prompts.errors import PromptError
from chainkit.prompts.limits import TemplateLimits
from chainkit.prompts.placeholder import MessagesPlaceholder
from chainkit.prompts.template import PromptTemplate

__all__ = [
    "BasePromptTemplate",
    "ChatPromptTemplate",
    "MessagesPlaceholder",
    "PromptError",
    "PromptTemplate",
    "TemplateLimits",
    "render_chat",
]
