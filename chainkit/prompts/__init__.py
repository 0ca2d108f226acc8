"""Prompt templates: text and chat templates with named variables.

f-string templates accept plain `{name}` fields only; jinja2 templates render in a sandbox,
each rendering within a TemplateLimits budget, and jinja2 is imported only when a jinja2
template is built.
"""

from chainkit.prompts.base import BasePromptTemplate
from chainkit.prompts.chat import ChatPromptTemplate, MessageLike
from chainkit.prompts.chat_template import CHAT_TEMPLATES, render_chat
from chainkit.prompts.errors import PromptAttributeError, PromptError, PromptTypeError
from chainkit.prompts.limits import TemplateLimits
from chainkit.prompts.placeholder import MessagesPlaceholder
from chainkit.prompts.template import PromptTemplate, TemplateFormat

__all__ = [
    "CHAT_TEMPLATES",
    "BasePromptTemplate",
    "ChatPromptTemplate",
    "MessageLike",
    "MessagesPlaceholder",
    "PromptAttributeError",
    "PromptError",
    "PromptTemplate",
    "PromptTypeError",
    "TemplateFormat",
    "TemplateLimits",
    "render_chat",
]
