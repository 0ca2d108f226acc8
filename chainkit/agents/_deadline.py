"""A run's deadline, and how the drivers keep it: worker threads, step events, waiting.

Under `max_execution_time` each step is bounded by the time left. The async driver cancels
the step at the deadline (`within`). The sync driver cannot cancel a call: it runs the step
in daemon worker threads and stops waiting. The step is abandoned, runs on until it returns,
and its events after the deadline are dropped (`StepEvents`); a model call there gets the
time left as its `timeout`. Parallel tool calls run in worker threads with or without a
deadline.
"""

from __future__ import annotations

import functools
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, TypeVar

from chainkit import _threads
from chainkit.agents.agent import Agent
from chainkit.agents.errors import DeadlineExceededError
from chainkit.callbacks.combining import CombiningHandler
from chainkit.callbacks.observed import Observed
from chainkit.callbacks.run import handled_by
from chainkit.callbacks.step_events import StepEvents
from chainkit.schema import AgentAction, AgentFinish, AgentStep

T = TypeVar("T")


class Deadline:
    """When a run must end: `seconds` (its max_execution_time) from when it started, on the
    `time.monotonic()` clock."""

    __slots__ = ("at", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return self.at - time.monotonic()

    def passed(self) -> bool:
        return time.monotonic() >= self.at

    def exceeded(self) -> DeadlineExceededError:
        """The error reported for a call still open when the step was abandoned."""
        return DeadlineExceededError(
            f"max_execution_time={self.seconds}s reached before the call returned; it was abandoned"
        )


class Interrupted(Exception):
    """The deadline cut a step short: when ("while waiting for the model"), and the steps of
    its actions that finished before it."""

    def __init__(self, during: str, finished: Sequence[AgentStep] = ()) -> None:
        super().__init__(during)
        self.during = during
        self.finished = finished


def tools_interrupted(
    actions: Sequence[AgentAction], observations: Sequence[str | None]
) -> Interrupted:
    """The interruption of a step whose actions with no observation yet were cut short."""
    pairs = list(zip(actions, observations, strict=True))
    unfinished = [action.tool for action, observation in pairs if observation is None]
    listed = ", ".join(repr(name) for name in unfinished)
    named = f"tool {listed}" if len(unfinished) == 1 else f"tools {listed}"
    finished = [AgentStep(a, o) for a, o in pairs if o is not None]
    return Interrupted(f"before {named} finished", finished)


def model_interrupted() -> Interrupted:
    return Interrupted("while waiting for the model")


async def within(
    deadline: Deadline | None, step: Awaitable[T], interrupted: Callable[[], Interrupted]
) -> T:
    """What `step` returns, unless `deadline` comes first: then the step is cancelled and
    `interrupted()` raised."""
    if deadline is None:
        return await step
    import asyncio  # loaded already by the running event loop, not at import

    try:
        async with asyncio.timeout(deadline.left()) as scope:
            return await step
    except TimeoutError:
        if not scope.expired():
            raise  # raised by the model or a tool, not by the deadline
    raise interrupted()


async def act_in_tasks(
    deadline: Deadline | None,
    actions: list[AgentAction],
    run_tool: Callable[[AgentAction], Awaitable[str]],
    max_parallel: int,
) -> list[str]:
    """Runs the actions as tasks, at most `max_parallel` at once, until all are done or
    `deadline` passes (then the step is interrupted, naming the calls cut short); the
    observations keep the order of `actions`."""
    import asyncio  # loaded already by the running event loop, not at import

    limit = asyncio.Semaphore(max_parallel)
    observations: list[str | None] = [None] * len(actions)

    async def run(index: int, action: AgentAction) -> str:
        async with limit:
            observation = observations[index] = await run_tool(action)
            return observation

    async def acting() -> list[str]:
        tasks = [asyncio.ensure_future(run(i, action)) for i, action in enumerate(actions)]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            # A failed or cancelled call leaves no sibling running behind the raised error.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    return await within(deadline, acting(), lambda: tools_interrupted(actions, observations))


def plan_in_thread(
    agent: Agent,
    deadline: Deadline,
    steps: list[AgentStep],
    inputs: Mapping[str, Any],
    options: Mapping[str, Any],
    callbacks: CombiningHandler | None,
) -> list[AgentAction] | AgentFinish:
    """The agent's plan, made in a worker thread and waited for no longer than `deadline`."""
    # The agent's own handler hears the model too: it is silenced along with the rest.
    own = agent.handler if isinstance(agent, Observed) else None
    events = StepEvents(callbacks, own)
    left = deadline.left()
    if left <= 0:  # passed since the loop looked: a model refuses a timeout of 0 or less
        raise model_interrupted()
    given = options.get("timeout")
    plan_options = {**options, "timeout": left if given is None else min(given, left)}
    streaming_func = options.get("streaming_func")
    if streaming_func is not None:
        plan_options["streaming_func"] = events.relay(streaming_func)
    plan = functools.partial(agent.plan, list(steps), inputs, **plan_options)
    with handled_by(events if events.handlers else None):
        future = _threads.submit(plan)
    if not _wait_for({future}, events, deadline):
        events.abandon(deadline.exceeded())
        raise model_interrupted()
    result: list[AgentAction] | AgentFinish = future.result()
    return result


def act_in_threads(
    run_tool: Callable[[AgentAction], str],
    actions: list[AgentAction],
    max_parallel: int,
    callbacks: CombiningHandler | None,
    deadline: Deadline | None,
) -> list[str]:
    """Runs the actions' tools in worker threads, at most `max_parallel` at once, until all
    are done or `deadline` passes; the observations keep the order of `actions`."""
    events = StepEvents(callbacks)
    try:
        return _ToolThreads(run_tool, actions, events, deadline).run(max_parallel)
    except BaseException as error:  # an interrupt may land anywhere, not only in a wait
        events.abandon(error)
        raise


class _ToolThreads:
    """One step's tool calls in worker threads: those waiting, those running, and what the
    finished ones gave."""

    def __init__(
        self,
        run_tool: Callable[[AgentAction], str],
        actions: list[AgentAction],
        events: StepEvents,
        deadline: Deadline | None,
    ) -> None:
        self.run_tool = run_tool
        self.actions = actions
        self.events = events
        self.deadline = deadline
        self.observations: list[str | None] = [None] * len(actions)
        self.failures: dict[int, BaseException] = {}
        self.waiting = deque(enumerate(actions))
        self.running: dict[Future[str | None], int] = {}

    def run(self, max_parallel: int) -> list[str]:
        while self.waiting or self.running:
            while self.waiting and len(self.running) < max_parallel:
                self._start(*self.waiting.popleft())
            done = _wait_for(set(self.running), self.events, self.deadline)
            if not done:
                self._time_up()
            for future in done:
                self._collect(future)
        if self.failures:
            raise self.failures[min(self.failures)]
        return [observation for observation in self.observations if observation is not None]

    def _start(self, index: int, action: AgentAction) -> None:
        with handled_by(self.events if self.events.handlers else None):
            self.running[_threads.submit(self._run_admitted, action)] = index

    def _run_admitted(self, action: AgentAction) -> str | None:
        """Runs the action's tool unless its step was abandoned before it could start."""
        if self.events.abandoned:
            return None
        return self.run_tool(action)

    def _collect(self, future: Future[str | None]) -> None:
        index = self.running.pop(future)
        error = future.exception()
        if error is None:
            self.observations[index] = future.result()
        elif isinstance(error, Exception):
            self.failures[index] = error
        else:  # an interrupt does not wait for the other calls
            raise error

    def _time_up(self) -> None:
        assert self.deadline is not None  # without one, the wait returns only when done
        self.events.abandon(self.deadline.exceeded())
        if self.failures:
            raise self.failures[min(self.failures)]
        raise tools_interrupted(self.actions, self.observations)


def _wait_for(
    futures: set[Future[Any]], events: StepEvents, deadline: Deadline | None
) -> set[Future[Any]]:
    """The first of `futures` to be done, or none if `deadline` comes first; an interrupt
    while waiting abandons the step before it propagates."""
    timeout = None if deadline is None else max(deadline.left(), 0.0)
    try:
        done, _ = wait(futures, timeout, FIRST_COMPLETED)
    except BaseException as error:
        events.abandon(error)
        raise
    return done


def postpone(deadline: Deadline | None, seconds: float) -> None:
    """The time the run waited for a stream's reader is not the run's: its deadline moves."""
    if deadline is not None:
        deadline.at += seconds
