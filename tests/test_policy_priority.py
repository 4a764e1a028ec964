"""Xu et al. provider-aware priority scores and slot rule (policy/priority.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_fresh.policy.priority import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    DEFAULT_S,
    PROVIDER_LEVELS,
    assign_slot,
    assign_slots,
    future_score,
    past_known_score,
    past_unknown_score,
    score_for_provider,
    spread_accesses,
    stale_accesses,
    unified_score,
)
from scrapy_fresh.store.base import Provider

FAST = settings(max_examples=50, deadline=None, database=None)

times = st.floats(min_value=0.0, max_value=1e6)
counts = st.lists(st.integers(min_value=0, max_value=1000), max_size=8)


def test_table_2_defaults():
    assert (DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_S) == (0.8, 0.8, 5)


def test_provider_levels_match_the_store_records():
    assert tuple(p.value for p in Provider) == PROVIDER_LEVELS


# Eq. 5: S_past^unknown = 1/2 (t_now - t_LC)(N_now + c)


def test_past_unknown_is_the_triangle_area():
    assert past_unknown_score(100, 4, 110, c=1) == 0.5 * 10 * 5
    assert past_unknown_score(100, 4, 110, c=0) == 20.0
    assert past_unknown_score(100, 4, 110, c=0, total_accesses=40) == 0.5
    assert past_unknown_score(100, 4, 160, c=0, time_unit=60) == pytest.approx(2.0)
    # Crawled just now: nothing to gain, even with accesses.
    assert past_unknown_score(100, 4, 100) == 0.0


def test_past_unknown_constant_lets_unaccessed_pages_age():
    assert past_unknown_score(0, 0, 10) < past_unknown_score(0, 0, 20)
    assert past_unknown_score(0, 0, 20, c=0) == 0.0


def test_past_unknown_validates():
    with pytest.raises(ValueError, match=r"now \(5\) must not be earlier than last_crawl \(10\)"):
        past_unknown_score(10, 0, 5)
    with pytest.raises(ValueError, match=r"total_accesses \(3\) must not be lower"):
        past_unknown_score(0, 4, 10, total_accesses=3)
    with pytest.raises(ValueError, match=r"c \(-1\) must be 0 or higher"):
        past_unknown_score(0, 4, 10, c=-1)


@FAST
@given(t_lc=times, d1=times, d2=times, n=st.integers(0, 10_000))
def test_past_unknown_grows_with_time_and_is_finite(t_lc, d1, d2, n):
    short, long = sorted((d1, d2))
    a = past_unknown_score(t_lc, n, t_lc + short)
    b = past_unknown_score(t_lc, n, t_lc + long)
    assert 0.0 <= a <= b
    assert math.isfinite(b)
    assert past_unknown_score(t_lc, n + 1, t_lc + long) >= b


# Eq. 4: S_past^known = sum_m (t_m - t_{m-1}) N_{t_m}


def test_past_known_worked_example():
    # Crawl at 0; missed updates at 10 and 20; accesses at 5 (fresh), 12, 15, 25; now 30.
    assert stale_accesses([5, 12, 15, 25], 10, 20) == 2
    assert stale_accesses([5, 12, 15, 25], 10, 30) == 3
    assert past_known_score(0, [10, 20], [5, 12, 15, 25], 30) == 10 * 2 + 10 * 3
    assert past_known_score(0, [20, 10], [25, 15, 12, 5], 30) == 50.0  # any order
    assert past_known_score(0, [10, 20], [5, 12, 15, 25], 30, total_accesses=200) == 0.25


def test_past_known_ignores_updates_outside_the_stale_window():
    # Update at the crawl instant was captured; update after now has not happened.
    assert past_known_score(10, [10, 40], [15, 20], 30) == 0.0
    assert past_known_score(0, [], [1, 2, 3], 30) == 0.0


def test_past_known_single_missed_update_keeps_gaining_priority():
    # One missed update: the interval up to now carries the score (our reading of eq. 4).
    early = past_known_score(0, [10], [12, 14], 20)
    later = past_known_score(0, [10], [12, 14], 40)
    assert early == 10 * 2
    assert later == 30 * 2
    # Accesses before the update hit a fresh copy and do not count.
    assert past_known_score(0, [10], [2, 4, 12], 20) == 10 * 1


def test_access_at_the_update_instant_is_stale():
    assert stale_accesses([10.0], 10.0, 10.0) == 1
    assert past_known_score(0, [10], [10], 11) == 1.0


@FAST
@given(
    t_lc=times,
    updates=st.lists(st.floats(0, 1000), max_size=6),
    accesses=st.lists(st.floats(0, 1000), max_size=12),
    d1=st.floats(0, 1000),
    d2=st.floats(0, 1000),
)
def test_past_known_is_finite_and_never_falls_as_time_passes(t_lc, updates, accesses, d1, d2):
    short, long = sorted((d1, d2))
    ups = [t_lc + u for u in updates]
    acc = [t_lc + a for a in accesses]
    a = past_known_score(t_lc, ups, acc, t_lc + short)
    b = past_known_score(t_lc, ups, acc, t_lc + long)
    assert math.isfinite(a)
    assert 0.0 <= a <= b * (1 + 1e-12) + 1e-9


# Eq. 6: S_future


def test_future_score_literal_reading():
    # Flat history: (0.8 C + 0.2 * 4 C) / 5 C = 0.32.
    assert future_score(1.0, [10] * 5) == pytest.approx(0.32)
    # All accesses in the last cycle: alpha; none: 1 - alpha (times the share of older ones).
    assert future_score(1.0, [0, 0, 0, 0, 7]) == pytest.approx(0.8)
    assert future_score(1.0, [7, 0, 0, 0, 0]) == pytest.approx(0.2)
    assert future_score(0.5, [10] * 5) == pytest.approx(0.16)


def test_future_score_uses_only_the_last_s_cycles():
    assert future_score(1.0, [1000, 10, 10, 10, 10, 10]) == pytest.approx(0.32)
    assert future_score(1.0, [10, 20], s=1) == pytest.approx(0.8)


def test_future_score_repository_share_reading():
    # The page had 50 of the 500 accesses on R in the window: a tenth of the literal score.
    assert future_score(1.0, [10] * 5, window_total=500) == pytest.approx(0.032)
    with pytest.raises(ValueError, match=r"window_total \(10\) must not be lower"):
        future_score(1.0, [10] * 5, window_total=10)


def test_future_score_without_history_is_zero():
    assert future_score(1.0, []) == 0.0
    assert future_score(1.0, [0, 0, 0]) == 0.0
    assert future_score(1.0, [0, 0], window_total=0) == 0.0


def test_future_score_validates():
    with pytest.raises(ValueError, match=r"p_update \(1\.5\) must be within \[0, 1\]"):
        future_score(1.5, [1])
    with pytest.raises(ValueError, match=r"s \(0\) must be 1 or higher"):
        future_score(1.0, [1], s=0)
    with pytest.raises(TypeError, match="access_counts must be a sequence"):
        future_score(1.0, 5)  # type: ignore[arg-type]


@FAST
@given(p=st.floats(0, 1), history=counts, alpha=st.floats(0, 1), s=st.integers(1, 8))
def test_future_score_is_bounded_by_p_update(p, history, alpha, s):
    score = future_score(p, history, alpha=alpha, s=s)
    assert 0.0 <= score <= p * max(alpha, 1 - alpha) + 1e-12


@FAST
@given(p1=st.floats(0, 1), p2=st.floats(0, 1), history=counts)
def test_future_score_grows_with_p_update(p1, p2, history):
    low, high = sorted((p1, p2))
    assert future_score(low, history) <= future_score(high, history)


# Eq. 7 and the dispatcher


def test_unified_score_mixes_past_and_future():
    assert unified_score(0.5, 0.25) == pytest.approx(0.8 * 0.5 + 0.2 * 0.25)
    assert unified_score(0.5, 0.25, beta=1.0) == 0.5
    assert unified_score(0.5, 0.25, beta=0.0) == 0.25


def test_score_for_provider_follows_the_text_not_table_1():
    common = {"now": 30.0, "last_crawl": 0.0, "total_accesses": 100}
    # normal -> eq. 5 (Table 1 says eq. 4)
    assert score_for_provider("normal", accesses_since_crawl=4, **common) == past_unknown_score(
        0.0, 4, 30.0, total_accesses=100
    )
    # smart -> eq. 4 (Table 1 says eq. 5)
    smart = score_for_provider(
        "smart", update_times=[10, 20], access_times=[5, 12, 15, 25], **common
    )
    assert smart == past_known_score(0.0, [10, 20], [5, 12, 15, 25], 30.0, total_accesses=100)
    # super -> eq. 7 for an announced update, eq. 4 for its past update
    sup = score_for_provider(
        "super",
        update_times=[10, 20],
        access_times=[5, 12, 15, 25],
        p_update=0.5,
        access_counts=[10] * 5,
        **common,
    )
    assert sup == pytest.approx(unified_score(smart, future_score(0.5, [10] * 5)))
    past_of_super = score_for_provider(
        "super", update_times=[10, 20], access_times=[5, 12, 15, 25], **common
    )
    assert past_of_super == smart


def test_score_for_provider_accepts_store_enum_and_spreads_counts():
    assert score_for_provider(Provider.NORMAL, now=10, last_crawl=0, accesses_since_crawl=2) == (
        score_for_provider("normal", now=10, last_crawl=0, accesses_since_crawl=2)
    )
    # Two accesses spread over (0, 40] land at 10 and 30; the update at 20 missed one of them.
    assert spread_accesses(2, 0, 40) == [10.0, 30.0]
    assert score_for_provider(
        "smart", now=40, last_crawl=0, update_times=[20], accesses_since_crawl=2
    ) == past_known_score(0, [20], [10.0, 30.0], 40)


def test_score_for_provider_rejects_unknown_levels():
    with pytest.raises(ValueError, match=r"level \('gold'\) must be one of"):
        score_for_provider("gold", now=1, last_crawl=0)
    with pytest.raises(TypeError, match="level must be a str"):
        score_for_provider(1, now=1, last_crawl=0)  # type: ignore[arg-type]


# Slots (Section 4.1)


def test_past_update_takes_the_next_free_slot():
    slots = [0.0, 10.0, 20.0]
    assert assign_slot(100.0, slots, set(), future=False) == 0
    assert assign_slot(100.0, slots, {0, 1}, future=False) == 2
    assert assign_slot(100.0, slots, {0, 1, 2}, future=False) is None


def test_future_update_takes_the_first_free_slot_after_its_time():
    slots = [0.0, 10.0, 20.0, 30.0]
    assert assign_slot(5.0, slots, set(), future=True) == 1
    assert assign_slot(10.0, slots, set(), future=True) == 2  # strictly after
    assert assign_slot(5.0, slots, {1, 2}, future=True) == 3
    assert assign_slot(30.0, slots, set(), future=True) is None


def test_slots_must_be_sorted():
    with pytest.raises(ValueError, match=r"slots\[1\] \(0\.0\) must not be earlier than"):
        assign_slot(1.0, [5.0, 0.0], set(), future=False)


def test_assign_slots_serves_highest_score_first():
    slots = [0.0, 10.0]
    candidates = [(1.0, 0.0, False), (9.0, 0.0, False), (5.0, 0.0, False)]
    assert assign_slots(candidates, slots) == [None, 0, 1]
    assert assign_slots(candidates, slots, taken=[0]) == [None, 1, None]


@FAST
@given(
    slots=st.lists(st.floats(0, 100), max_size=10).map(sorted),
    candidates=st.lists(
        st.tuples(st.floats(0, 10), st.floats(0, 100), st.booleans()), max_size=12
    ),
)
def test_assigned_slots_are_distinct_and_respect_update_times(slots, candidates):
    result = assign_slots(candidates, slots)
    assigned = [s for s in result if s is not None]
    assert len(assigned) == len(set(assigned))
    for (_, update_time, future), slot in zip(candidates, result, strict=True):
        if slot is not None and future:
            assert slots[slot] > update_time
    if len(slots) >= len(candidates) and not any(c[2] for c in candidates):
        assert None not in result  # past updates always fit while slots remain
