"""Change-rate estimators and WebFountain buckets (policy/estimators.py)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_fresh.policy.estimators import (
    MAX_BUCKET_RATE,
    MAX_BUCKETS,
    MIN_BUCKET_RATE,
    bucket_to_rate,
    bucket_width,
    complete_observation_rate,
    improved_rate,
    last_modified_exposure,
    last_modified_rate,
    naive_rate,
    rate_to_bucket,
)

FAST = settings(max_examples=60, deadline=None, database=None)


@st.composite
def visits_and_two_change_counts(draw: st.DrawFn) -> tuple[int, int, int]:
    n = draw(st.integers(min_value=0, max_value=500))
    a = draw(st.integers(min_value=0, max_value=n))
    b = draw(st.integers(min_value=0, max_value=n))
    return n, min(a, b), max(a, b)


def test_naive_rate():
    assert naive_rate(3, 10, 86400) == pytest.approx(3 / 864000)
    assert naive_rate(0, 0, 86400) == 0.0
    with pytest.raises(ValueError, match=r"interval_secs \(0\) must be higher than 0"):
        naive_rate(1, 1, 0)


def test_improved_rate_formula():
    # r = -log((n - X + 0.5) / (n + 0.5)) per interval.
    assert improved_rate(3, 10) == pytest.approx(-math.log(7.5 / 10.5))
    assert improved_rate(3, 10, 3600) == pytest.approx(-math.log(7.5 / 10.5) / 3600)
    # Every visit saw a change: the naive X/n saturates at 1, this does not.
    assert improved_rate(10, 10) == pytest.approx(math.log(21))
    assert improved_rate(0, 0) == 0.0
    assert improved_rate(0, 10) == 0.0


def test_change_count_cannot_exceed_visits():
    for estimator in (naive_rate, improved_rate):
        with pytest.raises(ValueError, match=r"changes \(4\) must not exceed visits \(3\)"):
            estimator(4, 3, 1.0)
    with pytest.raises(ValueError, match=r"changes \(4\) must not exceed visits \(3\)"):
        last_modified_rate(4, 3, 1.0)


@FAST
@given(counts=visits_and_two_change_counts(), interval=st.floats(1e-3, 1e7))
def test_estimators_are_finite_and_grow_with_changes(counts, interval):
    n, x_low, x_high = counts
    for estimator in (naive_rate, improved_rate):
        low = estimator(x_low, n, interval)
        high = estimator(x_high, n, interval)
        assert math.isfinite(high)
        assert 0.0 <= low <= high
        if x_low < x_high:
            assert low < high
    exposure = interval * max(n, 1)
    lm_low = last_modified_rate(x_low, n, exposure)
    lm_high = last_modified_rate(x_high, n, exposure)
    assert math.isfinite(lm_high)
    assert 0.0 <= lm_low <= lm_high + 1e-15


def test_last_modified_rate_formula_and_edges():
    x, n, t = 5, 10, 20.0
    assert last_modified_rate(x, n, t) == pytest.approx(
        (x - 1 - x / (n * math.log(1 - x / n))) / t
    )
    assert last_modified_rate(10, 10, 20.0) == pytest.approx(9 / 20)  # X = n limit
    assert last_modified_rate(0, 10, 20.0) == 0.0  # X = 0 limit
    assert last_modified_rate(0, 0, 0.0) == 0.0
    assert last_modified_rate(3, 10, 0.0) == 0.0  # no exposure
    assert last_modified_rate(1e-300, 10, 1.0) == pytest.approx(0.0, abs=1e-12)


def test_last_modified_exposure():
    # Changed 3 s before the first visit; the second found its last change 25 s old
    # (older than the 10 s interval: no change); the third has no date.
    assert last_modified_exposure([10, 10, 10], [3, 25, None]) == 23.0
    assert last_modified_exposure([], []) == 0.0
    with pytest.raises(ValueError, match="one value per visit"):
        last_modified_exposure([1, 2], [1])


def test_last_modified_rate_is_nearly_unbiased_on_a_poisson_page():
    rng = random.Random(7)
    change_rate, n, interval = 1.0, 20, 1.0
    estimates = []
    for _ in range(300):
        changed, ages = 0, []
        for _visit in range(n):
            last, t = None, 0.0
            while True:
                t += rng.expovariate(change_rate)
                if t > interval:
                    break
                last = t
            ages.append(None if last is None else interval - last)
            changed += last is not None
        exposure = last_modified_exposure([interval] * n, ages)
        estimates.append(last_modified_rate(changed, n, exposure))
    assert sum(estimates) / len(estimates) == pytest.approx(change_rate, rel=0.08)


def test_complete_observation_rate():
    assert complete_observation_rate(9.5, 19.5) == 0.5
    assert complete_observation_rate(0, 0) == 1.0
    assert complete_observation_rate(100, 1e6) == pytest.approx(100.5 / (1e6 + 0.5))
    assert complete_observation_rate(0, 0, prior_changes=0.0) == 0.0
    with pytest.raises(ValueError, match=r"prior_secs \(0\) must be higher than 0"):
        complete_observation_rate(1, 1, prior_secs=0)


@FAST
@given(a=st.floats(0, 1e6), b=st.floats(0, 1e6), t=st.floats(0, 1e9))
def test_complete_observation_rate_grows_with_changes(a, b, t):
    low, high = sorted((a, b))
    assert 0.0 < complete_observation_rate(low, t) <= complete_observation_rate(high, t)


# WebFountain buckets (Edwards et al., Section 4)


def test_bucket_defaults_cover_15_minutes_to_a_year():
    assert MAX_BUCKETS == 256
    assert pytest.approx(1 / (365 * 86400)) == MIN_BUCKET_RATE
    assert pytest.approx(1 / 900) == MAX_BUCKET_RATE
    assert rate_to_bucket(0.0) == 0
    assert rate_to_bucket(MIN_BUCKET_RATE) == 0
    assert rate_to_bucket(MAX_BUCKET_RATE) == 255
    assert rate_to_bucket(1.0) == 255
    assert bucket_to_rate(0) > MIN_BUCKET_RATE
    assert bucket_to_rate(255) < MAX_BUCKET_RATE


def test_every_bucket_round_trips():
    for k in range(256):
        assert rate_to_bucket(bucket_to_rate(k)) == k
    for k in range(8):
        rate = bucket_to_rate(k, min_rate=1.0, max_rate=256.0, buckets=8)
        assert rate == pytest.approx(2.0**k * math.sqrt(2.0))
        assert rate_to_bucket(rate, min_rate=1.0, max_rate=256.0, buckets=8) == k


@FAST
@given(a=st.floats(0, 10.0), b=st.floats(0, 10.0))
def test_buckets_fit_a_byte_and_are_monotone(a, b):
    low, high = sorted((a, b))
    k_low, k_high = rate_to_bucket(low), rate_to_bucket(high)
    assert 0 <= k_low <= k_high <= 255
    assert bytes([k_high])[0] == k_high


@FAST
@given(rate=st.floats(MIN_BUCKET_RATE, MAX_BUCKET_RATE))
def test_round_trip_is_within_one_bucket_width(rate):
    q = bucket_width()
    back = bucket_to_rate(rate_to_bucket(rate))
    assert rate / q <= back <= rate * q


def test_bucket_arguments_are_validated():
    with pytest.raises(ValueError, match=r"buckets \(257\) must be within 1\.\.256"):
        rate_to_bucket(1.0, buckets=257)
    with pytest.raises(ValueError, match=r"max_rate \(1\.0\) must be higher than min_rate"):
        rate_to_bucket(0.5, min_rate=1.0, max_rate=1.0)
    with pytest.raises(ValueError, match=r"bucket \(256\) must be within 0\.\.255"):
        bucket_to_rate(256)
    with pytest.raises(TypeError, match="bucket must be an int"):
        bucket_to_rate(1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"rate \(-1\.0\) must be 0 or higher"):
        rate_to_bucket(-1.0)
