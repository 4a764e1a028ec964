"""Replaying a trace under a named policy: the table of policies and :func:`run`.

The policies live in :mod:`~scrapy_fresh.simulator.policies` (and the signalled
``fresh`` in :mod:`~scrapy_fresh.simulator.signalled`); the replay loop and the
measures in :mod:`~scrapy_fresh.simulator.engine`. This module only ties them together,
so that none of them imports another in a circle.
"""

from __future__ import annotations

import bisect
import random
import time
from collections.abc import Callable, Sequence

from scrapy_fresh.policy.allocation import cho_optimal, lambdacrawl_optimal, proportional
from scrapy_fresh.simulator.engine import (
    Context,
    OnlinePolicy,
    Result,
    ScheduledPolicy,
    SimConfig,
    build_context,
    count_fetches,
    run_online,
)
from scrapy_fresh.simulator.metrics import measure
from scrapy_fresh.simulator.policies import (
    Clairvoyant,
    Fresh,
    Nutch,
    Sartcm,
    StormCrawler,
    WebFountain,
    fixed_schedule,
    uniform_allocation,
)
from scrapy_fresh.simulator.signalled import SignalledFresh
from scrapy_fresh.simulator.trace import DAY, Trace, load_access_times

__all__ = ["POLICIES", "POLICY_NAMES", "run"]


def _fresh(ctx: Context) -> OnlinePolicy:
    """``fresh``; with publishers (``ProviderMix.signals``) its signals go through the
    crawl's SignalTracker (:mod:`scrapy_fresh.simulator.signalled`)."""
    if ctx.config.providers.signals != "off":
        return SignalledFresh(ctx)
    return Fresh(ctx)


#: ``--policy`` name -> factory taking the replay's :class:`Context`.
POLICIES: dict[str, Callable[[Context], OnlinePolicy | ScheduledPolicy]] = {
    "fresh": _fresh,
    "uniform": fixed_schedule(uniform_allocation),
    "proportional": fixed_schedule(proportional),
    "nutch": Nutch,
    "stormcrawler": StormCrawler,
    "sartcm": Sartcm,
    "webfountain": WebFountain,
    "cho-oracle": fixed_schedule(cho_optimal),
    "lambdacrawl-oracle": fixed_schedule(lambdacrawl_optimal),
    "clairvoyant": Clairvoyant,
}
#: The names, in the order tables list them.
POLICY_NAMES = tuple(POLICIES)


def run(
    trace: Trace,
    policy: str,
    config: SimConfig | None = None,
    *,
    factories: dict[str, Callable[[Context], OnlinePolicy | ScheduledPolicy]] | None = None,
) -> Result:
    """Replay ``trace`` under ``policy`` (a name of :data:`~scrapy_fresh.simulator.POLICIES`)."""
    config = config or SimConfig()
    table = factories if factories is not None else POLICIES
    if policy not in table:
        raise ValueError(f"policy ({policy!r}) must be one of {', '.join(sorted(table))}.")
    began = time.perf_counter()
    ctx = build_context(trace, config)
    chosen = table[policy](ctx)
    fetches = chosen.fetch_times() if hasattr(chosen, "fetch_times") else run_online(chosen, ctx)
    counted, wasted = count_fetches(trace, fetches, ctx.measure_start)
    accesses = _accesses(trace, config, ctx)
    metrics = measure(
        trace.changes,
        fetches,
        accesses,
        trace.start,
        ctx.windows,
        time_unit=config.time_unit,
    )
    return Result(
        policy=policy,
        pages=len(trace),
        metrics=metrics,
        budget=config.budget,
        seed=config.seed,
        warmup_days=(ctx.measure_start - trace.start) / DAY,
        days=trace.span / DAY,
        providers=config.providers.describe(),
        elapsed_s=time.perf_counter() - began,
        measure=config.measure,
        fetches=counted,
        changes=sum(len(c) - bisect.bisect_right(c, ctx.measure_start) for c in trace.changes),
        wasted_fetches=wasted,
        fetch_times=fetches,
    )


def _accesses(trace: Trace, config: SimConfig, ctx: Context) -> Sequence[Sequence[float]]:
    if config.access_trace is not None:
        return load_access_times(config.access_trace, trace)
    return config.access.sample(
        ctx.weights, ctx.measure_start, trace.end, random.Random(f"accesses-{config.seed}")
    )
