"""One crawl planner (scrapy_fresh.frontier.planner): the scheduler and the simulator
pick the same records from the same store, and both agree with the whole-list oracle."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from scrapy_fresh.frontier.planner import plan_cycle
from scrapy_fresh.frontier.scoring import ScoreParams
from scrapy_fresh.simulator import SimConfig, poisson_trace
from scrapy_fresh.simulator.engine import build_context
from scrapy_fresh.simulator.policies import Fresh
from scrapy_fresh.store.base import PageState, Status
from tests.budget_oracle import rank_for_budget
from tests.conftest import HARNESS_NOW

DAY = 86400.0


def _simulated_states(
    pages: int, seed: int, steps: int, fill: bool, end: float = 60 * DAY
) -> tuple[Fresh, float, int]:
    """A simulator ``fresh`` policy after ``steps`` cycles of a Poisson trace, with the
    time of its next cycle (``end``) and that cycle's capacity."""
    rng = random.Random(seed)
    step = 3 * 3600.0
    start = end - steps * step
    rates = [rng.uniform(0.05, 6.0) for _ in range(pages)]
    trace = poisson_trace(rates, 2 * steps * step / DAY, seed=seed, start=start)
    config = SimConfig(budget=0.7, step_secs=step, seed=seed, score=ScoreParams(fill=fill))
    ctx = build_context(trace, config)
    policy = Fresh(ctx)
    now = start
    capacity = max(1, round(ctx.rate * step))
    for _ in range(steps):
        for j, page in enumerate(policy.select(now, capacity)):
            policy.visited(page, now + (j + 0.5) * step / capacity, rng.random() < 0.5, None)
        now += step
    return policy, now, capacity


def _store_copy(policy: Fresh) -> list[PageState]:
    """The simulator's records as a store holds them between cycles (idle, not leased)."""
    states = [copy.deepcopy(s) for s in policy.states]
    for state in states:
        state.status = Status.IDLE
        state.in_flight_since = None
    return states


@pytest.mark.parametrize(("seed", "fill"), [(1, True), (2, False), (3, True), (4, False)])
def test_the_scheduler_and_the_simulator_pick_the_same_records(
    harness: Any, seed: int, fill: bool
) -> None:
    policy, now, capacity = _simulated_states(300, seed, steps=30, fill=fill, end=HARNESS_NOW)
    records = _store_copy(policy)
    h = harness(
        {
            "FRESH_CYCLE_BUDGET": capacity,
            "FRESH_NEW_URL_SHARE": 0.0,
            "FRESH_CYCLE_FILL": fill,
            "FRESH_CYCLE_LOOKAHEAD_SECS": 0,
        },
        records=records,
    )
    # the same scores: the crawler's defaults, the refresh rule's p_c decay
    assert h.runtime.score_params == policy.params
    leased = set(h.runtime.leases)
    simulated = {policy.states[i].key for i in policy.select(now, capacity)}
    assert len(leased) == min(capacity, len(records)) or not fill
    assert leased
    assert simulated == leased


def test_pruned_simulator_picks_are_the_planners_on_every_record() -> None:
    for seed in range(5):
        policy, now, capacity = _simulated_states(200, seed, steps=20, fill=True)
        expected = plan_cycle(_store_copy(policy), now, capacity, policy.params)
        got = [policy.states[i].key for i in policy.select(now, capacity)]
        assert set(got) == {s.key for _, s in expected.taken}


@pytest.mark.parametrize("seed", range(6))
def test_planner_agrees_with_the_whole_list_oracle(seed: int) -> None:
    rng = random.Random(seed)
    now = 40 * DAY
    params = ScoreParams(fill=bool(seed % 2))
    states = []
    for i in range(400):
        visited = rng.random() < 0.85
        states.append(
            PageState(
                key=f"{i:040x}",
                url=f"http://h{i % 7}.example/{i}",
                host=f"h{i % 7}.example",
                status=Status.IDLE if visited else Status.QUEUED,
                first_seen=0.0,
                last_crawl=now - rng.uniform(0.1, 9) * DAY if visited else None,
                next_due=now + rng.uniform(-5, 5) * DAY,
                visits=rng.randint(1, 30) if visited else 0,
                p_c=rng.random(),
            )
        )
    budget, share = 60, 0.25
    plan = plan_cycle(states, now, budget, params, new_share=share)
    reserve = round(budget * share)
    due_old = sorted(
        (s for s in states if s.last_crawl is not None and s.next_due <= now),
        key=lambda s: (s.next_due, s.key),
    )
    waiting = [s for s in states if s.last_crawl is not None and s.next_due > now]
    oracle = rank_for_budget(due_old, waiting, now, budget - reserve, params)
    take_old = min(len(oracle), budget - reserve)
    old_keys = [s.key for _, s in plan.taken if s.last_crawl is not None]
    assert set(old_keys) == {s.key for _, s in oracle[:take_old]}
    new_keys = [s.key for _, s in plan.taken if s.last_crawl is None]
    n_new = sum(1 for s in states if s.last_crawl is None and s.next_due <= now)
    assert len(new_keys) == min(n_new, budget - take_old)
    assert len(plan.taken) + plan.budget_left == budget


@pytest.mark.parametrize("seed", range(6))
def test_pruned_picks_hold_with_many_equal_scores(seed: int) -> None:
    """Pages with equal change rates (many equal scores), budgets from a fifth of the
    pages to more than all of them, fill on and off: the simulator's pruned choice is
    the planner's over every record, cycle after cycle."""
    rng = random.Random(seed)
    pages = rng.choice([5, 20, 80])
    trace = poisson_trace([rng.choice([0.0, 1.0, 1.0, 3.0]) for _ in range(pages)], 10, seed=seed)
    step = 3600.0 * rng.choice([1, 6])
    config = SimConfig(
        budget=rng.choice([0.2, 1.0, 5.0]),
        step_secs=step,
        seed=seed,
        score=ScoreParams(fill=seed % 2 == 0),
    )
    ctx = build_context(trace, config)
    policy = Fresh(ctx)
    assert policy._pruning  # the pruned path is the one under test
    now = trace.start
    capacity = max(1, round(ctx.rate * step))
    for _ in range(40):
        expected = plan_cycle(_store_copy(policy), now, capacity, policy.params)
        got = policy.select(now, capacity)
        assert {policy.states[i].key for i in got} == {s.key for _, s in expected.taken}
        for j, page in enumerate(got):
            policy.visited(page, now + (j + 0.5) * step / len(got), rng.random() < 0.3, None)
        now += step
