"""The fresh time a fetch of a super provider's page buys (policy.gain.announced_*) and
its use in the gain score (frontier.scoring, the super branch)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.frontier.scoring import ScoreParams, gain_score
from scrapy_fresh.policy.gain import (
    announced_fresh_secs,
    announced_survival,
    announced_unchecked,
    expected_fresh_secs,
    known_gain,
)
from scrapy_fresh.providers.apply import add_announced
from scrapy_fresh.store.base import MAX_FUTURE_UPDATES, PageState, Provider

HOUR = 3600.0
DAY = 86400.0
rates = st.floats(min_value=0.0, max_value=1e-2, allow_nan=False)
secs = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)
probs = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
points = st.lists(st.tuples(secs, probs), max_size=6)


def close(a: float, b: float) -> bool:
    return a == pytest.approx(b, rel=1e-9, abs=1e-6)


# -- values by hand -----------------------------------------------------------------------


@given(rates, secs, secs)
def test_exact_announcements_give_the_time_to_the_next_change(rate, horizon, d):
    # Precision 1: the copy is fresh exactly until the announced change (or the next
    # fetch), whatever the page's rate.
    assert close(announced_fresh_secs(rate, horizon, [(d, 1.0)], 1.0), min(horizon, d))


def test_exact_provider_with_nothing_announced_is_quiet_for_its_window():
    rate, window, horizon = 1 / HOUR, 20 * HOUR, 30 * HOUR
    tail = (1 - math.exp(-rate * (horizon - window))) / rate
    assert close(announced_fresh_secs(rate, horizon, [], 1.0, window), window + tail)


def test_partial_coverage_by_hand():
    # lambda = 1/h, half the changes announced, known 2 h ahead, next fetch in 4 h:
    # int_0^2 e^{-t/2} dt + e^{-1} int_0^2 e^{-t} dt (hours).
    expected = (2 * (1 - math.exp(-1)) + math.exp(-1) * (1 - math.exp(-2))) * HOUR
    assert close(announced_fresh_secs(1 / HOUR, 4 * HOUR, [], 0.5, 2 * HOUR), expected)
    assert close(
        announced_survival(1 / HOUR, 4 * HOUR, [], 0.5, 2 * HOUR), math.exp(-1) * math.exp(-2)
    )


def test_a_fast_feed_known_quiet_beats_a_slow_feed_about_to_change():
    # The case the rate-only formula got wrong: a feed changing every hour on average
    # but announced quiet for 20 h is worth 20 h; a feed changing once a day with its
    # next change announced in 5 h is worth 5 h.
    fast = announced_fresh_secs(1 / HOUR, DAY, [(20 * HOUR, 1.0)], 1.0, DAY)
    slow = announced_fresh_secs(1 / DAY, DAY, [(5 * HOUR, 1.0)], 1.0, DAY)
    assert (fast, slow) == (20 * HOUR, 5 * HOUR)
    # The previous fresh time (full rate until the announced change): fast < slow.
    old_fast = known_gain(1.0, 1 / HOUR, DAY, next_change_secs=20 * HOUR)
    old_slow = known_gain(1.0, 1 / DAY, DAY, next_change_secs=5 * HOUR)
    assert old_fast < old_slow


# -- reductions ------------------------------------------------------------------------------


@given(rates, secs, secs)
def test_with_nothing_known_it_is_cho_and_garcia_molinas_fresh_time(rate, horizon, known):
    assert close(
        announced_fresh_secs(rate, horizon, [], 0.0, known), expected_fresh_secs(rate, horizon)
    )
    assert close(announced_survival(rate, horizon, [], 0.0, known), math.exp(-rate * horizon))


@given(rates, secs, secs, probs)
def test_with_no_coverage_one_announcement_is_the_previous_known_gain(rate, horizon, d, q):
    assert close(
        announced_fresh_secs(rate, horizon, [(d, q)], 0.0, d),
        known_gain(1.0, rate, horizon, next_change_secs=d, p_next=q),
    )


# -- monotonicity and bounds -------------------------------------------------------------


@given(rates, secs, points, probs, secs, st.floats(min_value=0.0, max_value=1e-2))
def test_fresh_time_falls_with_the_rate_and_rises_with_coverage(rate, h, pts, c, w, more):
    base = announced_fresh_secs(rate, h, pts, c, w)
    assert 0.0 <= base <= h * (1 + 1e-12)
    assert announced_fresh_secs(rate + more, h, pts, c, w) <= base * (1 + 1e-9) + 1e-9
    assert announced_fresh_secs(rate, h, pts, min(1.0, c + 0.25), w) >= base * (1 - 1e-9)
    assert announced_fresh_secs(rate, h, pts, c, w + 1000.0) >= base * (1 - 1e-9)
    assert announced_fresh_secs(rate, h + 1000.0, pts, c, w) >= base * (1 - 1e-9)


@given(rates, secs, points, probs, secs, secs)
def test_a_later_or_less_likely_announcement_is_worth_more(rate, h, pts, c, w, later):
    pts = [(d, p) for d, p in pts if d <= w]  # inside the known window
    for i, (d, p) in enumerate(pts):
        base = announced_fresh_secs(rate, h, pts, c, w)
        moved = [*pts[:i], (min(d + later, w), p), *pts[i + 1 :]]
        doubtful = [*pts[:i], (d, p / 2), *pts[i + 1 :]]
        assert announced_fresh_secs(rate, h, moved, c, w) >= base * (1 - 1e-9) - 1e-9
        assert announced_fresh_secs(rate, h, doubtful, c, w) >= base * (1 - 1e-9) - 1e-9


@given(rates, st.floats(min_value=1.0, max_value=1e5), points, probs, secs)
def test_fresh_time_is_the_integral_of_the_survival(rate, h, pts, c, w):
    n = 400  # midpoint rule; S jumps at most len(pts) times
    step = h / n
    total = sum(announced_survival(rate, (k + 0.5) * step, pts, c, w) for k in range(n)) * step
    jumps = len(pts) + 2
    assert announced_fresh_secs(rate, h, pts, c, w) == pytest.approx(total, abs=jumps * step)
    previous = 1.0
    for k in range(20):
        now = announced_survival(rate, k * h / 19, pts, c, w)
        assert 0.0 <= now <= previous + 1e-12
        previous = now


@given(rates, secs, points, probs, secs)
def test_unchecked_matches_the_checked_functions(rate, h, pts, c, w):
    survival, fresh = announced_unchecked(rate, h, sorted(pts), c, w)
    assert survival == announced_survival(rate, h, pts, c, w)
    assert fresh == announced_fresh_secs(rate, h, pts, c, w)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: announced_fresh_secs(-1.0, 1.0), "rate"),
        (lambda: announced_fresh_secs(1.0, -1.0), "secs"),
        (lambda: announced_fresh_secs(1.0, 1.0, [(-1.0, 0.5)]), "announced time"),
        (lambda: announced_fresh_secs(1.0, 1.0, [(1.0, 1.5)]), "announced probability"),
        (lambda: announced_fresh_secs(1.0, 1.0, [], 2.0), "coverage"),
        (lambda: announced_survival(1.0, 1.0, [], 0.5, -3.0), "known_secs"),
    ],
)
def test_bad_arguments_name_themselves(call, match):
    with pytest.raises(ConfigError, match=match):
        call()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"announce_secs": -1.0}, "announce_secs"), ({"announce_share": 1.5}, "announce_share")],
)
def test_bad_score_params_name_themselves(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ScoreParams(**kwargs)


# -- in the gain score -----------------------------------------------------------------------


def _super(key: str, *, visits: int, future, past=()) -> PageState:
    return PageState(
        key,
        "http://x/" + key,
        provider=Provider.SUPER,
        first_seen=0.0,
        last_crawl=9 * DAY,
        visits=visits,
        p_c=1.0,
        past_updates=list(past),
        future_updates=list(future),
    )


def test_gain_score_takes_the_long_known_quiet_span():
    now = 10 * DAY
    params = ScoreParams(announce_secs=DAY, announce_share=1.0)
    # Both changed since their last crawl (a pushed update); the busy feed (visited 200
    # times in 9 days) is announced quiet for 20 h, the calm one changes again in 5 h.
    busy = _super("busy", visits=200, past=[now - HOUR], future=[(now + 20 * HOUR, 1.0)])
    calm = _super("calm", visits=9, past=[now - HOUR], future=[(now + 5 * HOUR, 1.0)])
    assert gain_score(busy, now, params) > gain_score(calm, now, params)


def test_gain_score_of_an_exact_provider_without_news_is_nothing():
    # Every change is announced and nothing was since the last crawl: not changed.
    now = 10 * DAY
    params = ScoreParams(announce_secs=DAY, announce_share=1.0)
    quiet = _super("q", visits=9, future=[(now + 5 * HOUR, 1.0)])
    assert gain_score(quiet, now, params) == 0.0
    # An announced update that has passed makes it changed with its probability.
    passed = _super("p", visits=9, future=[(now - HOUR, 0.5), (now + 5 * HOUR, 0.5)])
    score = gain_score(passed, now, ScoreParams(announce_secs=DAY))
    assert 0.0 < score < gain_score(_super("c", visits=9, past=[now - HOUR], future=[]), now)


def test_without_announce_params_a_record_knows_up_to_its_latest_announcement(monkeypatch):
    # The crawl's defaults (a feed's sy:updatePeriod schedule: three instants at 0.8):
    # the known window ends at the latest announced time (known_secs 0 here, the
    # function extends it to the last point) and the share is the announcements' own
    # probability; a spider's params change both.
    from scrapy_fresh.frontier import scoring

    calls = []

    def spy(rate, secs, pts, share, known):
        calls.append((pts, share, known))
        return announced_unchecked(rate, secs, pts, share, known)

    monkeypatch.setattr(scoring, "announced_unchecked", spy)
    now = 10 * DAY
    three = [(now + k * HOUR, 0.8) for k in (1, 2, 3)]
    state = _super("s", visits=9, past=[now - HOUR], future=three)
    gain_score(state, now)
    [(pts, share, known)] = calls
    assert (pts, known) == ([(HOUR, 0.8), (2 * HOUR, 0.8), (3 * HOUR, 0.8)], 0.0)
    assert share == pytest.approx(0.8)
    calls.clear()
    state.future_updates = []
    gain_score(state, now, ScoreParams(announce_secs=DAY, announce_share=0.9))
    assert calls == [([], 0.9, DAY)]


def test_announcements_that_passed_unvisited_leave_room_for_new_ones():
    # A page not visited for long piles up passed announcements; new upcoming ones must
    # still be kept (they were dropped when the list kept the soonest 32 of all).
    state = PageState("k", "u")
    add_announced(state, [(float(t), 1.0) for t in range(1, MAX_FUTURE_UPDATES + 1)], now=0.0)
    now = MAX_FUTURE_UPDATES + 10.0
    assert add_announced(state, [(now + 5.0, 1.0)], now=now) == 1
    assert (now + 5.0, 1.0) in state.future_updates
    assert len(state.future_updates) == MAX_FUTURE_UPDATES
    # Upcoming ones beyond the limit are still cut, the soonest kept.
    add_announced(state, [(now + 100.0 + k, 1.0) for k in range(2 * MAX_FUTURE_UPDATES)], now)
    upcoming = [t for t, _ in state.future_updates if t > now]
    assert len(upcoming) == MAX_FUTURE_UPDATES
    assert upcoming[0] == now + 5.0
