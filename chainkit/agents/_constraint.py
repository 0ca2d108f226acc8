"""Constrained decoding for an agent: the checks of its settings (`constrain=`, the request
field its grammar goes in, and `answer_after=`), and the error for a server that refuses
that field.

Servers name the field differently: llama.cpp's server (`llama-server`, and
`llama-cpp-python[server]`) takes a GBNF grammar in `grammar`; vLLM takes it in
`structured_outputs.grammar` (formerly `guided_grammar`, which 0.12 removed). A dotted name
is a field inside another.
"""

from __future__ import annotations

import re

from chainkit._text import described
from chainkit.agents.errors import AgentConfigError, AgentTypeError, ConstraintRefusedError
from chainkit.llms import ModelStatusError

_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*+(?:\.[A-Za-z_][A-Za-z0-9_-]*+)*+")


def check_field(field: object) -> str | None:
    """`field`, the request field a grammar goes in, once checked; None leaves decoding free."""
    if field is None:
        return None
    if not isinstance(field, str):
        raise AgentTypeError(
            f"constrain must be the request field the grammar goes in ('grammar' for "
            f"llama.cpp's server, 'structured_outputs.grammar' for vLLM) or None, got "
            f"{described(field)}"
        )
    if not _FIELD.fullmatch(field):
        raise AgentConfigError(
            f"constrain={field!r} is not a request field name: give names of letters, digits, "
            "'_' and '-', separated by dots for a field inside another "
            "('structured_outputs.grammar')"
        )
    return field


def check_answer_after(value: object) -> int:
    """`value`, the tool calls after which a constrained agent must answer, once checked."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise AgentTypeError(
            f"answer_after must be a whole number of tool calls, 1 or more, got {described(value)}"
        )
    if value < 1:
        raise AgentConfigError(f"answer_after must be at least 1, got {value}")
    return value


def refused(error: ModelStatusError, field: str) -> ConstraintRefusedError | None:
    """The error for a server that refused a request carrying a grammar in `field`; None when
    `error` is no refusal of that field (`ModelStatusError.refuses`: a server error, a rate
    limit, a refusal of something else)."""
    if not error.refuses(field):
        return None
    return ConstraintRefusedError(
        f"the server refused a request that carried a grammar in {field!r} (the agent's "
        f"constrain={field!r}): {error}. Leave constrain out for a server that does not "
        "constrain decoding (the OpenAI API does not), or give the field this server takes "
        "('grammar' for llama.cpp's server, 'structured_outputs.grammar' for vLLM)"
    )
