"""The one kind of value a text template refuses to write: messages, whose text would be
their Python reprs (`Message(role='user', ...)`), sent to the model as if they were the
conversation. A chat history held as messages goes into a chat prompt's placeholder."""

from __future__ import annotations

from chainkit.prompts.errors import PromptError
from chainkit.schema import AgenticMessage, Message


def holds_messages(value: object) -> bool:
    """Whether `value` is a message (Message, AgenticMessage), or a list or tuple holding one."""
    if isinstance(value, Message | AgenticMessage):
        return True
    return isinstance(value, list | tuple) and any(
        isinstance(item, Message | AgenticMessage) for item in value
    )


def messages_as_text(variable: str | None) -> PromptError:
    """The error for messages given to a text template (under `variable`, when known)."""
    name = "history" if variable is None else variable
    given = "a value" if variable is None else f"template variable {variable!r}"
    return PromptError(
        f"{given} holds messages, which a text template would write out as their Python "
        "reprs: give the memory (a ConversationBuffer, a window, a summary) "
        "return_messages=False to have the history as readable text; or keep the messages "
        f"and use a ChatPromptTemplate with MessagesPlaceholder({name!r}) where they go",
        variable=variable,
    )
