"""Announced updates under trust (issue 5): several announced instants judged together by
the visit after them (policy.trust.any_announced), and a host caught publishing false
signals of another kind whose announcements must earn their trust
(policy.trust.announced_probability). Real MemoryStore and SignalTracker."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_fresh.frontier.revisit import RevisitPolicy, record_visit
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.policy.trust import (
    Evidence,
    TrustRecord,
    announced_probability,
    any_announced,
    observe,
    quiet_weight,
    weighted_probability,
)
from scrapy_fresh.providers.ledger import iter_trust
from scrapy_fresh.providers.signals import AnnouncedUpdate, PastUpdate, Signals
from scrapy_fresh.providers.tracker import SignalTracker
from scrapy_fresh.store.base import SiteState
from scrapy_fresh.store.memory import MemoryStore
from tests.tracker_support import crawled

HOST = "news.example"
HOUR = 3600.0


def visit(store: MemoryStore, tracker: SignalTracker, key: str, at: float, changed: bool) -> None:
    state = store.get(key)
    assert state is not None
    tracker.before_visit(state)
    outcome = Outcome.CHANGED if changed else Outcome.UNCHANGED
    record_visit(state, outcome, at, RevisitPolicy(), SiteState(HOST))
    tracker.after_visit(state, outcome, at)
    store.put(state)


def schedule_record(store: MemoryStore) -> TrustRecord:
    (entry,) = [t for t in iter_trust(store) if t.kind == "schedule" and t.host == HOST]
    return entry.record


# -- the maths ----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=30))
def test_any_announced_is_the_chance_that_one_came_true(probabilities: list[float]) -> None:
    p = any_announced(probabilities)
    assert 0.0 <= p <= 1.0
    assert p >= max(probabilities, default=0.0) - 1e-12  # never less than the likeliest
    none = 1.0
    for q in probabilities:
        none *= 1.0 - q
    assert p == pytest.approx(1.0 - none, abs=1e-12)


def test_announced_probability_needs_earned_trust_from_a_caught_host() -> None:
    fresh = TrustRecord()
    assert announced_probability(0.8, fresh) == weighted_probability(0.8, fresh)
    assert announced_probability(0.8, fresh, caught=True) == 0.0
    earned = TrustRecord(confirmed=6.0, refuted=1.0)
    assert announced_probability(0.8, earned, caught=True) == pytest.approx(
        0.8 * quiet_weight(earned)
    )
    assert announced_probability(0.8, earned, caught=True) < announced_probability(0.8, earned)
    assert announced_probability(0.8, TrustRecord(confirmed=9.0, demoted=True)) == 0.0


# -- the tracker ----------------------------------------------------------------------------


def test_a_visit_after_several_announced_instants_judges_them_together() -> None:
    store = MemoryStore()
    page = crawled(f"http://{HOST}/a")
    store.put(page)
    tracker = SignalTracker(store)
    # three distinct instants, each announced twice (re-read), each "maybe" (0.5)
    for read in (0.5 * HOUR, 0.75 * HOUR):
        announced = [AnnouncedUpdate(page.url, k * HOUR, 0.5, "schedule") for k in (1, 2, 3)]
        tracker.apply(Signals(announced=announced), read)
    visit(store, tracker, page.key, 3 * HOUR + 1.0, changed=False)
    # if the schedule held, the page changed unless all three failed: 1 - 0.5^3
    p = any_announced([0.5, 0.5, 0.5])
    expected = observe(TrustRecord(), Evidence.REFUTED, weight=p, chance=0.0)
    got = schedule_record(store)
    assert got.confirmed == pytest.approx(expected.confirmed)
    assert got.refuted == pytest.approx(expected.refuted)
    assert got.refuted > 0.5  # as one claim of 0.5 it would have been 0.25


def test_a_host_caught_lying_in_one_kind_must_earn_its_schedules_trust() -> None:
    store = MemoryStore()
    liar, honest = crawled(f"http://{HOST}/a"), crawled("http://other.example/a")
    store.put_many([liar, honest])
    tracker = SignalTracker(store)
    # the host's sitemap is caught: "updated" four times, unchanged at four visits
    for n in range(4):
        now = (n + 1) * HOUR
        tracker.apply(Signals(past=[PastUpdate(liar.url, now - 600.0, "sitemap")]), now)
        visit(store, tracker, liar.key, now + 60.0, changed=False)
    assert not tracker.ledger.trusted(HOST, "sitemap")
    now = 10 * HOUR
    for page in (liar, honest):
        when = now + HOUR
        tracker.apply(Signals(announced=[AnnouncedUpdate(page.url, when, 0.8, "schedule")]), now)
    # the honest host's schedule is believed at the prior; the caught host's has earned
    # nothing yet: its page is fetched at its own rate, which judges the schedule
    assert store.get(honest.key).future_updates == [(now + HOUR, pytest.approx(0.8 * 2 / 3))]
    assert store.get(liar.key).future_updates == []  # P = 0: not used at all
    # and what the schedule earns, it gets
    visit(store, tracker, liar.key, now + HOUR + 1.0, changed=True)
    later = now + 2 * HOUR
    tracker.apply(
        Signals(announced=[AnnouncedUpdate(liar.url, later + HOUR, 0.8, "schedule")]), later
    )
    ((_, p),) = store.get(liar.key).future_updates
    assert p == pytest.approx(0.8 * quiet_weight(schedule_record(store)))
    assert 0.0 < p < 0.8 * 2 / 3


def test_an_instant_announced_again_takes_the_trust_of_now() -> None:
    """A schedule read every hour announces its next instants again and again: the
    stored P_update follows the host's trust down, and goes once the kind is demoted."""
    store = MemoryStore()
    page, other = crawled(f"http://{HOST}/a"), crawled(f"http://{HOST}/b")
    store.put_many([page, other])
    tracker = SignalTracker(store)
    yearly = 365 * 24 * HOUR

    def read(now: float) -> float:
        tracker.apply(Signals(announced=[AnnouncedUpdate(page.url, yearly, 0.8, "schedule")]), now)
        ((_, p),) = store.get(page.key).future_updates
        return p

    first = read(HOUR)
    assert first == pytest.approx(0.8 * 2 / 3)
    # the host's schedule is refuted at its other page: re-announced, the instant is
    # believed less (kept at the highest it ever had before)
    for n in range(2):
        at = (n + 2) * HOUR
        tracker.apply(
            Signals(announced=[AnnouncedUpdate(other.url, at - 60.0, 0.8, "schedule")]), at - 120.0
        )
        visit(store, tracker, other.key, at, changed=False)
    lower = read(4 * HOUR)
    assert 0.0 < lower < first
    assert lower == pytest.approx(0.8 * tracker.ledger.score(HOST, "schedule"))
    for n in range(4):
        at = (n + 5) * HOUR
        tracker.apply(
            Signals(announced=[AnnouncedUpdate(other.url, at - 60.0, 0.8, "schedule")]), at - 120.0
        )
        visit(store, tracker, other.key, at, changed=False)
    assert not tracker.ledger.trusted(HOST, "schedule")
    tracker.apply(
        Signals(announced=[AnnouncedUpdate(page.url, yearly, 0.8, "schedule")]), 10 * HOUR
    )
    assert store.get(page.key).future_updates == []  # demoted: its instants go
