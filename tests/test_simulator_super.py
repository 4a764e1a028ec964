"""Super providers in the simulator, and the bounds a replay is judged against."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from scrapy_fresh.frontier import scoring
from scrapy_fresh.policy.gain import known_gain
from scrapy_fresh.simulator import ProviderMix, SimConfig, poisson_trace, run
from scrapy_fresh.simulator.bounds import cycle_bound, replay_slots
from scrapy_fresh.simulator.engine import build_context
from scrapy_fresh.store.base import PageState

EXACT = ProviderMix(super_share=1.0, precision=1.0)
ONLINE = ("fresh", "nutch", "stormcrawler", "sartcm", "webfountain")


def _previous_super_gain(
    state: PageState,
    now: float,
    last: float,
    rate: float,
    horizon: float,
    params: scoring.ScoreParams,
) -> float:
    """The super gain before announced_fresh_secs: the page's full rate until the next
    announced change (known_gain), whatever was known about the quiet span."""
    p_changed = -math.expm1(-rate * (now - last))
    if any(t > last for t in state.past_updates):
        p_changed = 1.0
    upcoming = None
    for t, p in state.future_updates:
        if last < t <= now:
            p_changed = max(p_changed, p)
        elif t > now and (upcoming is None or t < upcoming[0]):
            upcoming = (t, p)
    if upcoming is None:
        return known_gain(p_changed, rate, horizon)
    return known_gain(
        p_changed, rate, horizon, next_change_secs=upcoming[0] - now, p_next=upcoming[1]
    )


@pytest.fixture(scope="module")
def poisson_pages():
    # Fast and slow pages: a fast page's quiet spans are short on average, but some are
    # long, and announcements say which.
    return poisson_trace([0.5, 1.0, 2.0, 4.0, 8.0] * 6, 30, seed=4)


@pytest.mark.parametrize("budget", [0.5, 1.0])
def test_exact_super_providers_approach_the_bounds(poisson_pages, budget, monkeypatch):
    config = SimConfig(budget=budget, providers=EXACT)
    now = run(poisson_pages, "fresh", config).metrics.freshness
    clairvoyant = run(poisson_pages, "clairvoyant", config).metrics.freshness
    bound = cycle_bound(build_context(poisson_pages, config))
    monkeypatch.setattr(scoring, "_super_gain", _previous_super_gain)
    before = run(poisson_pages, "fresh", config).metrics.freshness
    # Measured: 0.559 against 0.518 (budget 0.5), 0.715 against 0.659 (budget 1).
    assert now >= before + 0.03
    assert now >= 0.85 * clairvoyant
    assert now >= 0.9 * bound


def test_super_fetches_follow_the_announced_changes(poisson_pages):
    # Precision 1: a fetch buys nothing unless an announced change has passed, so hardly
    # any fetch finds the page unchanged.
    result = run(poisson_pages, "fresh", SimConfig(budget=0.5, providers=EXACT))
    assert result.wasted_fetches <= 0.01 * result.fetches


@pytest.mark.parametrize(
    "config",
    [
        SimConfig(budget=0.5),
        SimConfig(budget=2.0, step_secs=4 * 3600.0),
        SimConfig(budget=1.0, warmup_secs=5 * 86400.0),
        SimConfig(budget=1.0, measure="trace"),
    ],
)
def test_cycle_bound_is_between_the_online_policies_and_the_clairvoyant(poisson_pages, config):
    bound = cycle_bound(build_context(poisson_pages, config))
    assert bound <= run(poisson_pages, "clairvoyant", config).metrics.freshness + 1e-9
    for providers in (ProviderMix(), ProviderMix(smart_share=1.0), EXACT):
        with_providers = replace(config, providers=providers)
        assert run(poisson_pages, "fresh", with_providers).metrics.freshness <= bound + 1e-9
    for policy in ONLINE[1:]:
        assert run(poisson_pages, policy, config).metrics.freshness <= bound + 1e-9


def test_online_policies_fetch_at_the_replay_slots(poisson_pages):
    config = SimConfig(budget=1.5, providers=EXACT)
    slots = {t for cycle in replay_slots(build_context(poisson_pages, config)) for t in cycle}
    fetched = run(poisson_pages, "fresh", config).fetch_times
    assert {t for times in fetched for t in times} <= slots
    assert sum(len(c) for c in replay_slots(build_context(poisson_pages, config))) == round(
        1.5 * len(poisson_pages) * 30
    )


def test_cycle_bound_needs_an_iteration(poisson_pages):
    with pytest.raises(ValueError, match="iterations"):
        cycle_bound(build_context(poisson_pages, SimConfig()), iterations=0)


def test_normal_pages_ignore_what_super_providers_promise(poisson_pages):
    # The super branch alone reads the announce params: a normal-provider replay makes
    # the same fetches with or without them.
    base = SimConfig(budget=1.0)
    told = replace(base, score=scoring.ScoreParams(announce_secs=86400.0, announce_share=1.0))
    assert (
        run(poisson_pages, "fresh", base).fetch_times
        == run(poisson_pages, "fresh", told).fetch_times
    )
