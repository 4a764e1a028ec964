"""The cycle lookahead: due times rounded to the nearest run (policy/cadence.py)."""

from __future__ import annotations

import math

import pytest

from scrapy_fresh.policy.cadence import lookahead, next_period

HOUR = 3600.0


def test_the_period_follows_the_gaps_in_log_space() -> None:
    period = None
    for _ in range(20):
        period = next_period(period, 6 * HOUR)
    assert period == pytest.approx(6 * HOUR)
    # One run by hand a minute after a cron run moves the estimate part of the way only,
    # and a few regular gaps bring it back.
    hurried = next_period(period, 60.0)
    assert 60.0 < hurried < 6 * HOUR
    assert hurried == pytest.approx(math.sqrt(6 * HOUR * 60.0))
    for _ in range(6):
        hurried = next_period(hurried, 6 * HOUR)
    assert hurried > 5 * HOUR


def test_lookahead_is_half_the_period_and_zero_before_it_is_known() -> None:
    assert lookahead(None) == 0.0
    assert lookahead(24 * HOUR) == 12 * HOUR


@pytest.mark.parametrize(("previous", "gap"), [(None, 0.0), (None, -1.0), (0.0, 10.0)])
def test_bad_values_are_refused_by_name(previous: float | None, gap: float) -> None:
    with pytest.raises(ValueError, match=r"gap_secs|previous"):
        next_period(previous, gap)
