"""Freshness, age, harmonic staleness and P_fresh(R) (policy/metrics.py)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_fresh.policy.metrics import (
    TraceMetrics,
    expected_age,
    f_access,
    harmonic_number,
    harmonic_staleness,
    p_fresh_page,
    p_fresh_repository,
    poisson_age,
    poisson_freshness,
    poisson_harmonic_staleness,
    time_averaged_age,
    time_averaged_freshness,
    trace_metrics,
)

FAST = settings(max_examples=50, deadline=None, database=None)

rates = st.floats(min_value=0.0, max_value=1e6)
positive_rates = st.floats(min_value=1e-12, max_value=1e6)
event_times = st.lists(st.floats(min_value=0.0, max_value=100.0), max_size=15)


# Harmonic staleness penalty H(n) (Kolobov et al. 2019)


def test_harmonic_numbers():
    assert harmonic_number(0) == 0.0
    assert harmonic_number(1) == 1.0
    assert harmonic_number(2) == 1.5
    assert harmonic_number(4) == pytest.approx(25 / 12)
    # The asymptotic branch joins the exact sum smoothly.
    exact = math.fsum(1 / i for i in range(1, 1002))
    assert harmonic_number(1001) == pytest.approx(exact, rel=1e-14)
    assert harmonic_number(10**9) - math.log(10**9) == pytest.approx(0.5772156649, abs=1e-9)
    with pytest.raises(ValueError, match=r"n \(-1\) must be 0 or higher"):
        harmonic_number(-1)
    with pytest.raises(TypeError, match="n must be an int"):
        harmonic_number(1.5)  # type: ignore[arg-type]


# Xu et al. eq. 1-3


def test_f_access_eq_2():
    assert f_access(25, 100) == 0.25
    assert f_access(0, 0) == 0.0
    with pytest.raises(ValueError, match=r"page_accesses \(5\) must not exceed"):
        f_access(5, 4)


def test_p_fresh_page_eq_3():
    assert p_fresh_page([], 0, 100) == 1.0
    assert p_fresh_page([10], 20, 100) == 1.0  # before the last crawl: not missed
    assert p_fresh_page([150], 20, 100) == 1.0  # after now: not happened yet
    # m = 1, 2 oldest first: 1 * (100 - 40) + 2 * (100 - 90) = 80.
    assert p_fresh_page([40, 90], 20, 100) == pytest.approx(1 / 80)
    assert p_fresh_page([90, 40], 20, 100) == pytest.approx(1 / 80)


def test_p_fresh_page_weights_later_updates_by_rank():
    # Same two ages, but the rank multiplies the newer one: 1*60 + 2*10 vs a single 60.
    assert p_fresh_page([40, 90], 20, 100) < p_fresh_page([40], 20, 100)
    assert p_fresh_page([40], 20, 100) == pytest.approx(1 / 60)


def test_p_fresh_page_stays_within_0_and_1():
    assert p_fresh_page([100], 20, 100) == 1.0  # missed right now: sum is 0
    assert p_fresh_page([99.5], 20, 100) == 1.0  # sum below one time unit
    assert p_fresh_page([40, 90], 20, 100, time_unit=60) == pytest.approx(0.75)


@FAST
@given(updates=event_times, last_crawl=st.floats(0, 50), elapsed=st.floats(0, 100))
def test_p_fresh_page_is_a_probability_that_decays(updates, last_crawl, elapsed):
    now = last_crawl + elapsed
    value = p_fresh_page(updates, last_crawl, now)
    assert 0.0 <= value <= 1.0
    assert p_fresh_page(updates, last_crawl, now + 10) <= value


def test_p_fresh_repository_eq_1():
    assert p_fresh_repository([(75, 1.0), (25, 0.2)]) == pytest.approx(0.8)
    assert p_fresh_repository([(0, 1.0), (0, 0.5)]) == 0.75
    assert p_fresh_repository([]) == 1.0
    with pytest.raises(ValueError, match=r"pages\[0\] p_fresh \(1\.5\) must be within"):
        p_fresh_repository([(1, 1.5)])


@FAST
@given(pages=st.lists(st.tuples(st.integers(0, 1000), st.floats(0, 1)), max_size=20))
def test_p_fresh_repository_is_a_weighted_mean(pages):
    value = p_fresh_repository(pages)
    assert 0.0 <= value <= 1.0
    if pages:
        assert min(f for _, f in pages) - 1e-12 <= value <= max(f for _, f in pages) + 1e-12


# Time-averaged freshness, age, harmonic staleness over a trace


def test_trace_metrics_worked_example():
    assert trace_metrics([2, 6], [4], 0, 8) == TraceMetrics(0.5, 0.5, 0.5)
    assert time_averaged_freshness([2, 6], [4], 0, 8) == 0.5
    assert time_averaged_age([2], [], 0, 4) == 0.5
    assert harmonic_staleness([3, 3, 3], [], 0, 4) == pytest.approx((1 + 1 / 2 + 1 / 3) / 4)


def test_harmonic_staleness_counts_every_missed_change():
    # Same freshness and age, but two missed changes cost 1.5 instead of 1 at the end.
    one = trace_metrics([2], [], 0, 4)
    two = trace_metrics([2, 3], [], 0, 4)
    assert one.freshness == two.freshness == 0.5
    assert one.age == two.age
    assert two.harmonic_staleness == pytest.approx((1 * 1 + 1.5 * 1) / 4)
    assert one.harmonic_staleness == pytest.approx(0.5)


def test_fetch_at_a_change_instant_sees_it():
    assert trace_metrics([5], [5], 0, 10) == TraceMetrics(1.0, 0.0, 0.0)


def test_state_at_start_comes_from_earlier_fetches():
    # Fetched at -10, changed at -4: stale from the start, age 4 at start.
    result = trace_metrics([-4], [-10], 0, 2)
    assert result.freshness == 0.0
    assert result.age == pytest.approx(5.0)  # mean of 4..6
    # Without an earlier fetch the copy is taken as up to date at start.
    assert trace_metrics([-4], [], 0, 2) == TraceMetrics(1.0, 0.0, 0.0)


def test_empty_interval_and_empty_history():
    assert trace_metrics([], [], 5, 5) == TraceMetrics(1.0, 0.0, 0.0)
    assert trace_metrics([3], [1], 5, 5) == TraceMetrics(0.0, 2.0, 1.0)
    assert trace_metrics([], [], 0, 10) == TraceMetrics(1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match=r"end \(1\) must not be earlier than start \(2\)"):
        trace_metrics([], [], 2, 1)


@FAST
@given(changes=event_times, fetches=event_times, start=st.floats(0, 50), span=st.floats(0, 50))
def test_trace_metrics_bounds(changes, fetches, start, span):
    end = start + span
    m = trace_metrics(changes, fetches, start, end)
    assert 0.0 <= m.freshness <= 1.0
    assert all(math.isfinite(v) for v in m)
    assert m.age >= 0.0
    assert m.harmonic_staleness >= 0.0
    if span > 0:
        # Stale time costs at least H(1) = 1 per unit.
        assert m.harmonic_staleness >= (1.0 - m.freshness) - 1e-9
        # The age never exceeds the time since the oldest event before end.
        oldest = min([start, *changes, *fetches])
        assert m.age <= end - oldest + 1e-9


@FAST
@given(changes=event_times, fetches=event_times)
def test_an_extra_fetch_never_hurts(changes, fetches):
    base = trace_metrics(changes, fetches, 0, 100)
    more = trace_metrics(changes, [*fetches, 50.0], 0, 100)
    assert more.freshness >= base.freshness - 1e-12
    assert more.age <= base.age + 1e-9
    assert more.harmonic_staleness <= base.harmonic_staleness + 1e-9


def test_trace_of_a_poisson_page_matches_the_closed_forms():
    rng = random.Random(20240501)
    change_rate, interval, horizon = 0.8, 1.0, 20_000.0
    changes, t = [], 0.0
    while True:
        t += rng.expovariate(change_rate)
        if t > horizon:
            break
        changes.append(t)
    fetches = [k * interval for k in range(int(horizon / interval) + 1)]
    m = trace_metrics(changes, fetches, 0.0, horizon)
    assert m.freshness == pytest.approx(poisson_freshness(change_rate, 1 / interval), abs=0.01)
    assert m.age == pytest.approx(poisson_age(change_rate, 1 / interval), abs=0.01)


# Poisson closed forms


def test_poisson_freshness_values_and_limits():
    assert poisson_freshness(1.0, 1.0) == pytest.approx(1 - math.exp(-1))
    assert poisson_freshness(0.0, 1.0) == 1.0
    assert poisson_freshness(0.0, 0.0) == 1.0
    assert poisson_freshness(1.0, 0.0) == 0.0
    assert poisson_freshness(1e-300, 1.0) == 1.0
    assert poisson_freshness(1e-9, 1.0) == pytest.approx(1 - 0.5e-9, rel=1e-15)
    assert poisson_freshness(1e6, 1.0) == pytest.approx(1e-6)


@FAST
@given(lam1=rates, lam2=rates, f=positive_rates)
def test_poisson_freshness_falls_as_r_grows(lam1, lam2, f):
    low, high = sorted((lam1, lam2))
    a, b = poisson_freshness(low, f), poisson_freshness(high, f)
    assert 0.0 <= b <= a <= 1.0
    assert not math.isnan(a)


def test_poisson_age_values_and_limits():
    assert poisson_age(1.0, 1.0) == pytest.approx(0.5 - 1 + (1 - math.exp(-1)))
    assert poisson_age(0.0, 1.0) == 0.0
    assert poisson_age(1e-300, 1.0) == pytest.approx(1e-300 / 6)
    assert poisson_age(1e-6, 1.0) == pytest.approx(1e-6 / 6, rel=1e-5)
    assert poisson_age(1e9, 1.0) == pytest.approx(0.5, rel=1e-6)  # half an interval
    assert poisson_age(2.0, 4.0) == pytest.approx(poisson_age(0.5, 1.0) / 4)
    with pytest.raises(ValueError, match=r"revisit_rate \(0\.0\) must be higher than 0"):
        poisson_age(1.0, 0.0)


def test_poisson_age_series_joins_the_closed_form():
    below = poisson_age(1.0 - 1e-9, 1.0)
    above = poisson_age(1.0 + 1e-9, 1.0)
    assert below == pytest.approx(above, rel=1e-8)


@FAST
@given(lam1=rates, lam2=rates, f=st.floats(1e-6, 1e6))
def test_poisson_age_grows_with_change_rate(lam1, lam2, f):
    low, high = sorted((lam1, lam2))
    a, b = poisson_age(low, f), poisson_age(high, f)
    assert 0.0 <= a <= b * (1 + 1e-12) + 1e-300
    assert b <= 0.5 / f * (1 + 1e-12)


def test_expected_age_is_the_lecture_integral():
    lam, t = 1 / 7, 7.0
    steps = 20_000
    dx = t / steps
    integral = sum(
        lam * math.exp(-lam * (k + 0.5) * dx) * (t - (k + 0.5) * dx) * dx for k in range(steps)
    )
    assert expected_age(lam, t) == pytest.approx(integral, rel=1e-6)
    assert expected_age(0.0, 7.0) == 0.0
    assert expected_age(1e-12, 1.0) == pytest.approx(0.5e-12)
    assert expected_age(1e6, 2.0) == pytest.approx(2.0 - 1e-6)


def test_poisson_harmonic_staleness():
    assert poisson_harmonic_staleness(1.0, 1.0) == pytest.approx(math.log(2))
    assert poisson_harmonic_staleness(0.0, 0.0) == 0.0
    assert poisson_harmonic_staleness(1e-12, 1.0) == pytest.approx(1e-12)
    with pytest.raises(ValueError, match=r"crawl_rate \(0\) must be higher than 0"):
        poisson_harmonic_staleness(1.0, 0)


def test_poisson_harmonic_staleness_matches_a_geometric_count():
    # Missed changes at a random crawl instant are geometric with q = D / (D + rho).
    delta, rho = 3.0, 2.0
    q = delta / (delta + rho)
    expected = sum((1 - q) * q**n * harmonic_number(n) for n in range(400))
    assert poisson_harmonic_staleness(delta, rho) == pytest.approx(expected, rel=1e-9)
