"""UsageTotals: the tokens a run's model calls used, by model, and their cost at given prices."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from chainkit._text import counted
from chainkit.callbacks.errors import HandlerConfigError, HandlerTypeError
from chainkit.callbacks.handler import Handler
from chainkit.callbacks.run import current_run
from chainkit.schema import Message, TokenUsage

Prices = Mapping[str, tuple[float, float]]
"""Per model name: US dollars (or any currency) per million input tokens and per million
output tokens, as providers list them: `{"gpt-4o-mini": (0.15, 0.60)}`."""

_MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """What one model's calls used: `calls` (replies heard), `input_tokens` and
    `output_tokens` (the prompt and completion counts the server reported), and `unreported`
    (replies that came without usage, which the counts therefore miss).

    Replies a response cache gave (`response_meta.cached`) cost nothing and count apart:
    `cache_hits`, with the tokens their first answer used as `cached_input_tokens` and
    `cached_output_tokens` (what the cache saved)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    unreported: int = 0
    cache_hits: int = 0
    cached_input_tokens: int = 0
    cached_output_tokens: int = 0

    def plus(self, other: ModelUsage) -> ModelUsage:
        return ModelUsage(
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.unreported + other.unreported,
            self.cache_hits + other.cache_hits,
            self.cached_input_tokens + other.cached_input_tokens,
            self.cached_output_tokens + other.cached_output_tokens,
        )


class UsageTotals(Handler):
    """A handler that sums the token usage of every model reply it hears, by model: give one
    to a run (`chains.run(agent, question, callbacks=totals)`) and read `totals.models` after
    it, as LangChain's `get_openai_callback()` is used. It hears the runs inside too: tools'
    agents, a batch's items, streamed replies (the OpenAI backend asks for their usage).
    Safe to share between threads and tasks.

    A model is named as its run is: the name it was called by (`llms.OpenAI("gpt-4o-mini")`
    counts under "gpt-4o-mini", even when the server answers as "gpt-4o-mini-2024-07-18").
    With `prices` (see `Prices`), `cost()` is what the calls cost; a model without a price, or
    with replies that came without usage (`ModelUsage.unreported`), has no cost (None), never
    a guess, and neither then has the total.
    """

    def __init__(self, prices: Prices | None = None) -> None:
        self.prices: dict[str, tuple[float, float]] = _checked_prices(prices or {})
        self._models: dict[str, ModelUsage] = {}
        self._lock = threading.Lock()

    def handle_llm_end(self, message: Message) -> None:
        run = current_run()
        meta = message.response_meta
        name = run.name if run is not None else (meta.model if meta is not None else None)
        usage = meta.usage if meta is not None else None
        if meta is not None and meta.cached:
            self.add(name or "unknown", _from_cache(usage))
        elif usage is None:
            self.add(name or "unknown", ModelUsage(calls=1, unreported=1))
        else:
            self.add(name or "unknown", ModelUsage(1, usage.prompt_tokens, usage.completion_tokens))

    def add(self, model: str, usage: ModelUsage) -> None:
        """Counts `usage` for `model`: what `handle_llm_end` does with each reply, and how a
        total of totals is made (a batch job sums its runs' this way)."""
        with self._lock:
            self._models[model] = self._models.get(model, ModelUsage()).plus(usage)

    @property
    def models(self) -> dict[str, ModelUsage]:
        """The usage so far, by model name, in the order the models were first heard."""
        with self._lock:
            return dict(self._models)

    @property
    def input_tokens(self) -> int:
        return sum(usage.input_tokens for usage in self.models.values())

    @property
    def output_tokens(self) -> int:
        return sum(usage.output_tokens for usage in self.models.values())

    def cost(self, model: str | None = None) -> float | None:
        """What `model`'s calls cost (all models' when None) at `prices`; None when a model
        that was called has no price."""
        models = self.models
        if model is not None:
            models = {model: models.get(model, ModelUsage())}
        total = 0.0
        for name, usage in models.items():
            if usage.cache_hits and not usage.calls:
                continue  # answered from a cache alone: nothing paid, whatever the price
            price = self.prices.get(name)
            if price is None or usage.unreported:
                return None
            total += (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / _MILLION
        return total

    def summary(self) -> str:
        """One line per model, and the cost when every model has a price: what
        `chainkit run -v` and `chainkit batch` print."""
        models = self.models
        if not models:
            return "no model calls"
        lines = [f"{name}: {_described(usage, self.cost(name))}" for name, usage in models.items()]
        cost = self.cost()
        if cost is not None and len(models) > 1:
            lines.append(f"total cost: {_money(cost)}")
        return "\n".join(lines)


def _from_cache(usage: TokenUsage | None) -> ModelUsage:
    """A reply from a response cache, with the tokens its first answer used (None: unknown)."""
    if usage is None:
        return ModelUsage(cache_hits=1)
    return ModelUsage(
        cache_hits=1,
        cached_input_tokens=usage.prompt_tokens,
        cached_output_tokens=usage.completion_tokens,
    )


def _described(usage: ModelUsage, cost: float | None) -> str:
    text = (
        f"{counted(usage.calls, 'call')}, {counted(usage.input_tokens, 'token')} in, "
        f"{usage.output_tokens:,} out"
    )
    if usage.unreported:
        text += f" ({usage.unreported} without usage, not counted)"
    if usage.cache_hits:
        text += (
            f", {counted(usage.cache_hits, 'reply')} from the cache "
            f"({usage.cached_input_tokens:,} in, {usage.cached_output_tokens:,} out, not paid)"
        )
    if cost is not None:
        text += f", cost {_money(cost)}"
    return text


def _money(amount: float) -> str:
    return f"{amount:.10f}".rstrip("0").rstrip(".") if amount else "0"


def _checked_prices(prices: object) -> dict[str, tuple[float, float]]:
    if not isinstance(prices, Mapping):
        raise HandlerTypeError(
            "prices must map model names to (input, output) prices per million tokens, such "
            f'as {{"gpt-4o-mini": (0.15, 0.60)}}, got {type(prices).__name__}'
        )
    checked: dict[str, tuple[float, float]] = {}
    for model, price in prices.items():
        if not (
            isinstance(model, str)
            and isinstance(price, tuple | list)
            and len(price) == 2
            and all(_is_amount(amount) for amount in price)
        ):
            raise HandlerConfigError(
                f"prices[{model!r}] must be two amounts, 0 or more: the price of a million "
                f"input tokens and of a million output tokens, got {price!r}"
            )
        checked[model] = (float(price[0]), float(price[1]))
    return checked


def _is_amount(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
