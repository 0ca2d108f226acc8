"""Whether a memory fits the prompt it fills: the prompt reads every variable the memory
loads, and a history given as messages does not go into a text template (which would write
out their Python reprs). Checked when a chain is built, before the first call."""

from __future__ import annotations

from collections.abc import Collection

from chainkit.chains.errors import ChainWiringError
from chainkit.prompts import BasePromptTemplate, PromptTemplate
from chainkit.schema import Memory


def check_memory_fits(
    memory: Memory, variables: Collection[str], prompt: BasePromptTemplate | None
) -> None:
    """Raises ChainWiringError naming the key to add when the chain, which reads `variables`,
    would leave out what `memory` loads, or when `prompt` is a text template and the memory
    gives messages."""
    unread = [v for v in memory.memory_variables if v not in variables]
    if unread:
        # History loaded and then silently left out of the prompt is worse than an error.
        raise ChainWiringError(
            f"the prompt does not use memory variable(s) {unread}; its variables are "
            f"{sorted(variables)}. Add {{{unread[0]}}} to the prompt (or "
            f"MessagesPlaceholder({unread[0]!r}) to a chat prompt), or name the memory's key "
            "after one of its variables"
        )
    if getattr(memory, "return_messages", False) is True and takes_text(prompt):
        key = memory.memory_variables[0]
        raise ChainWiringError(
            f"the memory gives its history as messages (return_messages=True), which the "
            f"f-string PromptTemplate would write out as their Python reprs: give it "
            f"return_messages=False for the history as text, or use a ChatPromptTemplate "
            f"with MessagesPlaceholder({key!r})"
        )


def takes_text(prompt: BasePromptTemplate | None) -> bool:
    """Whether `prompt` writes its variables into one text (an f-string PromptTemplate; a
    jinja2 template may loop over messages), so a history must come to it as text. The first
    history is an empty list, which would read as "[]": this is found when a chain is built."""
    return isinstance(prompt, PromptTemplate) and prompt.template_format == "f-string"
