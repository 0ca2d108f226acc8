"""Decoding the JSON arguments of a tool call, with one wording for what is wrong with them,
and the arguments a blank text input stands for, alike for every kind of tool."""

from __future__ import annotations

import json
import sys

from chainkit.tools._schema_text import properties, required, takes_one_string
from chainkit.tools.errors import MalformedJSONError as MalformedJSONError

# The text around a JSON error, mostly before it: what precedes the error usually caused it.
_BEFORE_ERROR = 20
_AFTER_ERROR = 10


def decode_json(text: str) -> object:
    """The JSON value `text` holds; MalformedJSONError when it holds none."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        near = text[max(error.pos - _BEFORE_ERROR, 0) : error.pos + _AFTER_ERROR]
        raise MalformedJSONError(
            f"not valid JSON at position {error.pos} ({error.msg}), near {near!r}"
        ) from None
    except RecursionError:
        raise MalformedJSONError("not valid JSON: nested too deeply") from None
    except ValueError:  # an integer longer than Python turns into a number
        raise MalformedJSONError(
            f"not valid JSON: a number has more than {sys.get_int_max_str_digits()} digits"
        ) from None


def blank_input_arguments(schema: object, text: str) -> dict[str, object]:
    """The arguments blank `text` (an empty Action Input) stands for: `text` itself when the
    schema's one field is a string it requires, as a plain Tool's `call` gets its input;
    else no arguments, so that defaults apply."""
    needed = required(schema)
    if takes_one_string(schema) and needed == list(properties(schema)):
        return {needed[0]: text}
    return {}
