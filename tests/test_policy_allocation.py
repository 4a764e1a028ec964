"""Budget allocation baselines (policy/allocation.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_fresh.policy.allocation import (
    cho_marginal_gain,
    cho_optimal,
    lambdacrawl_optimal,
    proportional,
    uniform,
)
from scrapy_fresh.policy.metrics import poisson_freshness, poisson_harmonic_staleness

FAST = settings(max_examples=40, deadline=None, database=None)

# Subnormal budgets cannot be split among pages at all, so they are left out.
rate_lists = st.lists(
    st.floats(min_value=0.0, max_value=100.0, allow_subnormal=False), min_size=1, max_size=12
)
budgets = st.floats(min_value=0.0, max_value=200.0, allow_subnormal=False)
ALLOCATORS = [uniform, proportional, cho_optimal, lambdacrawl_optimal]


def total_freshness(rates, freqs, weights=None):
    weights = weights or [1.0] * len(rates)
    return sum(
        w * poisson_freshness(lam, f) for lam, f, w in zip(rates, freqs, weights, strict=True)
    )


def total_harmonic_staleness(rates, crawl, weights=None):
    weights = weights or [1.0] * len(rates)
    return sum(
        w * poisson_harmonic_staleness(d, r)
        for d, r, w in zip(rates, crawl, weights, strict=True)
        if d > 0
    )


def test_cho_optimal_paper_example():
    result = cho_optimal([1, 2, 3, 4, 5], 5)
    assert [round(f, 2) for f in result] == [1.15, 1.36, 1.35, 1.14, 0.00]
    assert sum(result) == pytest.approx(5)


def test_cho_optimal_satisfies_the_lagrange_condition():
    rates = [1, 2, 3, 4, 5]
    freqs = cho_optimal(rates, 5)
    gains = [cho_marginal_gain(lam, f) for lam, f in zip(rates, freqs, strict=True) if f > 0]
    mu = gains[0]
    assert all(g == pytest.approx(mu, rel=1e-9) for g in gains)
    # The dropped page's gain even at f -> 0 (1/5) is below the multiplier.
    assert freqs[4] == 0.0
    assert mu > 1 / 5


def test_cho_optimal_beats_the_baselines_on_the_example():
    rates = [1, 2, 3, 4, 5]
    best = total_freshness(rates, cho_optimal(rates, 5))
    assert best > total_freshness(rates, uniform(rates, 5))
    assert best > total_freshness(rates, proportional(rates, 5))


def test_marginal_gain_limits():
    assert cho_marginal_gain(2.0, 0.0) == 0.5
    assert cho_marginal_gain(0.0, 3.0) == 0.0
    assert cho_marginal_gain(1.0, 1e9) == pytest.approx(0.5e-18, rel=1e-6)  # series branch
    assert cho_marginal_gain(2.0, 1.0) == pytest.approx((1 - 3 * math.exp(-2)) / 2)


def test_baselines():
    assert uniform([1, 2, 3, 4, 5], 5) == [1.0] * 5
    assert proportional([1, 1, 2], 8) == [2.0, 2.0, 4.0]
    assert proportional([0, 0], 4) == [2.0, 2.0]  # nothing changes: uniform


@pytest.mark.parametrize("allocator", ALLOCATORS)
def test_edge_cases(allocator):
    assert allocator([], 5) == []
    assert allocator([1, 2], 0) == [0.0, 0.0]
    assert sum(allocator([0, 0, 0], 3)) == pytest.approx(3)
    with pytest.raises(ValueError, match=r"budget \(-1\) must be 0 or higher"):
        allocator([1], -1)
    with pytest.raises(ValueError, match=r"rates\[1\] \(-2\) must be 0 or higher"):
        allocator([1, -2], 1)
    with pytest.raises(TypeError, match="rates must be a sequence"):
        allocator(3, 1)


@pytest.mark.parametrize("allocator", [cho_optimal, lambdacrawl_optimal])
def test_weights_are_validated(allocator):
    with pytest.raises(ValueError, match=r"weights \(1 values\) must have one value per rate"):
        allocator([1, 2], 1, [1.0])
    with pytest.raises(ValueError, match=r"weights\[0\] \(-1\) must be 0 or higher"):
        allocator([1, 2], 1, [-1, 1])


@FAST
@given(allocator=st.sampled_from(ALLOCATORS), rates=rate_lists, budget=budgets)
def test_allocations_spend_the_budget(allocator, rates, budget):
    result = allocator(rates, budget)
    assert len(result) == len(rates)
    assert all(math.isfinite(f) and f >= 0 for f in result)
    assert sum(result) == pytest.approx(budget, rel=1e-9, abs=1e-12)


@FAST
@given(rates=rate_lists, budget=st.floats(0.1, 100.0), scale=st.floats(0.01, 100.0))
def test_cho_optimal_does_not_depend_on_the_time_unit(rates, budget, scale):
    base = cho_optimal(rates, budget)
    scaled = cho_optimal([r * scale for r in rates], budget * scale)
    for a, b in zip(base, scaled, strict=True):
        assert b == pytest.approx(a * scale, rel=1e-6, abs=1e-9 * budget * scale)


@FAST
@given(
    rates=st.lists(st.floats(0.01, 20.0), min_size=2, max_size=8),
    budget=st.floats(0.5, 50.0),
    data=st.data(),
)
def test_cho_optimal_is_no_worse_than_a_perturbation(rates, budget, data):
    best = cho_optimal(rates, budget)
    i = data.draw(st.integers(0, len(rates) - 1))
    j = data.draw(st.integers(0, len(rates) - 1))
    moved = min(best[i], budget * 0.01)
    other = list(best)
    other[i] -= moved
    other[j] += moved
    assert total_freshness(rates, best) >= total_freshness(rates, other) - 1e-9
    assert total_freshness(rates, best) >= total_freshness(rates, uniform(rates, budget)) - 1e-9


def test_cho_optimal_weights_favour_important_pages():
    plain = cho_optimal([1, 1, 1], 3)
    weighted = cho_optimal([1, 1, 1], 3, [1, 1, 4])
    assert plain == pytest.approx([1, 1, 1])
    assert weighted[2] > weighted[0] == pytest.approx(weighted[1])


def test_lambdacrawl_satisfies_the_lagrange_condition():
    deltas = [1, 2, 3, 4, 5]
    weights = [1, 1, 2, 1, 3]
    rho = lambdacrawl_optimal(deltas, 5, weights)
    assert sum(rho) == pytest.approx(5)
    multipliers = [m * d / (r * (r + d)) for d, m, r in zip(deltas, weights, rho, strict=True)]
    assert all(x == pytest.approx(multipliers[0], rel=1e-9) for x in multipliers)
    # Closed form from that multiplier.
    lam = multipliers[0]
    for d, m, r in zip(deltas, weights, rho, strict=True):
        assert r == pytest.approx((-d + math.sqrt(d * d + 4 * m * d / lam)) / 2, rel=1e-9)


def test_lambdacrawl_crawls_every_changing_page():
    rho = lambdacrawl_optimal([1, 2, 3, 4, 5], 5)
    assert all(r > 0 for r in rho)
    assert [round(r, 3) for r in rho] == [0.783, 0.947, 1.037, 1.096, 1.137]
    assert lambdacrawl_optimal([0, 2, 0], 3) == pytest.approx([0, 3, 0])
    assert lambdacrawl_optimal([1, 2], 3, [0, 1]) == pytest.approx([0, 3])


@FAST
@given(
    rates=st.lists(st.floats(0.01, 20.0), min_size=2, max_size=8),
    budget=st.floats(0.5, 50.0),
    data=st.data(),
)
def test_lambdacrawl_is_no_worse_than_a_perturbation(rates, budget, data):
    best = lambdacrawl_optimal(rates, budget)
    i = data.draw(st.integers(0, len(rates) - 1))
    j = data.draw(st.integers(0, len(rates) - 1))
    moved = best[i] * 0.1
    other = list(best)
    other[i] -= moved
    other[j] += moved
    cost = total_harmonic_staleness(rates, best)
    assert cost <= total_harmonic_staleness(rates, other) + 1e-9
    assert cost <= total_harmonic_staleness(rates, uniform(rates, budget)) + 1e-9


@pytest.mark.parametrize("allocator", ALLOCATORS)
@pytest.mark.parametrize(
    ("rates", "budget"),
    [
        ([1e-9, 1.0, 1e6], 10.0),
        ([1e-200, 1.0, 1e200], 10.0),  # rates 1e-150 below the largest count as 0
        ([1.0, 2.0], 1e-300),  # the budget goes to the best page(s) only
        ([1.0, 2.0], 1e300),  # the budget spreads as sqrt(rate * weight)
        ([5e-324, 1.0], 1.0),
    ],
)
def test_allocation_handles_extreme_values(allocator, rates, budget):
    result = allocator(rates, budget)
    assert sum(result) == pytest.approx(budget, rel=1e-9)
    assert all(math.isfinite(f) and f >= 0 for f in result)


def test_cho_optimal_near_a_threshold_page():
    # The fast page's marginal gain (1/5) is almost flat until f ~ lambda / 30, so the
    # optimum sits at float resolution of the multiplier; the budget must still be
    # split optimally (a naive bisection leaves 0.14 on the fast page).
    rates = [5.0, 0.0625]
    best = cho_optimal(rates, 0.5)
    assert best[1] == pytest.approx(0.374, abs=1e-3)
    for moved in (-0.005, 0.005):
        other = [best[0] - moved, best[1] + moved]
        assert total_freshness(rates, best) >= total_freshness(rates, other)
