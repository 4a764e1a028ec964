"""SignalTracker: the Scrapy-free core of provider signals (shared by the crawl and the
simulator). Runs on a real MemoryStore; the Scrapy glue is covered by
tests/test_crawl_providers.py."""

from __future__ import annotations

from collections import Counter

import pytest

from scrapy_fresh.frontier.revisit import Outcome, RevisitPolicy, record_visit
from scrapy_fresh.keys import url_key
from scrapy_fresh.policy.trust import TrustParams
from scrapy_fresh.providers.ledger import iter_trust
from scrapy_fresh.providers.signals import AnnouncedUpdate, PastUpdate, Signals
from scrapy_fresh.providers.tracker import SignalTracker
from scrapy_fresh.store.base import PageState, Provider, SiteState, Status
from scrapy_fresh.store.memory import MemoryStore

HOST = "news.example"
URL = f"http://{HOST}/a"
DAY = 86400.0


def crawled(url: str = URL, at: float = 0.0, **fields: object) -> PageState:
    """A record first fetched at ``at`` (due a day later by the refresh rule)."""
    state = PageState(url_key(url), url, host=HOST, status=Status.QUEUED, **fields)  # type: ignore[arg-type]
    record_visit(state, Outcome.NEW, at, RevisitPolicy(), SiteState(HOST))
    return state


def visit(
    store: MemoryStore, tracker: SignalTracker, key: str, at: float, changed: bool
) -> PageState:
    """A fetch as the crawl records it: snapshot, refresh rule, the tracker, the store."""
    state = store.get(key)
    tracker.before_visit(state)
    outcome = Outcome.CHANGED if changed else Outcome.UNCHANGED
    record_visit(state, outcome, at, RevisitPolicy(), SiteState(HOST))
    tracker.after_visit(state, outcome, at)
    store.put(state)
    return state


def sitemap(url: str, when: float) -> Signals:
    return Signals(past=[PastUpdate(url, when, "sitemap")])


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


def stats_tracker(store: MemoryStore, **kwargs: object) -> tuple[SignalTracker, Counter[str]]:
    counts: Counter[str] = Counter()

    def stat(name: str, count: int = 1) -> None:
        counts[name] += count

    return SignalTracker(store, stat=stat, **kwargs), counts  # type: ignore[arg-type]


def test_an_update_after_the_last_crawl_makes_the_page_smart_and_due_now(store):
    state = crawled()
    store.put(state)
    tracker, counts = stats_tracker(store)
    changed = tracker.apply(sitemap(URL, 3600.0), now=7200.0)
    assert [s.key for s in changed] == [state.key]
    got = store.get(state.key)
    assert got.provider is Provider.SMART
    assert got.past_updates == [3600.0]
    assert got.next_due == 7200.0
    assert counts["fresh/providers/due_now"] == 1
    assert counts["fresh/providers/records_updated"] == 1
    # the same claim again changes nothing
    assert tracker.apply(sitemap(URL, 3600.0), now=7300.0) == []


def test_signals_about_unknown_pages_are_held_until_their_first_visit(store):
    tracker, counts = stats_tracker(store)
    assert tracker.apply(sitemap(URL, 50.0), now=100.0) == []
    assert counts["fresh/providers/pending"] == 1
    state = crawled(at=200.0)
    tracker.after_visit(state, Outcome.NEW, 200.0)
    assert state.past_updates == [50.0]
    assert state.provider is Provider.SMART


def test_a_lying_sitemap_is_demoted_then_stops_moving_due_times(store):
    pages = [crawled(f"http://{HOST}/{n}") for n in range(6)]
    store.put_many(pages)
    changes: list[tuple[str, bool]] = []
    tracker, counts = stats_tracker(
        store, on_trust_change=lambda host, kind, demoted, score: changes.append((kind, demoted))
    )
    now = 3600.0
    for page in pages[:4]:  # "updated now", and every visit finds nothing changed
        tracker.apply(sitemap(page.url, now), now)
        assert store.get(page.key).next_due == now
        now += 60.0
        visit(store, tracker, page.key, now, changed=False)
    assert counts["fresh/trust/refuted"] == 4  # four lies suffice (policy.trust)
    assert changes == [("sitemap", True)]
    assert counts["fresh/trust/demoted"] == 1
    (record,) = [t for t in iter_trust(store) if t.kind == "sitemap"]
    assert record.host == HOST
    assert record.record.demoted  # kept in the store, as a site record
    # the lie goes on: recorded, not used
    before = pages[5].next_due
    tracker.apply(sitemap(pages[5].url, now), now)
    last = store.get(pages[5].key)
    assert counts["fresh/providers/untrusted_claims"] >= 1
    assert last.next_due == before > now
    assert last.provider is Provider.NORMAL
    assert last.past_updates == []


def test_an_announced_update_makes_the_page_super_and_is_confirmed_by_a_change(store):
    state = crawled()
    store.put(state)
    tracker, counts = stats_tracker(store)
    tracker.apply(Signals(announced=[AnnouncedUpdate(URL, 5000.0, 0.8, "schedule")]), now=1000.0)
    state = store.get(state.key)
    assert state.provider is Provider.SUPER
    # P_update: the announced 0.8 times the trust of a host not known yet (the prior)
    assert state.future_updates == [(5000.0, pytest.approx(0.8 * 2 / 3))]
    assert state.next_due == 5001.0  # the first slot after the announced time
    state = visit(store, tracker, state.key, 5001.0, changed=True)
    assert state.future_updates == []  # served
    assert counts["fresh/trust/confirmed"] == 1
    (record,) = [t for t in iter_trust(store) if t.kind == "schedule"]
    # weighted by its probability, mostly confirmed (a change may also come by chance)
    assert record.record.evidence == pytest.approx(0.8)
    assert record.record.confirmed > 0.6


def test_without_trust_nothing_is_judged_and_every_claim_is_used(store):
    pages = [crawled(f"http://{HOST}/{n}") for n in range(6)]
    store.put_many(pages)
    tracker, counts = stats_tracker(store, trust=False)
    now = 3600.0
    for page in pages:
        tracker.apply(sitemap(page.url, now), now)
        visit(store, tracker, page.key, now + 60.0, changed=False)
        now += 120.0
    assert not any(name.startswith("fresh/trust/") for name in counts)
    assert {store.get(p.key).provider for p in pages} == {Provider.SMART}
    # and announced updates are used with the probability announced (not weighed by trust)
    tracker.apply(
        Signals(announced=[AnnouncedUpdate(pages[0].url, now + DAY, 0.8, "schedule")]), now
    )
    assert store.get(pages[0].key).future_updates == [(now + DAY, 0.8)]


def test_a_fixed_level_wins_and_autodetect_off_keeps_pages_normal(store):
    fixed_page, free_page = crawled(f"http://{HOST}/f"), crawled(f"http://{HOST}/g")
    store.put_many([fixed_page, free_page])
    tracker = SignalTracker(
        store,
        autodetect=False,
        fixed_level=lambda s: Provider.SUPER if s.key == fixed_page.key else None,
    )
    tracker.apply(sitemap(fixed_page.url, 10.0), 100.0)
    tracker.apply(sitemap(free_page.url, 10.0), 100.0)
    assert store.get(fixed_page.key).provider is Provider.SUPER
    assert store.get(free_page.key).provider is Provider.NORMAL
    assert store.get(free_page.key).past_updates == [10.0]  # the data is kept all the same


def test_records_and_keys_can_live_outside_the_store(store):
    """As in the simulator: page records in a dict, keys of any kind."""
    state = crawled()
    state.key = "page-a"

    class Records:
        def get_many(self, keys):
            return {k: state for k in keys if k == "page-a"}

        def put_many(self, states):
            self.written = list(states)

    records = Records()
    tracker = SignalTracker(store, records=records, key_of=lambda url: "page-a")
    tracker.apply(sitemap(URL, 50.0), 100.0)
    assert records.written == [state]
    assert store.get(url_key(URL)) is None  # the store holds trust only
    assert [t.kind for t in iter_trust(store)] == ["sitemap"]


def test_a_sitemap_stamping_every_read_is_demoted_though_its_page_often_changes(store):
    """ "Updated now" before every hourly visit, on a page that changes at two visits in
    three: the claims are borne out two times in three, but only as often as the
    page's own rate predicts (policy.trust.change_chance), so the host is demoted. An
    honest sitemap on a page changing alike (a claim for each change, none otherwise)
    keeps its trust."""
    liar_url, honest_url = "http://liar.example/a", "http://honest.example/a"
    pages = {}
    for url in (liar_url, honest_url):
        state = PageState(url_key(url), url, host=url.split("/")[2], status=Status.QUEUED)
        record_visit(state, Outcome.NEW, 0.0, RevisitPolicy(), SiteState(state.host))
        pages[url] = state
    store.put_many(pages.values())
    changes: list[tuple[str, bool]] = []
    tracker, _ = stats_tracker(
        store, on_trust_change=lambda host, kind, demoted, score: changes.append((host, demoted))
    )
    for i in range(90):
        now = 3600.0 * (i + 1)
        changed = i % 3 != 2
        tracker.apply(sitemap(liar_url, now), now)  # a lie, or true by chance
        if changed:
            tracker.apply(sitemap(honest_url, now - 600.0), now)  # the true change time
        for url in (liar_url, honest_url):
            visit(store, tracker, pages[url].key, now + 60.0, changed)
    liar, honest = (
        tracker.ledger.record("liar.example", "sitemap"),
        tracker.ledger.record("honest.example", "sitemap"),
    )
    assert liar.demoted
    assert ("liar.example", True) in changes
    assert tracker.ledger.score("liar.example", "sitemap") < TrustParams().threshold
    assert not honest.demoted
    assert tracker.ledger.score("honest.example", "sitemap") > 0.8
    assert store.get(pages[liar_url].key).provider is Provider.NORMAL


def test_a_page_with_no_change_seen_yet_borrows_its_hosts_rate(store):
    """A page whose visits never found a change yet has no rate of its own: a change at
    its first revisit, a day later, on a host whose pages change every hour, is what the
    host's pages do anyway, and confirms a claim little (without the host's rate it was
    taken as the claim's alone)."""
    busy, fresh = crawled(f"http://{HOST}/busy"), crawled(f"http://{HOST}/new")
    store.put_many([busy, fresh])
    tracker, _ = stats_tracker(store)
    for hour in range(1, 7):  # the busy page changes at every hourly visit
        visit(store, tracker, busy.key, 3600.0 * hour, changed=True)
    tracker.apply(sitemap(fresh.url, DAY), DAY)  # "updated now", and it did change
    visit(store, tracker, fresh.key, DAY + 60.0, changed=True)
    record = tracker.ledger.record(HOST, "sitemap")
    assert record.observations == 1
    assert record.refuted > 0.25  # mostly no news: about the prior's share
    assert tracker.ledger.score(HOST, "sitemap") == pytest.approx(2 / 3, abs=0.02)
