"""SignalTracker: the Scrapy-free core of provider signals (shared by the crawl and the
simulator). Runs on a real MemoryStore; the Scrapy glue is covered by
tests/test_crawl_providers.py."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from scrapy_fresh.frontier.revisit import RevisitPolicy, record_visit
from scrapy_fresh.keys import url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.policy.trust import TrustParams
from scrapy_fresh.providers.ledger import QuietClaim, iter_trust
from scrapy_fresh.providers.signals import (
    AnnouncedUpdate,
    NotBefore,
    PastUpdate,
    QuietWindow,
    Signals,
)
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
    tracker.apply(sitemap(pages[5].url, now - 600.0), now)  # not the read time itself
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


# -- quiet claims: max-age, Expires, ttl, skipHours/skipDays ------------------------------

WEEK = 7 * DAY


def max_age(url: str, until: float) -> Signals:
    return Signals(not_before=[NotBefore(url, until, "cache")])


def fetch(
    store: MemoryStore,
    tracker: SignalTracker,
    state: PageState,
    at: float,
    outcome: Outcome,
    own: Signals | None = None,
    last_modified: str | None = None,
) -> PageState:
    """A visit whose answer carries ``own`` signals (its headers), as the middleware
    hands them to the tracker: snapshot, answer, refresh rule, judgment, store."""
    tracker.before_visit(state)
    if own is not None:
        tracker.add_own(state.key, own)
    if last_modified is not None:
        state.last_modified = last_modified
    record_visit(state, outcome, at, RevisitPolicy(), SiteState(HOST))
    tracker.after_visit(state, outcome, at)
    store.put(state)
    return state


def first_fetch(store: MemoryStore, tracker: SignalTracker, url: str, own: Signals) -> PageState:
    state = PageState(url_key(url), url, host=HOST, status=Status.QUEUED)
    return fetch(store, tracker, state, 0.0, Outcome.NEW, own)


def test_a_quiet_claim_of_a_host_never_judged_defers_nothing_and_waits_to_be_judged(store):
    tracker, counts = stats_tracker(store)
    state = first_fetch(store, tracker, URL, max_age(URL, WEEK))
    assert state.next_due == DAY  # its own due time (the refresh rule's), not a week
    assert counts["fresh/providers/quiet/claims"] == 1
    assert counts["fresh/providers/quiet/deferred"] == 0
    kept = tracker.ledger.quiet_claim(state.key)  # in the store, for a later run
    assert kept == QuietClaim(claimed_at=0.0, own_due=DAY, until=WEEK)
    # a claim that does not reach past the own due time has nothing to defer or judge
    short = "http://news.example/short"
    first_fetch(store, tracker, short, max_age(short, 600.0))
    assert counts["fresh/providers/quiet/claims"] == 1
    assert tracker.ledger.quiet_claim(url_key(short)) is None


def test_pages_changing_inside_their_max_age_get_the_host_demoted_and_fetched_at_their_own_rate(
    store,
):
    changes: list[tuple[str, str, bool]] = []
    tracker, counts = stats_tracker(
        store,
        on_trust_change=lambda host, kind, demoted, score: changes.append((host, kind, demoted)),
    )
    urls = [f"http://{HOST}/{n}" for n in range(6)]
    pages = [first_fetch(store, tracker, url, max_age(url, WEEK)) for url in urls]
    for page, url in zip(pages, urls, strict=True):  # "a week", and each page changed within a day
        assert page.next_due == DAY
        fetch(store, tracker, page, DAY, Outcome.CHANGED, max_age(url, DAY + WEEK))
    assert counts["fresh/trust/quiet/broken"] == 6
    assert counts["fresh/trust/quiet/kept"] == 0
    assert changes == [(HOST, "cache", True)]  # demoted after four
    assert counts["fresh/trust/quiet/demoted"] == counts["fresh/trust/demoted"] == 1
    assert tracker.ledger.record(HOST, "cache").demoted
    assert counts["fresh/providers/quiet/deferred"] == 0  # never deferred a page at all
    for page in pages:  # the lie goes on: each page is due at its own time
        assert page.next_due == page.last_crawl + page.refresh_secs < DAY + WEEK
    # without trust every quiet claim is followed in full (and nothing is judged)
    blind, blind_counts = stats_tracker(MemoryStore(), trust=False)
    other = first_fetch(blind.store, blind, URL, max_age(URL, WEEK))  # type: ignore[arg-type]
    assert other.next_due == WEEK
    assert not any(name.startswith("fresh/trust/") for name in blind_counts)


def test_kept_quiet_claims_earn_a_deferral_bounded_by_the_claimed_time(store):
    tracker, counts = stats_tracker(store)
    state = first_fetch(store, tracker, URL, Signals())
    at = 0.0
    for _ in range(4):  # a page seen to change: a change is its own rate's doing
        at = state.next_due
        state = fetch(store, tracker, state, at, Outcome.CHANGED)
    shares = []
    for _ in range(8):  # now it says "quiet for a week", and keeps its word
        claim_end = at + WEEK
        state = fetch(store, tracker, state, at, Outcome.UNCHANGED, max_age(URL, claim_end))
        own = at + state.refresh_secs
        assert own <= state.next_due < claim_end  # inside the claimed time: it is checked
        shares.append((state.next_due - own) / (claim_end - own))
        at = state.next_due
    assert shares[0] == 0.0  # the first claim was not judged yet
    assert all(b > a for a, b in itertools.pairwise(shares))  # each kept claim earns more
    assert counts["fresh/trust/quiet/kept"] == 7
    assert counts["fresh/providers/quiet/deferred"] == 7
    assert not tracker.ledger.record(HOST, "cache").demoted


def test_a_quiet_claim_made_in_one_run_is_judged_in_the_next(store):
    first, _ = stats_tracker(store)
    state = first_fetch(store, first, URL, max_age(URL, WEEK))
    later, counts = stats_tracker(store)  # a new run: nothing in memory
    fetch(store, later, store.get(state.key), DAY, Outcome.CHANGED)
    assert counts["fresh/trust/quiet/broken"] == 1
    assert later.ledger.record(HOST, "cache").refuted == pytest.approx(1.0)
    # judged once: the next visit does not judge the same claim again
    fetch(store, later, store.get(state.key), 2 * DAY, Outcome.CHANGED)
    assert counts["fresh/trust/quiet/broken"] == 1


def test_a_not_modified_answer_keeps_the_lifetime_of_the_copy_it_validated(store):
    tracker, counts = stats_tracker(store)
    state = first_fetch(store, tracker, URL, max_age(URL, WEEK))
    state = fetch(store, tracker, state, DAY, Outcome.NOT_MODIFIED)  # a 304: no headers read
    assert counts["fresh/trust/quiet/kept"] == 1
    claim = tracker.ledger.quiet_claim(state.key)
    assert claim is not None
    assert (claim.claimed_at, claim.until) == (DAY, DAY + WEEK)  # freshened, RFC 9111 4.3.4


def test_skip_hours_are_judged_by_when_the_change_was_made(store):
    """``<skipHours>`` 0-5 UTC: a Last-Modified inside those hours breaks the claim; one
    outside them tells nothing about it (earlier changes may have come in them or not)."""
    tracker, counts = stats_tracker(store)
    seen = []
    for url, last_modified in (
        (URL, "Fri, 02 Jan 1970 00:30:00 GMT"),  # 24.5 h: inside the quiet hours
        (f"http://{HOST}/b", "Thu, 01 Jan 1970 12:00:00 GMT"),  # noon: outside
    ):
        night = Signals(quiet=[QuietWindow(url, frozenset(range(6)), frozenset(), "cache")])
        state = PageState(url_key(url), url, host=HOST, status=Status.QUEUED)
        state = fetch(store, tracker, state, 3600.0, Outcome.NEW, night)  # 01:00, Thursday
        assert state.next_due == 3600.0 + DAY  # 01:00 next day: quiet, yet not deferred
        fetch(store, tracker, state, 3600.0 + DAY, Outcome.CHANGED, last_modified=last_modified)
        seen.append(counts["fresh/trust/quiet/broken"])
    assert counts["fresh/providers/quiet/claims"] == 2
    assert seen == [1, 1]
    assert tracker.ledger.record(HOST, "cache").refuted == pytest.approx(1.0)


def test_deferred_claim_times_reach_the_store_when_flushed_past_kinds_at_once(store):
    """defer_claims: a kind whose trust record exists keeps its latest claim time in
    memory until flush_claims (nothing reads it before); a new kind's record, and the
    claim time of a past kind (read to tell missed changes), are written at once."""
    tracker = SignalTracker(store, defer_claims=True)
    key = url_key(URL)
    store.put(crawled())

    def claimed(kind: str) -> float | None:
        value = store.get_meta("trust", f"{kind}/{HOST}")
        return None if value is None else value["last_claim_at"]

    for at in (100.0, 200.0, 300.0):
        own = Signals(past=[PastUpdate(URL, at - 50.0, "http-lastmod")])
        tracker.before_visit(store.get(key))
        tracker.add_own(key, own)
        visit(store, tracker, key, at, changed=False)
        tracker.apply(sitemap(URL, 1.0), now=at)
    assert claimed("http-lastmod") == 100.0  # created by the first claim; later ones kept
    assert claimed("sitemap") == 300.0  # read by the next visit: written each time
    tracker.flush_claims()
    assert claimed("http-lastmod") == 300.0
    plain = SignalTracker(MemoryStore())
    assert plain.defer_claims is False
