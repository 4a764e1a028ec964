"""Cost-aware degree of success and refresh step (scrapy_fresh.policy.cost)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy.cost import (
    check_cost_ratio,
    cost_aware_band,
    cost_aware_refresh,
    cost_weighted_success,
    poisson_interval_ratio,
)
from scrapy_fresh.policy.refresh import adjust_refresh

probability = st.floats(0.0, 1.0)
cost = st.floats(1e-4, 1.0)
seconds = st.floats(1.0, 1e7)


@given(probability, cost)
def test_weighted_success_is_a_probability_at_least_p_c(p_c, c):
    p = cost_weighted_success(p_c, c)
    assert 0.0 <= p <= 1.0
    assert p >= p_c - 1e-12  # a cheap quiet check weighs less than a download
    assert cost_weighted_success(p_c, 1.0) == p_c


@given(st.floats(0.001, 0.999), cost, cost)
def test_weighted_success_falls_as_checks_cost_more(p_c, c1, c2):
    low, high = sorted((c1, c2))
    assert cost_weighted_success(p_c, low) >= cost_weighted_success(p_c, high) - 1e-12


@given(probability, probability, cost)
def test_weighted_success_rises_with_p_c(a, b, c):
    low, high = sorted((a, b))
    assert cost_weighted_success(low, c) <= cost_weighted_success(high, c) + 1e-12


def test_weighted_success_is_the_share_of_bytes_that_found_changes():
    # 1 change in 20 checks; the 19 quiet checks cost 2% of a download each.
    bytes_changed, bytes_quiet = 1 * 1.0, 19 * 0.02
    assert cost_weighted_success(1 / 20, 0.02) == pytest.approx(
        bytes_changed / (bytes_changed + bytes_quiet)
    )


@given(st.floats(0.01, 0.49), st.floats(0.51, 0.99), cost)
def test_band_is_where_the_weighted_success_meets_the_thresholds(p_l, p_g, c):
    low, high = cost_aware_band(p_l, p_g, c)
    assert 0.0 < low < high < 1.0
    assert low <= p_l
    assert high <= p_g
    assert cost_weighted_success(low, c) == pytest.approx(p_l)
    assert cost_weighted_success(high, c) == pytest.approx(p_g)


def test_band_of_full_downloads_is_the_papers():
    assert cost_aware_band(0.3, 0.7, 1.0) == pytest.approx((0.3, 0.7))


@given(seconds, probability, st.floats(0.1, 0.9), st.floats(0.0, 0.1))
def test_full_cost_is_exactly_adjust_refresh(t, p_c, p_l, gap):
    p_g = min(1.0, p_l + 0.05 + gap)
    expected = adjust_refresh(t, p_c, p_l, p_g, min_secs=1.0, max_secs=1e8)
    got = cost_aware_refresh(
        t, p_c, p_l, p_g, check_cost=1.0, visit_cost=1.0, min_secs=1.0, max_secs=1e8
    )
    assert got == expected


@given(seconds, probability, cost, cost)
def test_result_stays_within_bounds(t, p_c, c, w):
    got = cost_aware_refresh(t, p_c, check_cost=c, visit_cost=w, min_secs=60.0, max_secs=1e6)
    assert 60.0 <= got <= 1e6


@given(st.floats(100.0, 1e5), st.sampled_from([0.5, 0.25, 0.1, 0.05, 0.02]))
def test_cheap_quiet_checks_add_up_to_one_paper_step(t, c):
    """1/c quiet checks costing c each move the refresh time as far as one quiet
    download does in the paper (p_c = 0: the paper doubles)."""
    n = round(1 / c)
    now = t
    for _ in range(n):
        now = cost_aware_refresh(now, 0.0, check_cost=c, visit_cost=c, min_secs=1, max_secs=1e9)
    assert now == pytest.approx(2 * t, rel=1e-9)


def test_a_change_steps_in_full_and_a_cheap_page_settles_shorter():
    # p_c = 0.5: within the paper's band (kept), above the band of 5% checks (shortened
    # by a whole paper step: the change was a full download).
    assert (
        cost_aware_refresh(3600, 0.5, check_cost=1.0, visit_cost=1.0, min_secs=1, max_secs=1e9)
        == 3600
    )
    cheap = cost_aware_refresh(
        3600, 0.5, check_cost=0.05, visit_cost=1.0, min_secs=1, max_secs=1e9
    )
    weighted = 0.5 / (0.5 + 0.05 * 0.5)
    assert cheap == pytest.approx(3600 * (2 - weighted / 0.7))


def test_a_step_below_zero_stops_at_the_minimum():
    # p_g = 0.4 and p_c = 1: eq. 1-2 give 100 * (2 - 1/0.4) < 0.
    got = cost_aware_refresh(
        100.0, 1.0, 0.2, 0.4, check_cost=0.5, visit_cost=0.5, min_secs=10.0, max_secs=1e3
    )
    assert got == pytest.approx(100.0 * math.sqrt(0.1))


def test_check_cost_ratio():
    assert check_cost_ratio(150, 10_000, floor=0.01) == pytest.approx(0.015)
    assert check_cost_ratio(150, 10_000, floor=0.05) == 0.05
    assert check_cost_ratio(0, 0, floor=0.05) is None
    assert check_cost_ratio(5_000, 1_000, floor=0.05) == 1.0


@given(st.floats(0.01, 0.99), st.floats(0.0, 0.99))
def test_poisson_interval_ratio_follows_the_probabilities(p, q):
    ratio = poisson_interval_ratio(p, q)
    assert (ratio < 1.0) == (q < p) or ratio == pytest.approx(1.0)
    rate = 1e-4  # a change per 10^4 s: the ratio does not depend on it
    t_p, t_q = -math.log1p(-p) / rate, -math.log1p(-q) / rate
    assert ratio == pytest.approx(t_q / t_p)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: cost_weighted_success(0.5, 0.0), "check_cost"),
        (lambda: cost_weighted_success(0.5, 1.5), "check_cost"),
        (lambda: cost_weighted_success(1.5, 0.5), "p_c"),
        (lambda: cost_aware_band(0.7, 0.3, 0.5), "p_l"),
        (lambda: check_cost_ratio(1, 10, floor=0.0), "floor"),
        (lambda: check_cost_ratio(-1, 10, floor=0.1), "check_bytes"),
        (
            lambda: cost_aware_refresh(
                10, 0.5, check_cost=0.5, visit_cost=2.0, min_secs=1, max_secs=100
            ),
            "visit_cost",
        ),
        (lambda: poisson_interval_ratio(1.0, 0.5), "p"),
    ],
)
def test_bad_arguments_name_themselves(call, name):
    with pytest.raises(ConfigError, match=name):
        call()


def test_wrong_types_are_type_errors():
    with pytest.raises(TypeError, match="check_cost"):
        cost_weighted_success(0.5, "cheap")  # type: ignore[arg-type]
