"""The expected-freshness gain of a fetch (scrapy_fresh.policy.gain) and its use in scoring."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.frontier.scoring import ScoreParams, gain_score, priority_score
from scrapy_fresh.policy.allocation import cho_optimal
from scrapy_fresh.policy.estimators import improved_rate
from scrapy_fresh.policy.gain import (
    change_probability,
    expected_fresh_secs,
    fetch_gain,
    gain_unchecked,
    known_gain,
    rate_floor,
    recent_rate,
    recent_rate_unchecked,
    recent_window_secs,
)
from scrapy_fresh.policy.metrics import poisson_freshness
from scrapy_fresh.policy.refresh import SuccessCounter, decayed_visits
from scrapy_fresh.store.base import PageState, Provider
from tests.budget_oracle import rank_for_budget

DAY = 86400.0
rates = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
positive_rates = st.floats(min_value=1e-9, max_value=1.0, allow_nan=False)
times = st.floats(min_value=0.0, max_value=1e8, allow_nan=False)


@given(positive_rates, times, times)
def test_gain_is_bounded_by_each_of_its_limits(rate, age, horizon):
    g = fetch_gain(rate, age, horizon)
    assert 0.0 <= g <= 1.0 / rate * (1 + 1e-12)
    assert g <= horizon * (1 + 1e-12)
    assert g <= rate * age * horizon * (1 + 1e-9) + 1e-300
    assert g == gain_unchecked(rate, age, horizon)


@given(positive_rates, times, times, st.floats(min_value=0.0, max_value=1e6))
def test_gain_grows_with_age_and_horizon(rate, age, horizon, more):
    assert fetch_gain(rate, age + more, horizon) >= fetch_gain(rate, age, horizon)
    assert fetch_gain(rate, age, horizon + more) >= fetch_gain(rate, age, horizon)


def test_gain_is_the_product_of_cho_and_garcia_molinas_terms():
    rate, age, horizon = 3.0 / DAY, 0.5 * DAY, 2 * DAY
    stale = 1 - math.exp(-rate * age)
    fresh = poisson_freshness(rate * horizon, 1.0) * horizon  # F(lambda, 1/H) * H
    assert change_probability(rate, age) == pytest.approx(stale)
    assert expected_fresh_secs(rate, horizon) == pytest.approx(fresh)
    assert fetch_gain(rate, age, horizon) == pytest.approx(stale * fresh)


@given(st.floats(min_value=1e-3, max_value=1e3), st.floats(min_value=1.0, max_value=1e6))
def test_the_fastest_pages_are_hopeless(rate_per_day, factor):
    # Whatever its age, a page changing `factor` times faster is worth at most
    # 1/factor of it once both are stale for sure: Cho's "give up on the fastest pages".
    slow, fast = rate_per_day / DAY, rate_per_day * factor / DAY
    horizon = 10.0 / slow  # the budget allows far more than the slow page needs
    assert fetch_gain(fast, 1e12, horizon) <= fetch_gain(slow, 1e12, horizon) / factor * 1.0001


def test_greedy_gain_drops_the_pages_cho_optimal_drops():
    # Cho & Garcia-Molina's five pages (1..5 changes a day, 5 fetches a day): the optimum
    # gives the fastest page nothing. After a day unvisited, the gain ranks it last.
    freqs = cho_optimal([1, 2, 3, 4, 5], 5)
    assert freqs[-1] == 0.0
    gains = [
        fetch_gain(r / DAY, DAY, DAY / f if f else DAY)
        for r, f in zip(range(1, 6), freqs, strict=False)
    ]
    assert min(gains) == gains[-1]


def test_known_gain_spends_no_fetch_just_before_an_announced_change():
    rate, horizon = 1.0 / DAY, DAY
    free = known_gain(1.0, rate, horizon)
    assert free == pytest.approx(expected_fresh_secs(rate, horizon))
    soon = known_gain(1.0, rate, horizon, next_change_secs=60.0)
    assert soon < 61.0 < free
    unsure = known_gain(1.0, rate, horizon, next_change_secs=60.0, p_next=0.25)
    assert soon < unsure < free
    assert known_gain(0.0, rate, horizon, next_change_secs=60.0) == 0.0


@given(
    st.floats(min_value=0.0, max_value=1.0),
    st.integers(min_value=0, max_value=10_000),
    st.floats(min_value=0.5, max_value=1.0),
    st.floats(min_value=1.0, max_value=1e7),
)
def test_recent_rate_is_finite_and_grows_with_p_c(p_c, visits, decay, interval):
    r = recent_rate(p_c, visits, decay, interval)
    assert math.isfinite(r)
    assert r >= 0.0
    assert r == recent_rate_unchecked(p_c, visits, decay, interval)
    if visits:
        assert recent_rate(min(1.0, p_c + 0.1), visits, decay, interval) >= r


@given(st.integers(min_value=0, max_value=500), st.integers(min_value=1, max_value=500))
def test_recent_rate_without_decay_is_the_improved_estimator(changes, visits):
    changes = min(changes, visits)
    expected = improved_rate(changes, visits, 3600.0)
    assert recent_rate(changes / visits, visits, 1.0, 3600.0) == pytest.approx(expected)


@given(rates, st.floats(min_value=1.0, max_value=1e9))
def test_rate_floor(rate, watched):
    assert rate_floor(rate, watched) == max(rate, 0.5 / watched)


@given(st.integers(min_value=0, max_value=200), st.floats(min_value=0.5, max_value=1.0))
def test_decayed_visits_is_the_success_counters_weight(visits, decay):
    counter = SuccessCounter()
    for _ in range(visits):
        counter = counter.record(False, decay=decay)
    assert decayed_visits(visits, decay) == pytest.approx(counter.visits, abs=1e-9)
    assert decayed_visits(visits, decay) <= visits


@given(
    st.integers(min_value=0, max_value=10_000),
    st.floats(min_value=0.5, max_value=1.0),
    st.floats(min_value=1.0, max_value=1e7),
    st.floats(min_value=1.0, max_value=1e10),
)
def test_recent_window_covers_the_decayed_visits_within_the_time_watched(
    visits, decay, interval, watched
):
    covered = recent_window_secs(visits, decay, interval, watched)
    assert 0.0 < covered <= watched
    if visits:
        assert covered == pytest.approx(min(watched, decayed_visits(visits, decay) * interval))
    else:
        assert covered == watched


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: fetch_gain(-1.0, 1.0, 1.0), "rate"),
        (lambda: fetch_gain(1.0, float("nan"), 1.0), "elapsed_secs"),
        (lambda: known_gain(1.5, 1.0, 1.0), "p_changed"),
        (lambda: recent_rate(0.5, 3, 0.0, 1.0), "decay"),
        (lambda: recent_rate(0.5, -1, 0.9, 1.0), "visits"),
        (lambda: recent_rate(0.5, 1, 0.9, 0.0), "interval_secs"),
        (lambda: rate_floor(0.0, 0.0), "watched_secs"),
        (lambda: recent_window_secs(-1, 0.9, 1.0, 1.0), "visits"),
        (lambda: recent_window_secs(1, 0.0, 1.0, 1.0), "decay"),
        (lambda: recent_window_secs(1, 0.9, 0.0, 1.0), "interval_secs"),
        (lambda: recent_window_secs(1, 0.9, 1.0, -1.0), "watched_secs"),
    ],
)
def test_bad_arguments_name_themselves(call, match):
    with pytest.raises((ConfigError, TypeError), match=match):
        call()


# -- scoring records ------------------------------------------------------------------


def _record(key, p_c, *, visits=20, age=DAY, provider=Provider.NORMAL, **extra):
    now = 40 * DAY
    return PageState(
        key,
        f"http://a.example/{key}",
        first_seen=0.0,
        last_crawl=now - age,
        visits=visits,
        p_c=p_c,
        provider=provider,
        **extra,
    )


NOW = 40 * DAY


@pytest.mark.parametrize("p_c", [0.4, 0.0])
def test_gain_score_is_the_gain_of_the_records_rate(p_c):
    state = _record("a", p_c)
    horizon = NOW / state.visits
    decay = ScoreParams().decay
    covered = recent_window_secs(20, decay, horizon, NOW)
    rate = rate_floor(recent_rate(p_c, 20, decay, horizon), covered)
    assert gain_score(state, NOW) == pytest.approx(fetch_gain(rate, DAY, horizon))
    assert priority_score(state, NOW) == gain_score(state, NOW)


def test_a_quiet_pages_score_does_not_fade_with_the_length_of_its_quiet_past():
    # Two pages quiet at every visit, both visited every 10 days and last 30 days ago:
    # one watched for 3 years, one for 20. Their decayed counts rest on the same
    # ~15 visits, so a fetch is worth as much for both. (With the floor spread over
    # the whole time watched, the 20-year page scored 20x lower and waited months for
    # the burst that ends its dormancy; peps, docs/topics/simulator.rst.)
    def quiet(key, years):
        watched = years * 365 * DAY
        return PageState(
            key,
            f"http://a.example/{key}",
            first_seen=0.0,
            last_crawl=watched - 30 * DAY,
            visits=round(watched / (10 * DAY)),
            p_c=0.0,
        )

    young, old = quiet("y", 3), quiet("o", 20)
    assert gain_score(old, 20 * 365 * DAY) == pytest.approx(
        gain_score(young, 3 * 365 * DAY), rel=0.01
    )


def test_gain_score_weighs_popularity_and_grows_with_age():
    a, b = _record("a", 0.4), _record("b", 0.4, access_count=5)
    assert gain_score(b, NOW) == pytest.approx(5 * gain_score(a, NOW))
    assert gain_score(a, NOW + DAY) > gain_score(a, NOW)


def test_a_page_that_never_changed_still_ages():
    still = _record("s", 0.0)
    assert 0.0 < gain_score(still, NOW) < gain_score(still, NOW + 30 * DAY)


def test_xu_rule_is_kept_behind_the_setting():
    state = _record("a", 0.4)
    xu = ScoreParams(rule="xu")
    assert priority_score(state, NOW, xu) != priority_score(state, NOW)
    with pytest.raises(ValueError, match="rule"):
        ScoreParams(rule="best")


def test_smart_known_update_makes_the_change_certain():
    unsure = _record("u", 0.2, provider=Provider.SMART)
    known = _record("k", 0.2, provider=Provider.SMART, past_updates=[NOW - 60.0])
    assert gain_score(known, NOW) > gain_score(unsure, NOW)


def test_super_fetch_before_an_announced_change_is_worth_little():
    base = {"provider": Provider.SUPER, "past_updates": [NOW - 600.0]}
    before = _record("b", 0.3, future_updates=[(NOW + 60.0, 1.0)], **base)
    after = _record("c", 0.3, future_updates=[(NOW + 5 * DAY, 1.0)], **base)
    assert gain_score(before, NOW) <= 60.0
    assert gain_score(after, NOW) > 10 * gain_score(before, NOW)


@settings(max_examples=50)
@given(
    st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=12),
    st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=12),
    st.integers(min_value=0, max_value=30),
)
def test_rank_for_budget_keeps_every_candidate_once(due_pcs, waiting_pcs, capacity):
    due = [_record(f"d{i}", p, age=2 * DAY) for i, p in enumerate(due_pcs)]
    waiting = [_record(f"w{i}", p) for i, p in enumerate(waiting_pcs)]
    ranked = rank_for_budget(due, waiting, NOW, capacity)
    assert sorted(s.key for _, s in ranked) == sorted(s.key for s in due + waiting)
    if len(due) <= capacity:  # the budget does not bind: the refresh rule's due pages go
        assert {s.key for _, s in ranked[: len(due)]} == {s.key for s in due}
    else:  # it binds: best score first, due or not
        scores = [score for score, _ in ranked]
        assert scores == sorted(scores, reverse=True)
    no_fill = rank_for_budget(due, waiting, NOW, capacity, ScoreParams(fill=False))
    assert sorted(s.key for _, s in no_fill) == sorted(s.key for s in due)
