"""The replay: a simulated clock, a crawl budget per time step, and the fetch log.

Every page is fetched once at the trace start. Then the clock moves in steps of
``step_secs`` (a crawl cycle). Each step the budget adds ``budget * pages * step / day``
fetches (fractions carry over; a budget a policy leaves unused in a step is lost, as
:setting:`FRESH_CYCLE_BUDGET` is per run); the policy picks at most that many pages, and
they are fetched one after another, evenly spaced over the step. A fetch sees every
change at or before its time; the policy learns "changed" or "unchanged".

Policies that fix their fetch times in advance (uniform, proportional, the oracle
allocations, the clairvoyant bound) skip the steps and give their times directly.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from scrapy_fresh.frontier.revisit import RevisitPolicy
from scrapy_fresh.frontier.scoring import ScoreParams
from scrapy_fresh.simulator.access import AccessModel
from scrapy_fresh.simulator.clock import SimClock
from scrapy_fresh.simulator.metrics import Metrics
from scrapy_fresh.simulator.providers import Level, ProviderMix
from scrapy_fresh.simulator.trace import DAY, Trace

#: The ways a page's measuring window is chosen (:attr:`SimConfig.measure`).
MEASURES = ("active", "trace")

__all__ = [
    "MEASURES",
    "Context",
    "OnlinePolicy",
    "Result",
    "ScheduledPolicy",
    "SimConfig",
    "build_context",
    "count_fetches",
    "run_online",
]


@dataclass(frozen=True)
class SimConfig:
    """Everything a replay depends on besides the trace and the policy.

    :param budget: fetches per page per day, on average.
    :param step_secs: length of a crawl cycle (the policy decides once per step).
    :param warmup_secs: time the policy may learn before measuring starts.
    :param seed: seeds provider assignment, announcements and accesses.
    :param providers: the provider population.
    :param access: the access model (ignored when ``access_trace`` is given).
    :param access_trace: a ``page,timestamp`` file of accesses, instead of the model.
    :param know_accesses: give each record its expected accesses per day as
        ``access_count`` (what a spider passes in ``meta["fresh_accesses"]``); off, the
        crawler sees every page as equally popular.
    :param time_unit: seconds per unit in Xu et al. eq. 3.
    :param measure: ``"active"`` measures each page from its first to its last change
        (a feed is not counted fresh for months before it starts or after it stops;
        the issue's reference numbers are measured so), ``"trace"`` every page over
        the whole replay. Both start after the warm-up.
    :param revisit: the refresh-rule settings (default: the crawler's defaults).
    :param score: the priority-score settings (default: the crawler's defaults).
    :param lookahead_secs: the ``fresh`` policy takes records due within this time of a
        cycle's start early, as :setting:`FRESH_CYCLE_LOOKAHEAD_SECS` does (0: only
        records due at the start).
    """

    budget: float = 1.0
    step_secs: float = 3600.0
    warmup_secs: float = 0.0
    seed: int = 0
    providers: ProviderMix = field(default_factory=ProviderMix)
    access: AccessModel = field(default_factory=AccessModel)
    access_trace: str | None = None
    know_accesses: bool = False
    time_unit: float = 3600.0
    measure: str = "active"
    revisit: RevisitPolicy = field(default_factory=RevisitPolicy)
    score: ScoreParams = field(default_factory=ScoreParams)
    lookahead_secs: float = 0.0

    def __post_init__(self) -> None:
        if not self.budget > 0:
            raise ValueError(f"budget ({self.budget!r}) must be above 0 fetches/page/day.")
        if not self.step_secs > 0:
            raise ValueError(f"step_secs ({self.step_secs!r}) must be above 0.")
        if not self.lookahead_secs >= 0:
            raise ValueError(f"lookahead_secs ({self.lookahead_secs!r}) must be 0 or more.")
        if self.warmup_secs < 0:
            raise ValueError(f"warmup_secs ({self.warmup_secs!r}) must be 0 or more.")
        if self.measure not in MEASURES:
            raise ValueError(f"measure ({self.measure!r}) must be one of {', '.join(MEASURES)}.")
        if not self.time_unit > 0:
            raise ValueError(f"time_unit ({self.time_unit!r}) must be above 0.")


@dataclass
class Context:
    """What a policy may read about the replay (the oracle ones read the whole trace)."""

    trace: Trace
    config: SimConfig
    levels: list[Level]
    #: Popularity share per page (Zipf weights, summing to 1).
    weights: list[float]
    #: Expected accesses per day per page (the weights times the access volume).
    daily_accesses: list[float]
    #: Fetches per second over all pages.
    rate: float
    measure_start: float
    #: Per page, the ``(start, end)`` it is measured over, or None (not measured).
    windows: list[tuple[float, float] | None]
    clock: SimClock
    rng: random.Random

    @property
    def n(self) -> int:
        return len(self.trace)

    def oracle_rates(self) -> list[float]:
        """True change rates per page (per second): changes over the page's measuring
        span (``active``) or over the whole trace (``trace``)."""
        out = []
        for changes, window in zip(self.trace.changes, self.windows, strict=True):
            if self.config.measure == "active" and window is not None:
                out.append(len(changes) / (window[1] - window[0]))
            else:
                out.append(len(changes) / self.trace.span)
        return out

    @property
    def budget_fetches(self) -> int:
        """Fetches the budget allows within the measuring window."""
        return round(self.rate * (self.trace.end - self.measure_start))


class OnlinePolicy(Protocol):
    """A policy that decides step by step from what it has seen."""

    def signals(self, prev: float, now: float) -> None:
        """Take in what providers signalled in ``(prev, now]``."""

    def select(self, now: float, capacity: int) -> list[int]:
        """Return at most ``capacity`` pages to fetch now, in order."""
        ...

    def visited(self, page: int, now: float, changed: bool, latest: float | None) -> None:
        """A fetch of ``page`` at ``now`` found a change (``latest``: its newest) or not."""


class ScheduledPolicy(Protocol):
    """A policy that fixes every fetch time in advance."""

    def fetch_times(self) -> list[list[float]]:
        """Fetch times per page, sorted, after the trace start."""
        ...


@dataclass(frozen=True)
class Result:
    """One replay's outcome (:meth:`as_dict` is the ``--json`` object)."""

    policy: str
    pages: int
    metrics: Metrics
    budget: float
    seed: int
    warmup_days: float
    days: float
    providers: dict[str, float]
    elapsed_s: float
    measure: str
    #: Fetches after the warm-up (every page, whole replay), and those that found no
    #: change since the page's previous fetch.
    fetches: int
    wasted_fetches: int
    #: Changes after the warm-up.
    changes: int
    fetch_times: list[list[float]] = field(repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        m = self.metrics
        window_days = self.days - self.warmup_days
        return {
            "policy": self.policy,
            "pages": self.pages,
            "changes": self.changes,
            "fetches": self.fetches,
            "freshness": m.freshness,
            "p_fresh": m.p_fresh,
            "age_mean_s": m.age_mean_s,
            "harmonic_staleness": m.harmonic_staleness,
            "wasted_fetches": self.wasted_fetches,
            "fetches_in_windows": m.fetches,
            "accesses": m.accesses,
            "measure": self.measure,
            "budget": self.budget,
            "fetches_per_page_per_day": self.fetches / (self.pages * window_days),
            "days": self.days,
            "warmup_days": self.warmup_days,
            "seed": self.seed,
            "providers": self.providers,
            "elapsed_s": self.elapsed_s,
        }


def run_online(policy: OnlinePolicy, ctx: Context) -> list[list[float]]:
    trace = ctx.trace
    step = ctx.config.step_secs
    per_step = ctx.rate * step
    changes = trace.changes
    seen = [bisect.bisect_right(c, trace.start) for c in changes]
    log: list[list[float]] = [[] for _ in changes]
    clock = ctx.clock
    prev = trace.start
    now = trace.start
    carry = 0.0
    while now < trace.end:
        clock.advance_to(now)
        policy.signals(prev, now)
        carry += per_step
        capacity = int(carry + 1e-9)
        carry -= capacity
        if capacity:
            spacing = step / capacity
            for j, page in enumerate(policy.select(now, capacity)[:capacity]):
                at = now + (j + 0.5) * spacing
                if at > trace.end:
                    break
                clock.advance_to(at)
                page_changes = changes[page]
                k = seen[page]
                k2 = bisect.bisect_right(page_changes, at, lo=k)
                seen[page] = k2
                log[page].append(at)
                changed = k2 > k
                policy.visited(page, at, changed, page_changes[k2 - 1] if changed else None)
        prev = now
        now += step
    return log


def build_context(trace: Trace, config: SimConfig) -> Context:
    rng = random.Random(config.seed)
    levels = config.providers.assign(len(trace), random.Random(f"levels-{config.seed}"))
    weights = config.access.weights(len(trace), random.Random(f"weights-{config.seed}"))
    measure_start = min(trace.start + config.warmup_secs, trace.end)
    if measure_start >= trace.end:
        raise ValueError(
            f"warm-up ({config.warmup_secs / DAY:g} days) leaves nothing of the trace "
            f"({trace.span / DAY:g} days) to measure."
        )
    windows: list[tuple[float, float] | None] = []
    for changes in trace.changes:
        lo, hi = measure_start, trace.end
        if config.measure == "active":
            if not changes:
                windows.append(None)
                continue
            lo, hi = max(lo, changes[0]), min(hi, changes[-1])
        windows.append((lo, hi) if hi > lo else None)
    if not any(windows):
        raise ValueError("no page has a non-empty measuring window; try measure='trace'.")
    return Context(
        trace=trace,
        config=config,
        levels=levels,
        weights=weights,
        daily_accesses=config.access.daily_accesses(weights),
        rate=config.budget * len(trace) / DAY,
        measure_start=measure_start,
        windows=windows,
        clock=SimClock(trace.start),
        rng=rng,
    )


def count_fetches(
    trace: Trace, fetches: Sequence[Sequence[float]], after: float
) -> tuple[int, int]:
    """Fetches later than ``after``, and how many of them found no change since the
    page's previous fetch (the trace start counts as one)."""
    total = wasted = 0
    for changes, times in zip(trace.changes, fetches, strict=True):
        previous = trace.start
        for t in times:
            if t > after:
                total += 1
                lo = bisect.bisect_right(changes, previous)
                if lo >= len(changes) or changes[lo] > t:
                    wasted += 1
            previous = t
    return total, wasted
