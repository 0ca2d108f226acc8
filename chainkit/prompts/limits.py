"""TemplateLimits: the budget one rendering of a jinja2 template may spend.

A template may come from outside (a model's chat template, a prompt stored by a user), and a
one-line template can ask for years of CPU or terabytes of memory. Each rendering therefore
gets a budget; when it runs out, the rendering stops with a PromptError naming the limit.
The defaults leave room for any real prompt and stop a hostile template within a second or
two, holding at most a few hundred MB.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from chainkit.prompts.errors import PromptError, PromptTypeError


@dataclass(frozen=True, slots=True)
class TemplateLimits:
    """How much one rendering of a jinja2 template may do.

    - `max_steps`: template operations. Each loop iteration, macro or block call costs the
      operations in its body; a call, filter, attribute lookup or comparison costs a few more.
      Real chat templates spend 200 to 450 steps per message; gpt-oss's, which looks ahead
      from each tool call, more as the conversation grows (2.7 million for 1,000 messages).
    - `max_chars`: characters built, copied, scanned or turned into text in all (strings
      joined, lists sorted, values printed, JSON written, ...); an item of a list or dict
      counts as 8, the memory it takes. It bounds the time spent on data and the memory a
      rendering can hold. Real chat templates spend 3 to 5 per character of a long prompt.
    - `max_length`: characters of the output, and of any one string (or items of any one
      list) the template builds on the way.
    - `max_int_digits`: decimal digits of any integer the template computes.
    """

    max_steps: int = 6_000_000
    max_chars: int = 40_000_000
    max_length: int = 8_000_000
    max_int_digits: int = 10_000

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise PromptTypeError(
                    f"TemplateLimits.{field.name} must be an int, got {type(value).__name__}"
                )
            if value < 1:
                raise PromptError(f"TemplateLimits.{field.name} must be at least 1, got {value}")


DEFAULT_LIMITS = TemplateLimits()


def checked_limits(limits: TemplateLimits | None) -> TemplateLimits:
    """`limits`, or the defaults for None; TypeError for anything else."""
    if limits is None:
        return DEFAULT_LIMITS
    if not isinstance(limits, TemplateLimits):
        raise PromptTypeError(
            f"limits must be a prompts.TemplateLimits, got {type(limits).__name__}"
        )
    return limits
