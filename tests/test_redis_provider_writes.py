"""Writes outside a visit on a shared Redis: provider updates, trust records, lease tokens.

Real redis-server (127.0.0.1:6379), one key prefix per test. Two store handles play two
workers; each test interleaves their writes the way two crawl processes can, and checks
that nothing either of them wrote is lost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from scrapy_fresh.distributed import shared as distributed
from scrapy_fresh.distributed.frontier import Leased, RedisFrontier, merge_write
from scrapy_fresh.distributed.shared import OutageSafeStore
from scrapy_fresh.distributed.store import RedisStore
from scrapy_fresh.frontier.revisit import RevisitPolicy, record_visit
from scrapy_fresh.keys import url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.policy.trust import Evidence
from scrapy_fresh.providers.ledger import QUIET_NAMESPACE, QuietClaim, TrustLedger
from scrapy_fresh.store.base import PageState, SiteState, Status

if TYPE_CHECKING:
    import redis

POLICY = RevisitPolicy(min_refresh_secs=10.0)


def page(n: int = 0, **fields: Any) -> PageState:
    url = f"http://h.test/p/{n}"
    values: dict[str, Any] = {
        "status": Status.IDLE, "first_seen": 0.0, "last_crawl": 1.0, "next_due": 50.0,
        "visits": 1, "fingerprint": 7, "refresh_secs": 3600.0, **fields,
    }  # fmt: skip
    return PageState(key=url_key(url), url=url, host="h.test", **values)


def handle(client: redis.Redis, prefix: str) -> OutageSafeStore:
    """One worker's crawl store on the shared prefix."""
    return OutageSafeStore(RedisStore(client, prefix))


def commit(frontier: RedisFrontier, leased: Leased, now: float) -> bool:
    def apply(record: PageState, site: SiteState) -> None:
        record_visit(record, Outcome.CHANGED, now, POLICY, site)
        record.fingerprint = 99

    return frontier.commit_visit(leased, Outcome.CHANGED, apply)


# -- 1. page records written outside the visit commit ----------------------------------


def test_provider_update_does_not_undo_a_concurrent_visit(
    client: redis.Redis, prefix: str
) -> None:
    """Worker A reads a record for a sitemap's signal; worker B visits the page; A then
    writes its signal. The visit (visits, fingerprint, due time) and the signal (the
    past update) are both kept. A plain put lost the visit."""
    RedisStore(client, prefix).put(page(next_due=5.0))
    a = handle(client, prefix)
    b = RedisFrontier(RedisStore(client, prefix))
    state = a.get(page().key)  # A reads (tracker.apply: get_many)
    assert state is not None
    (leased,) = b.pop(10.0).leased  # B takes the page and visits it
    assert commit(b, leased, 11.0)
    state.past_updates = [9.0]  # A's signal: the page changed at 9
    state.next_due = 10.0
    a.put(state)
    stored = RedisStore(client, prefix).get(page().key)
    assert stored is not None
    assert (stored.visits, stored.fingerprint, stored.last_crawl) == (2, 99, 11.0)
    assert stored.past_updates == [9.0]
    assert stored.next_due > 11.0  # the visit at 11 came after the change: not due again


def test_provider_update_of_a_url_another_worker_holds_waits_for_its_visit(
    client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record in flight at worker B is not written by worker A (it would put the URL
    back in the due set and make B's lease fail); A's update is written after B's
    visit, merged into it."""
    monkeypatch.setattr(distributed, "DEFER_RETRY_SECS", 0.0, raising=False)
    RedisStore(client, prefix).put(page(next_due=5.0))
    a = handle(client, prefix)
    counted: list[str] = []
    a.stat = lambda name, count=1: counted.extend([name] * count)
    b = RedisFrontier(RedisStore(client, prefix))
    state = a.get(page().key)
    assert state is not None
    (leased,) = b.pop(10.0).leased
    state.past_updates = [8.0]
    a.put(state)  # held back: B holds the URL
    store = RedisStore(client, prefix)
    held = store.get(page().key)
    assert held is not None
    assert held.status is Status.IN_FLIGHT
    assert store.due(1e9, 10) == []  # not back in the due set
    assert counted == ["fresh/redis/record_deferred"]
    assert commit(b, leased, 11.0)  # B's lease still holds
    assert a.replay()  # A's next pull writes the held-back update
    stored = store.get(page().key)
    assert stored is not None
    assert (stored.visits, stored.fingerprint, stored.past_updates) == (2, 99, [8.0])
    assert not a.deferred


def test_postpone_after_a_concurrent_visit_keeps_no_sooner_than(
    client: redis.Redis, prefix: str
) -> None:
    """A due time moved later (a postponed sitemap) stays a lower bound after a merge."""
    RedisStore(client, prefix).put(page(next_due=5.0))
    a = handle(client, prefix)
    b = RedisFrontier(RedisStore(client, prefix))
    state = a.get(page().key)
    assert state is not None
    (leased,) = b.pop(10.0).leased
    assert commit(b, leased, 11.0)
    state.next_due = 1e6
    a.put(state)
    stored = RedisStore(client, prefix).get(page().key)
    assert stored is not None
    assert (stored.visits, stored.next_due) == (2, 1e6)


def test_write_after_own_commit_needs_no_retry(client: redis.Redis, prefix: str) -> None:
    """The provider middleware's write right after a visit starts from what the commit
    wrote: one round trip, no merge."""
    RedisStore(client, prefix).put(page(next_due=5.0))
    a = handle(client, prefix)
    (leased,) = a.frontier.pop(10.0).leased
    a.leased[leased.key] = (leased.state, leased.token)
    state = a.get(leased.key)
    assert state is not None

    def apply(record: PageState, site: SiteState) -> None:
        record_visit(record, Outcome.CHANGED, 11.0, POLICY, site)

    assert a.commit_visit(state, Outcome.CHANGED, apply)
    state.future_updates = [(500.0, 0.9)]
    a.put(state)
    assert a.frontier.record_retries == 0
    stored = RedisStore(client, prefix).get(leased.key)
    assert stored is not None
    assert stored.future_updates == [(500.0, 0.9)]
    assert stored.visits == 2


def test_merge_write_fields() -> None:
    base = page(future_updates=[(100.0, 0.5), (200.0, 0.5)], access_count=1)
    new = page(future_updates=[(200.0, 0.5), (300.0, 0.7)], access_count=4)
    current = page(future_updates=[(100.0, 0.5), (200.0, 0.5), (250.0, 1.0)], visits=3)
    out = merge_write(base, new, current)
    assert out.future_updates == [(200.0, 0.5), (250.0, 1.0), (300.0, 0.7)]
    assert (out.access_count, out.visits) == (4, 3)
    stale = page(visits=0, fingerprint=None, next_due=1.0)  # never read: visit fields kept
    assert merge_write(None, stale, current).visits == 3


# -- 2. trust records and quiet claims ------------------------------------------------


def test_two_workers_judging_one_host_both_count(client: redis.Redis, prefix: str) -> None:
    """Two ledgers (two workers) read one host's trust, then each adds evidence. Both
    observations count; with plain put_site the second overwrote the first."""
    one = TrustLedger(handle(client, prefix))
    two = TrustLedger(handle(client, prefix))
    one.claimed("h.test", "sitemap", 1.0)
    assert two.get("h.test", "sitemap") is not None  # both have it cached now
    one.observe("h.test", "sitemap", Evidence.REFUTED)
    two.observe("h.test", "sitemap", Evidence.REFUTED)
    two.claimed("h.test", "sitemap", 2.0)
    fresh = TrustLedger(RedisStore(client, prefix))
    entry = fresh.get("h.test", "sitemap")
    assert entry is not None
    assert entry.record.observations == 2
    assert entry.last_claim_at == 2.0


def test_older_quiet_claim_does_not_replace_a_newer_one(client: redis.Redis, prefix: str) -> None:
    one = TrustLedger(handle(client, prefix))
    two = TrustLedger(handle(client, prefix))
    one.put_quiet_claim("ab12", QuietClaim(200.0, 300.0, until=900.0))
    two.put_quiet_claim("ab12", QuietClaim(100.0, 300.0, until=400.0))  # late, older
    stored = RedisStore(client, prefix).get_meta(QUIET_NAMESPACE, "ab12")
    assert stored is not None
    assert QuietClaim.from_meta(stored) == QuietClaim(200.0, 300.0, until=900.0)


# -- 3. lease tokens ------------------------------------------------------------------


def test_two_pops_in_one_tick_get_distinct_tokens(client: redis.Redis, prefix: str) -> None:
    """Worker A takes a URL at t=10; the lease is released and worker B takes it at the
    same t=10. A's token (the pop time, before) must not pass for B's."""
    RedisStore(client, prefix).put(page(next_due=5.0))
    a = RedisFrontier(RedisStore(client, prefix))
    b = RedisFrontier(RedisStore(client, prefix))
    (first,) = a.pop(10.0).leased
    assert RedisStore(client, prefix).release_in_flight() == 1
    (second,) = b.pop(10.0).leased
    assert first.token != second.token
    assert not commit(a, first, 11.0)  # stale: refused, nothing written
    assert not a.give_back(first)
    assert commit(b, second, 12.0)
    stored = RedisStore(client, prefix).get(page().key)
    assert stored is not None
    assert (stored.visits, stored.last_crawl) == (2, 12.0)


def test_lease_taken_by_the_old_code_still_commits(client: redis.Redis, prefix: str) -> None:
    """A record put in flight by the previous version (no nonce stored: its token is
    the pop time) is committed with that token."""
    RedisStore(client, prefix).put(page(next_due=5.0))
    frontier = RedisFrontier(RedisStore(client, prefix))
    (leased,) = frontier.pop(10.0).leased
    client.hdel(f"{prefix}:lease", bytes.fromhex(leased.key))
    old = Leased(leased.state, repr(10.0), leased.stream)
    assert commit(frontier, old, 11.0)
    assert not client.hlen(f"{prefix}:lease")


def test_leased_update_keeps_the_lease(client: redis.Redis, prefix: str) -> None:
    RedisStore(client, prefix).put(page(next_due=5.0))
    frontier = RedisFrontier(RedisStore(client, prefix))
    (leased,) = frontier.pop(10.0).leased
    state = PageState(**leased.state.__dict__)
    state.request = {"meta": {"x": 1}}
    assert frontier.update_leased(leased, state)
    stored = RedisStore(client, prefix).get(leased.key)
    assert stored is not None
    assert (stored.status, stored.in_flight_since) == (Status.IN_FLIGHT, 10.0)
    assert commit(frontier, leased, 11.0)
