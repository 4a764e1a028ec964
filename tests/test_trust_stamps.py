"""Documents that date every entry at the time they are read (issue 5): the structural
check of scrapy_fresh.policy.trust.stamps_read_time and how SignalTracker ignores such
documents' dates before any visit judges them. Real MemoryStore; the Scrapy glue is in
tests/test_provider_stamping.py."""

from __future__ import annotations

import logging
from collections import Counter

import pytest

from scrapy_fresh.policy.trust import STAMP_TOLERANCE_SECS, stamps_read_time
from scrapy_fresh.providers.ledger import iter_trust
from scrapy_fresh.providers.signals import PastUpdate, Signals
from scrapy_fresh.providers.tracker import SignalTracker
from scrapy_fresh.store.base import PageState
from scrapy_fresh.store.memory import MemoryStore
from tests.tracker_support import crawled

HOST = "news.example"
OTHER = "blog.example"
HOUR = 3600.0


def sitemap(entries: list[tuple[str, float]], kind: str = "sitemap") -> Signals:
    return Signals(past=[PastUpdate(url, when, kind) for url, when in entries])


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


def tracker_for(store: MemoryStore) -> tuple[SignalTracker, Counter[str]]:
    counts: Counter[str] = Counter()

    def stat(name: str, count: int = 1) -> None:
        counts[name] += count

    return SignalTracker(store, stat=stat), counts


def pages(store: MemoryStore, host: str, n: int) -> list[PageState]:
    states = [crawled(f"http://{host}/{i}") for i in range(n)]
    store.put_many(states)
    return states


# -- the check itself ---------------------------------------------------------------------


def test_stamps_read_time_counts_dates_at_the_read_time_when_nearly_all_are():
    now = 10 * HOUR
    assert stamps_read_time([now] * 5, now) == 5
    # within the tolerance (a server stamps a little before our clock reads the answer)
    assert stamps_read_time([now - STAMP_TOLERANCE_SECS, now, now + 1.0], now) == 3
    # nine of ten at the read time: a stamping document with one real date
    assert stamps_read_time([now] * 9 + [now - HOUR], now) == 9
    # real dates, or only some recent ones: not stamped
    assert stamps_read_time([now - HOUR, now - 2 * HOUR], now) == 0
    assert stamps_read_time([now, now, now - HOUR, now - 2 * HOUR], now) == 0
    assert stamps_read_time([now - STAMP_TOLERANCE_SECS - 1.0] * 3, now) == 0
    assert stamps_read_time([], now) == 0


# -- the tracker ----------------------------------------------------------------------------


def test_a_sitemap_stamping_every_url_with_the_read_time_is_ignored_from_its_second_read(
    store, caplog
):
    states = pages(store, HOST, 3)
    tracker, counts = tracker_for(store)
    first = 2 * HOUR
    # the first read is believed: every page may just have changed (a site redeployed)
    tracker.apply(sitemap([(s.url, first) for s in states]), first)
    assert all(store.get(s.key).past_updates == [first] for s in states)
    assert counts["fresh/providers/stamped"] == 0
    second = first + HOUR
    with caplog.at_level(logging.WARNING, logger="scrapy_fresh.providers.tracker"):
        assert tracker.apply(sitemap([(s.url, second) for s in states]), second) == []
        third = second + HOUR
        assert tracker.apply(sitemap([(s.url, third) for s in states]), third) == []
    # its dates went nowhere: no past update, no due time moved, no claim to judge
    assert all(store.get(s.key).past_updates == [first] for s in states)
    assert counts["fresh/providers/stamped"] == 6
    assert counts["fresh/providers/stamping"] == 1  # once per host and kind
    assert counts["fresh/providers/claims/sitemap"] == 3  # the first read's only
    logged = [r.getMessage() for r in caplog.records if "dates every entry" in r.getMessage()]
    assert len(logged) == 1
    assert f"sitemap of {HOST}" in logged[0]
    # real dates again: believed again
    fourth = third + HOUR
    tracker.apply(sitemap([(states[0].url, fourth - 1800.0)]), fourth)
    assert store.get(states[0].key).past_updates == [first, fourth - 1800.0]


def test_a_sitemap_whose_pages_all_changed_at_once_is_believed(store):
    states = pages(store, HOST, 4)
    tracker, counts = tracker_for(store)
    deploy = 5 * HOUR
    # every page rebuilt just before the read, then read again an hour later: the
    # dates stay where they were (not the read time)
    for now in (deploy + 5.0, deploy + HOUR, deploy + 2 * HOUR):
        tracker.apply(sitemap([(s.url, deploy) for s in states]), now)
    assert all(store.get(s.key).past_updates == [deploy] for s in states)
    assert counts["fresh/providers/stamped"] == 0
    assert counts["fresh/providers/stamping"] == 0


def test_one_page_dated_at_the_read_time_needs_three_reads_in_a_row(store):
    (page,) = pages(store, HOST, 1)
    tracker, counts = tracker_for(store)
    times = [HOUR, 2 * HOUR, 3 * HOUR, 4 * HOUR]
    for now in times:
        tracker.apply(sitemap([(page.url, now)]), now)
    # a busy page may change just before two reads; the third such read is too many
    assert store.get(page.key).past_updates == times[:2]
    assert counts["fresh/providers/stamped"] == 2


def test_a_read_with_real_dates_starts_the_count_again(store):
    (page,) = pages(store, HOST, 1)
    tracker, counts = tracker_for(store)
    for now, when in ((HOUR, HOUR), (2 * HOUR, 2 * HOUR), (3 * HOUR, 2.5 * HOUR)):
        tracker.apply(sitemap([(page.url, when)]), now)
    for now in (4 * HOUR, 5 * HOUR):
        tracker.apply(sitemap([(page.url, now)]), now)
    assert counts["fresh/providers/stamped"] == 0
    assert store.get(page.key).past_updates == [HOUR, 2 * HOUR, 2.5 * HOUR, 4 * HOUR, 5 * HOUR]


def test_the_same_moment_read_twice_is_one_read(store):
    states = pages(store, HOST, 3)
    tracker, counts = tracker_for(store)
    now = HOUR
    tracker.apply(sitemap([(s.url, now) for s in states]), now)
    later = now + STAMP_TOLERANCE_SECS / 2
    tracker.apply(sitemap([(s.url, later) for s in states]), later)
    assert counts["fresh/providers/stamped"] == 0


def test_hosts_and_kinds_are_screened_apart_in_one_batch(store):
    liar = pages(store, HOST, 3)
    honest = pages(store, OTHER, 3)
    tracker, counts = tracker_for(store)
    for now in (HOUR, 2 * HOUR):
        batch = sitemap([(s.url, now) for s in liar])
        batch.extend(sitemap([(s.url, now - 1800.0) for s in honest]))
        # the same host's feed gives real dates
        batch.extend(sitemap([(liar[0].url, now - 900.0)], kind="feed"))
        tracker.apply(batch, now)
    assert counts["fresh/providers/stamped"] == 3
    assert all(store.get(s.key).past_updates == [HOUR] for s in liar[1:])
    assert store.get(liar[0].key).past_updates == [HOUR - 900.0, HOUR, 2 * HOUR - 900.0]
    assert all(store.get(s.key).past_updates == [HOUR - 1800.0, 2 * HOUR - 1800.0] for s in honest)


def test_stamped_reads_are_counted_across_runs_and_against_the_hosts_trust(store):
    """Cycle mode reads a sitemap once per run: the count is kept in the store."""
    states = pages(store, HOST, 3)
    first_run, _ = tracker_for(store)
    first_run.apply(sitemap([(s.url, HOUR) for s in states]), HOUR)
    next_run, counts = tracker_for(store)
    assert next_run.apply(sitemap([(s.url, 2 * HOUR) for s in states]), 2 * HOUR) == []
    assert counts["fresh/providers/stamped"] == 3
    # a refutation in full, no visit needed; the record is no trust record of its own
    assert counts["fresh/trust/refuted"] == 1
    record = next_run.ledger.record(HOST, "sitemap")
    assert record.refuted == pytest.approx(1.0)
    assert record.confirmed == 0.0
    assert [(t.host, t.kind) for t in iter_trust(store)] == [(HOST, "sitemap")]
    for now in (3 * HOUR, 4 * HOUR, 5 * HOUR):  # four lies suffice (policy.trust)
        next_run.apply(sitemap([(s.url, now) for s in states]), now)
    assert not next_run.ledger.trusted(HOST, "sitemap")  # demoted by its documents alone


def test_without_trust_every_date_is_used(store):
    states = pages(store, HOST, 3)
    tracker = SignalTracker(store, trust=False)
    for now in (HOUR, 2 * HOUR, 3 * HOUR):
        tracker.apply(sitemap([(s.url, now) for s in states]), now)
    assert all(store.get(s.key).past_updates == [HOUR, 2 * HOUR, 3 * HOUR] for s in states)
