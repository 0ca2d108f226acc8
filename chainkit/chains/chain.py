"""Chain: the one contract every chain shares, `_call(inputs) -> outputs`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chainkit._elsewhere import Elsewhere
from chainkit._pipe import Pipeable
from chainkit._stop import to_thread
from chainkit.callbacks.observed import Observed
from chainkit.chains.errors import ChainAttributeError, ChainTypeError
from chainkit.schema import Memory


@dataclass(frozen=True, slots=True)
class Resumption:
    """A stopped run, checked and held, ready to continue: its `inputs`, and how to continue
    it (`call`, or `acall` in async code); `release` lets it go without continuing."""

    inputs: dict[str, Any]
    call: Callable[[], dict[str, Any]]
    acall: Callable[[], Awaitable[dict[str, Any]]]
    release: Callable[[], None]


class Chain(Pipeable, Observed, ABC):
    """Base of every chain. A subclass implements `_call` (and `_acall` when it can wait
    natively); users call a chain through `chains.call` / `chains.run`, which make each call a
    run with memory, key checks and callbacks around `_call`.

    The options `_call` gets are `llms.CallOptions`, checked already; a chain passes them on to
    its model.
    """

    memory: Memory | None = None
    answer_key: str | None = None
    """The output that answers, for a chain that gives several (an answer chain's answer
    beside its documents): what `chains.run` and `predict` return and `with_history` keeps.
    None: a chain of one output gives it, one of several must be read with `chains.call`."""

    @property
    def output_not_text(self) -> str | None:
        """Why the chain's output is known, before it runs, not to be the text `chains.run`
        and `predict` return ("answers with Weather (its output_type)"), so that they refuse
        it at once; None when it may be text."""
        return None

    if not TYPE_CHECKING:  # to mypy they stay missing, so it flags them in user code
        invoke = Elsewhere(
            "use chains.call(chain, {...}) for the outputs dict, or chains.run(chain, input) for "
            "the one output of one input",
            ChainAttributeError,
        )
        ainvoke = Elsewhere("use await chains.acall(chain, {...})", ChainAttributeError)
        call = Elsewhere("use chains.call(chain, {...})", ChainAttributeError)
        acall = Elsewhere("use await chains.acall(chain, {...})", ChainAttributeError)
        run = Elsewhere("use chains.run(chain, input)", ChainAttributeError)
        arun = Elsewhere("use await chains.arun(chain, input)", ChainAttributeError)
        predict = Elsewhere("use chains.predict(chain, {...})", ChainAttributeError)
        apredict = Elsewhere("use await chains.apredict(chain, {...})", ChainAttributeError)
        batch = Elsewhere("use chains.batch(chain, [{...}, ...])", ChainAttributeError)
        abatch = Elsewhere("use await chains.abatch(chain, [{...}, ...])", ChainAttributeError)
        stream = Elsewhere("use chains.stream(chain, {...})", ChainAttributeError)
        astream = Elsewhere("use chains.astream(chain, {...})", ChainAttributeError)

    @property
    @abstractmethod
    def input_keys(self) -> list[str]:
        """Keys `_call` needs in its inputs."""

    @property
    @abstractmethod
    def output_keys(self) -> list[str]:
        """Keys `_call` returns."""

    @abstractmethod
    def _call(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        """Runs the chain on `inputs`; options reach the model unchanged."""

    async def _acall(self, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
        """Async twin of `_call`; by default runs `_call` in a daemon worker thread, so that a
        cancelled call that never returns does not keep `asyncio.run` from returning."""
        return await to_thread(f"chain {self.name}", self._call, inputs, **options)

    def _resumed(self, given: object, decisions: object, interrupted: object) -> Resumption:
        """The stopped run `given` (an id or a saved state), ready to continue; a chain that
        keeps no state between steps cannot."""
        raise ChainTypeError(
            f"{self.name} cannot resume a run: chains.resume continues an agents.Executor's "
            "run (give the Executor a checkpointer to save its runs)"
        )

    @property
    def name(self) -> str:
        return type(self).__name__
