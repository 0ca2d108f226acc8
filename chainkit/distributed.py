"""Batch jobs on a Ray cluster, and rate limits shared across its machines.

Needs `pip install "chainkit[ray]"`; nothing else in chainkit imports this module, so ray is
loaded only by code that asks for it (`chainkit batch --engine ray`, or an import of this).

- `ray_batch(factory, inputs, concurrency=8)` runs a chain over `inputs` in Ray actors. Each
  actor calls `factory` to build its own chain (clients hold connections and locks, which do
  not travel, so nothing built is shipped) and runs up to `concurrency` runs at once in its
  event loop, with the runner of `chainkit batch`: results are the same as a local job's.
  An actor that dies (its machine lost, its process killed) takes none of its runs with it:
  they run again on the other actors, each alone, so that an input which itself ends the
  process it runs in is found out (its result is an `ActorDiedError`) after two actors.
- `RayRateLimiter(requests_per_minute=..., tokens_per_minute=...)` is an `llms.RateLimiter`
  whose schedule lives in a Ray actor: give it to the models a factory builds, and every
  actor, on every machine, shares its limits and its Retry-After pauses.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import ray
from ray.exceptions import RayActorError

from chainkit._batch.job import BatchJob
from chainkit._batch.records import Record
from chainkit._batch.runner import Result, chain_of, run
from chainkit._errors import ChainkitError
from chainkit.chains import Chain
from chainkit.chains.errors import InputsTypeError, OptionsError, OptionsTypeError
from chainkit.llms.rate_limit import LocalBucket, RateLimiter, Reservation
from chainkit.schema import TokenUsage

Factory = Callable[[], Chain] | str
"""A function returning the chain to run, or its `module:function` name."""

__all__ = ["ActorsLostError", "RayRateLimiter", "connect", "ray_batch"]


class ActorsLostError(ChainkitError, RuntimeError):
    """Every actor of a Ray job died with runs still to do. The results that came back
    were handed on (written, for `chainkit batch`, which resumes from them); `results`
    holds them for `ray_batch`, by input position, None where a run did not finish."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.results: list[dict[str, Any] | None] = []


def connect(address: str | None = None, runtime_env: Mapping[str, Any] | None = None) -> None:
    """Joins the Ray cluster at `address` (e.g. "ray://head:10001"), or starts Ray on this
    machine when there is none, unless this process is connected already. `runtime_env`
    gives the workers what they need, such as {"pip": ["chainkit"]} on a cluster whose
    machines lack it."""
    if ray.is_initialized():
        return
    ray.init(
        address=address,
        runtime_env=dict(runtime_env) if runtime_env else None,
        include_dashboard=False,
        log_to_driver=True,
    )


@ray.remote
class _ChainActor:
    """Builds a chain once, then runs the records it is sent, several at once (as many as
    the actor's max_concurrency)."""

    def __init__(self, factory: Factory) -> None:
        self._chain = _build(factory)

    async def run(self, record: Record) -> Result:
        return await run(self._chain, record)


def _build(factory: Factory) -> Chain:
    if isinstance(factory, str):
        from chainkit._factory import load

        return chain_of(load(factory, "mypackage.agents:make_agent"), factory)
    return chain_of(factory(), getattr(factory, "__qualname__", repr(factory)))


def ray_batch(
    factory: Callable[[], Chain] | str,
    inputs: Iterable[Mapping[str, Any]],
    *,
    concurrency: int = 8,
    actors: int | None = None,
) -> list[dict[str, Any]]:
    """Runs the chain `factory` builds on each of `inputs` (dicts of the chain's inputs) in
    Ray actors, `concurrency` runs at once in each; returns one result per input, in input
    order, shaped like a `chainkit batch` output line (`id` is the input's position).

    `actors` defaults to one per CPU of the cluster. Ray is started on this machine if this
    process has not joined a cluster (`connect`) already. Raises ActorsLostError if every
    actor dies with runs left.
    """
    _check_count("concurrency", concurrency)
    if actors is not None:
        _check_count("actors", actors)
    items = list(inputs)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InputsTypeError(
                f"inputs must be dicts of the chain's inputs; item {index} is {item!r}"
            )
    connect()
    results: list[dict[str, Any] | None] = [None for _ in items]

    def keep(result: Result) -> None:
        results[result["id"]] = result

    records = (Record(index, index + 1, dict(item)) for index, item in enumerate(items))
    try:
        _drive(_start_actors(factory, concurrency, actors), records, concurrency, keep)
    except ActorsLostError as error:
        error.results = results
        raise
    return [result for result in results if result is not None]


def _check_count(name: str, value: object) -> None:
    """Raises unless `value` is a whole number, at least 1 (a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionsTypeError(f"{name} must be a whole number, at least 1, got {value!r}")
    if value < 1:
        raise OptionsError(f"{name} must be a whole number, at least 1, got {value!r}")


def run_job(job: BatchJob, factory: Factory, concurrency: int, actors: int | None = None) -> None:
    """Runs a `chainkit batch` job's pending records in Ray actors (on the cluster joined
    with `connect`); the job writes each result as it comes back, so an interrupted job
    resumes as a local one does."""
    connect()
    _drive(_start_actors(factory, concurrency, actors), job.pending(), concurrency, job.finish)


def _start_actors(factory: Factory, concurrency: int, count: int | None) -> list[Any]:
    resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    cpus = max(float(resources.get("CPU", 1.0)), 1.0)
    count = count or int(cpus)
    # One CPU each while the cluster has them, so actors spread over its machines.
    each = min(1.0, cpus / count)
    options = {"num_cpus": each, "max_concurrency": concurrency}
    return [_ChainActor.options(**options).remote(factory) for _ in range(count)]  # type: ignore[attr-defined]


class _Run(NamedTuple):
    actor: int
    record: Record
    alone: bool
    """Whether the run had its actor to itself: had it died, the run would be to blame."""


class _Dispatch:
    """Hands a job's records out to its actors, at most `concurrency` runs at a time to
    each. The runs of an actor that died are run again, each on an actor with nothing else
    to do; one whose actor dies then is given up with an `ActorDiedError` result."""

    def __init__(self, actors: list[Any], records: Iterable[Record], concurrency: int) -> None:
        self.actors = actors
        self.alive = set(range(len(actors)))
        self.load = [0] * len(actors)
        self.in_flight: dict[Any, _Run] = {}
        self.suspects: deque[Record] = deque()
        self._alone: set[int] = set()
        self._pending: Iterator[Record] = iter(records)
        self._exhausted = False
        self._concurrency = concurrency
        self.last_death: RayActorError | None = None

    def hand_out(self) -> None:
        if self.suspects:  # before any new record; the others wait for an idle actor
            for actor in sorted(self.alive - self._alone):
                if self.load[actor] == 0 and self.suspects:
                    self._send(actor, self.suspects.popleft(), alone=True)
            return
        while not self._exhausted:
            open_actors = self.alive - self._alone
            if not open_actors:
                return
            actor = min(open_actors, key=self.load.__getitem__)
            if self.load[actor] >= self._concurrency:
                return
            record = next(self._pending, None)
            if record is None:
                self._exhausted = True
                return
            self._send(actor, record, alone=False)

    def _send(self, actor: int, record: Record, *, alone: bool) -> None:
        self.in_flight[self.actors[actor].run.remote(record)] = _Run(actor, record, alone)
        self.load[actor] += 1
        if alone:
            self._alone.add(actor)

    def collect(self, reference: Any) -> Result | None:
        """The result of the run `reference` stands for; None if its actor died and the
        run is to be made again."""
        done = self.in_flight.pop(reference)
        self.load[done.actor] -= 1
        self._alone.discard(done.actor)
        try:
            result: Result = ray.get(reference)
        except RayActorError as death:
            self.alive.discard(done.actor)
            self.last_death = death
            if done.alone:
                return _died_result(done.record)
            self.suspects.append(done.record)
            return None
        return result

    def runs_left(self) -> bool:
        """Whether records are left to run (to ask once no actor is left)."""
        if self.suspects:
            return True
        if self._exhausted:
            return False
        following = next(self._pending, None)
        if following is None:
            self._exhausted = True
            return False
        self.suspects.appendleft(following)
        return True


def _died_result(record: Record) -> Result:
    message = (
        "the Ray actor running this input died, twice, the second time with no other run: "
        "the input seems to end the process it runs in"
    )
    return {
        "id": record.id,
        "error": {"type": "ActorDiedError", "message": message},
        "steps": 0,
        "usage": TokenUsage().to_dict(),
        "usage_by_model": {},
        "seconds": 0.0,
    }


def _drive(
    actors: list[Any],
    records: Iterable[Record],
    concurrency: int,
    finish: Callable[[Result], None],
) -> None:
    """Runs `records` on `actors`, handing each result to `finish` as it comes back. An
    interrupt ends the job; so does the death of every actor (ActorsLostError)."""
    dispatch = _Dispatch(actors, records, concurrency)
    try:
        while True:
            dispatch.hand_out()
            if not dispatch.in_flight:
                if dispatch.runs_left():
                    raise ActorsLostError(
                        f"every Ray actor of the job died ({len(actors)}), with runs left; "
                        f"the last died of: {dispatch.last_death}"
                    )
                return
            ready, _ = ray.wait(list(dispatch.in_flight), num_returns=1)
            everything = len(dispatch.in_flight)
            ready, _ = ray.wait(list(dispatch.in_flight), num_returns=everything, timeout=0)
            for reference in ready:
                result = dispatch.collect(reference)
                if result is not None:
                    finish(result)
    finally:
        for reference in dispatch.in_flight:
            ray.cancel(reference)
        for actor in actors:
            ray.kill(actor)


# Rate limits shared by every actor.


@ray.remote(num_cpus=0)
class _BucketActor:
    """A `LocalBucket` that the limiters of many processes share."""

    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None) -> None:
        self._bucket = LocalBucket(requests_per_minute, tokens_per_minute)

    def reserve(self, tokens: int) -> Reservation:
        return self._bucket.reserve(tokens)

    def wait_left(self, ticket: int) -> float:
        return self._bucket.wait_left(ticket)

    def settle(self, ticket: int, used: int) -> None:
        self._bucket.settle(ticket, used)

    def cancel(self, ticket: int) -> None:
        self._bucket.cancel(ticket)

    def pause(self, seconds: float) -> None:
        self._bucket.pause(seconds)


class _RayBucket:
    """The RateBucket interface over the `_BucketActor` named `name`, made by the first
    process of the cluster to ask for it (with its limits), found by the others."""

    def __init__(
        self, name: str, requests_per_minute: float | None, tokens_per_minute: float | None
    ) -> None:
        options = {"name": name, "get_if_exists": True}
        maker = _BucketActor.options(**options)  # type: ignore[attr-defined]
        self._actor = maker.remote(requests_per_minute, tokens_per_minute)

    def reserve(self, tokens: int) -> Reservation:
        result: Reservation = ray.get(self._actor.reserve.remote(tokens))
        return result

    def wait_left(self, ticket: int) -> float:
        return float(ray.get(self._actor.wait_left.remote(ticket)))

    def settle(self, ticket: int, used: int) -> None:
        ray.get(self._actor.settle.remote(ticket, used))

    def cancel(self, ticket: int) -> None:
        ray.get(self._actor.cancel.remote(ticket))

    def pause(self, seconds: float) -> None:
        ray.get(self._actor.pause.remote(seconds))

    async def areserve(self, tokens: int) -> Reservation:
        result: Reservation = await self._actor.reserve.remote(tokens)
        return result

    async def await_left(self, ticket: int) -> float:
        return float(await self._actor.wait_left.remote(ticket))

    async def asettle(self, ticket: int, used: int) -> None:
        await self._actor.settle.remote(ticket, used)

    async def acancel(self, ticket: int) -> None:
        await self._actor.cancel.remote(ticket)

    async def apause(self, seconds: float) -> None:
        await self._actor.pause.remote(seconds)


class RayRateLimiter(RateLimiter):
    """An `llms.RateLimiter` shared by every process of a Ray cluster: its schedule lives in
    a Ray actor named `name` (a fresh name by default), made when the limiter is. Copies of
    the limiter, pickled into actors with a factory that closes over it, use the same
    schedule; so does a limiter made with the same `name` anywhere in the same Ray job, as a
    module-level one in an `--agent` module is (the first made sets the limits). The actor
    lives as long as the process that made it, or until `close()`."""

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(requests_per_minute, tokens_per_minute)
        self.name = name or f"chainkit-rate-limiter-{uuid.uuid4().hex}"
        self._bucket = _RayBucket(self.name, self.requests_per_minute, self.tokens_per_minute)

    def __repr__(self) -> str:
        return (
            f"RayRateLimiter(requests_per_minute={self.requests_per_minute!r}, "
            f"tokens_per_minute={self.tokens_per_minute!r}, name={self.name!r})"
        )

    def __reduce__(self) -> Any:
        return (_remade, (self.requests_per_minute, self.tokens_per_minute, self.name))

    def close(self) -> None:
        """Ends the actor holding the schedule; limiters still using it fail."""
        try:
            actor = ray.get_actor(self.name)
        except ValueError:  # ended already
            return
        ray.kill(actor)


def _remade(
    requests_per_minute: float | None, tokens_per_minute: float | None, name: str
) -> RayRateLimiter:
    return RayRateLimiter(requests_per_minute, tokens_per_minute, name=name)
