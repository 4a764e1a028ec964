"""Visits written by several workers on one Redis: leases and site aggregates.

Real redis-server (127.0.0.1:6379), real RedisStore / RedisFrontier objects, one key
prefix per test. A visit is written only while its worker holds the URL's lease, and
the site aggregates of concurrent visits to one host add up exactly (compare-and-set).
"""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import time
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest
import redis

from scrapy_fresh.distributed import frontier as redis_frontier
from scrapy_fresh.distributed import shared as distributed
from scrapy_fresh.distributed.frontier import Leased, RedisFrontier
from scrapy_fresh.distributed.shared import OutageSafeStore
from scrapy_fresh.distributed.store import RedisStore
from scrapy_fresh.frontier.revisit import RevisitPolicy, record_visit
from scrapy_fresh.keys import url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.base import PageState, SiteState, Status
from tests.redis_helpers import SHARED_URL, OwnServer

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

POLICY = RevisitPolicy(min_refresh_secs=10.0)


def visited(host: str, n: int, **fields: Any) -> PageState:
    """A record fetched once before, due now."""
    url = f"http://{host}/p/{n}"
    values: dict[str, Any] = {
        "status": Status.IDLE, "first_seen": 0.0, "last_crawl": 1.0, "next_due": 2.0,
        "visits": 1, "fingerprint": 7, "refresh_secs": 3600.0, **fields,
    }  # fmt: skip
    return PageState(key=url_key(url), url=url, host=host, **values)


def worker(client: redis.Redis, prefix: str, **kwargs: Any) -> RedisFrontier:
    """One worker's own store and frontier objects on the shared prefix."""
    return RedisFrontier(RedisStore(client, prefix), **kwargs)


def site(client: redis.Redis, prefix: str, host: str) -> SiteState:
    found = RedisStore(client, prefix).get_site(host)
    assert found is not None
    return found


def visit(outcome: Outcome, now: float) -> Callable[[PageState, SiteState], None]:
    def apply(record: PageState, site: SiteState) -> None:
        record_visit(record, outcome, now, POLICY, site)

    return apply


# -- site aggregates: compare-and-set ---------------------------------------------------


def test_a_site_changed_meanwhile_is_updated_again(client: redis.Redis, prefix: str) -> None:
    one, two = worker(client, prefix), worker(client, prefix)
    one.add([visited("h", 1), visited("h", 2)])
    (a,) = one.pop(10.0, 1).leased
    (b,) = two.pop(10.0, 1).leased
    seen: list[int] = []

    def apply(record: PageState, site: SiteState) -> None:
        seen.append(site.visits)
        if len(seen) == 1:  # worker two writes its visit between one's read and write
            assert two.visit(b, Outcome.CHANGED, 11.0, POLICY) is not None
        record_visit(record, Outcome.UNCHANGED, 12.0, POLICY, site)

    assert one.commit_visit(a, Outcome.UNCHANGED, apply) is True
    assert seen == [0, 1]  # done again, on the site with two's visit in it
    assert one.site_retries == 1
    got = site(client, prefix, "h")
    assert (got.visits, got.changes, got.updated_at) == (2, 1, 12.0)
    record = one.store.get(a.key)
    assert record is not None
    assert (record.visits, record.status, record.last_crawl) == (2, Status.IDLE, 12.0)
    assert one.outcomes() == {**dict.fromkeys(Outcome, 0), Outcome.CHANGED: 1,
                              Outcome.UNCHANGED: 1}  # fmt: skip


def test_visits_of_one_host_in_one_call_build_on_each_other(
    client: redis.Redis, prefix: str
) -> None:
    frontier = worker(client, prefix)
    frontier.add([visited("h", n) for n in range(5)] + [visited("g", 1)])
    leased = frontier.pop(10.0, 10).leased
    assert len(leased) == 6
    done = frontier.commit_visits(
        [redis_frontier.Visit(x, Outcome.CHANGED, visit(Outcome.CHANGED, 11.0)) for x in leased]
    )
    assert done == [True] * 6
    assert frontier.site_retries == 0  # one round trip: no conflict with itself
    assert (site(client, prefix, "h").visits, site(client, prefix, "g").visits) == (5, 1)


def test_a_visit_that_judges_nothing_leaves_its_site_alone(
    client: redis.Redis, prefix: str
) -> None:
    frontier = worker(client, prefix)
    frontier.add([visited("h", 1), visited("h", 2)])
    first, second = frontier.pop(10.0, 2).leased
    assert frontier.visit(first, Outcome.CHANGED, 11.0, POLICY) is not None
    before = client.hget(f"{prefix}:sites", b"h")
    assert frontier.visit(second, Outcome.ERROR, 12.0, POLICY) is not None
    assert client.hget(f"{prefix}:sites", b"h") == before  # not even updated_at
    new = worker(client, prefix)
    new.add([visited("fresh", 1, last_crawl=None, visits=0, fingerprint=None)])
    (leased,) = new.pop(13.0, 1).leased
    assert new.visit(leased, Outcome.NEW, 14.0, POLICY) is not None
    assert site(client, prefix, "fresh") == SiteState("fresh")  # created, nothing judged


def test_after_too_many_tries_the_visit_is_written_without_its_site(
    client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    monkeypatch.setattr(redis_frontier, "MAX_SITE_TRIES", 1)
    one, two = worker(client, prefix), worker(client, prefix)
    one.add([visited("h", 1), visited("h", 2)])
    (a,) = one.pop(10.0, 1).leased
    (b,) = two.pop(10.0, 1).leased
    tries: list[int] = []

    def apply(record: PageState, site: SiteState) -> None:
        tries.append(1)
        if len(tries) == 1:
            two.visit(b, Outcome.CHANGED, 11.0, POLICY)
        record_visit(record, Outcome.CHANGED, 12.0, POLICY, site)

    with caplog.at_level(logging.WARNING, logger="scrapy_fresh.distributed.frontier"):
        assert one.commit_visit(a, Outcome.CHANGED, apply) is True
    assert "written without its site update" in caplog.text
    assert one.site_given_up == 1
    assert site(client, prefix, "h").visits == 1  # two's visit; one's was given up
    record = one.store.get(a.key)
    assert record is not None
    assert (record.visits, record.last_crawl) == (2, 12.0)


def test_a_visit_that_keeps_losing_takes_the_sites_turn(
    client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A visit that lost the race CLAIM_AFTER times claims the site's turn at its next
    conflict; while it has it, other visits of that site wait (they are not lost), and
    its next try writes."""
    one, two = worker(client, prefix), worker(client, prefix)
    n_other = redis_frontier.CLAIM_AFTER + 1
    one.add([visited("h", n) for n in range(n_other + 2)])
    (mine,) = one.pop(10.0, 1).leased
    others = two.pop(10.0, n_other + 1).leased
    late = others.pop()
    blocked = threading.Event()
    real_sleep = time.sleep

    def sleep(secs: float) -> None:  # called only when a visit waits for another's turn
        blocked.set()
        real_sleep(secs)

    monkeypatch.setattr(redis_frontier, "time", SimpleNamespace(sleep=sleep))
    turn_key = f"{prefix}:sturn:h"
    calls: list[bytes | None] = []
    waiter: list[threading.Thread] = []

    def apply(record: PageState, site: SiteState) -> None:
        calls.append(client.get(turn_key))
        if len(calls) <= n_other:  # another visit of h is written before each try
            assert two.visit(others[len(calls) - 1], Outcome.CHANGED, 11.0, POLICY)
        else:  # this visit has the turn: a visit of h by another worker waits
            thread = threading.Thread(
                target=worker(client, prefix).visit, args=(late, Outcome.CHANGED, 12.0, POLICY)
            )
            thread.start()
            waiter.append(thread)
            assert blocked.wait(30)
            assert one.store.get(late.key).status is Status.IN_FLIGHT  # type: ignore[union-attr]
        record_visit(record, Outcome.UNCHANGED, 13.0, POLICY, site)

    assert one.commit_visit(mine, Outcome.UNCHANGED, apply) is True
    assert calls[: redis_frontier.CLAIM_AFTER + 1] == [None] * (redis_frontier.CLAIM_AFTER + 1)
    assert calls[-1] is not None  # the last try had the turn
    assert len(calls) == n_other + 1
    waiter[0].join(30)
    assert client.exists(turn_key) == 0  # the turn ended with the write
    got = site(client, prefix, "h")
    assert (got.visits, got.changes) == (n_other + 2, n_other + 1)


def test_a_turn_ends_when_its_visit_is_done_with(client: redis.Redis, prefix: str) -> None:
    """The commit script ends a visit's turn at a site when that visit is written or its
    lease is found lost, and leaves another visit's turn alone."""
    from scrapy_fresh.distributed.store import encode_record

    one, two = worker(client, prefix, lease_secs=60.0), worker(client, prefix, lease_secs=60.0)
    one.add([visited("h", 1), visited("h", 2)])
    first, second = one.pop(100.0, 2).leased
    two.pop(161.0, 2)  # both leases ran out: two holds the URLs now
    turn = f"{prefix}:sturn:h"

    def send(leased: Leased, claim: str) -> int:
        row = encode_record(leased.state, 0.0)
        args = [prefix, row[0], leased.token, *row[1:3], *row[4:], b"h", "-", b"", "", claim]
        codes, _ = one.store._call("commit", one._commit, args=args)
        return int(codes[0])

    client.set(turn, "someone else")
    assert send(first, "mine") == -1  # lease lost
    assert client.get(turn) == b"someone else"  # not its turn: left alone
    client.set(turn, "mine")
    assert send(second, "mine") == -1
    assert client.exists(turn) == 0  # its turn ended with it


HAMMER = """
import json, sys
import redis
from scrapy_fresh.distributed.frontier import RedisFrontier
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.frontier.revisit import RevisitPolicy
from scrapy_fresh.distributed.store import RedisStore
prefix, url = sys.argv[1], sys.argv[2]
client = redis.Redis.from_url(url)
frontier = RedisFrontier(RedisStore(client, prefix), lease_secs=3600.0)
policy = RevisitPolicy(min_refresh_secs=10.0)
client.rpush(prefix + ":test:ready", 1)
client.blpop([prefix + ":test:go"], timeout=60)  # all start together
counts = {"visits": 0, "changed": 0}
while True:
    got = frontier.pop(100.0, 1).leased
    if not got:
        break
    leased = got[0]
    outcome = Outcome.CHANGED if leased.state.doc_id % 3 == 0 else Outcome.UNCHANGED
    assert frontier.visit(leased, outcome, 101.0, policy) is not None
    counts["visits"] += 1
    counts["changed"] += outcome is Outcome.CHANGED
counts["retries"] = getattr(frontier, "site_retries", -1)
print(json.dumps(counts))
"""


def test_concurrent_workers_on_one_host_add_up_exactly(
    client: redis.Redis, prefix: str, python_exe: str, python_env: dict[str, str]
) -> None:
    """Three processes visit the 900 pages of one host, one at a time each: the site
    counts every visit once (a read-modify-write of the site would lose some)."""
    store = RedisStore(client, prefix)
    frontier = RedisFrontier(store)
    for start in range(0, 900, 300):
        frontier.add([visited("h", n) for n in range(start, start + 300)])
    store.put_site(SiteState("h", visits=1000, changes=100, p_c=0.1, refresh_secs=3600.0))
    workers = [
        subprocess.Popen(
            [python_exe, "-c", HAMMER, prefix, SHARED_URL],
            env=python_env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for _ in workers:
        assert client.blpop([prefix + ":test:ready"], timeout=60) is not None
    client.rpush(prefix + ":test:go", 1, 1, 1)
    results = [json.loads(w.communicate(timeout=300)[0]) for w in workers]
    assert all(w.returncode == 0 for w in workers)
    assert sum(r["visits"] for r in results) == 900
    assert all(r["visits"] for r in results)  # every worker took part
    changed = sum(r["changed"] for r in results)
    got = site(client, prefix, "h")
    assert (got.visits, got.changes) == (1000 + 900, 100 + changed)
    assert all(s.visits == 2 for s in store.iterate())  # each record once more
    outcomes = frontier.outcomes()
    assert (outcomes[Outcome.CHANGED], outcomes[Outcome.UNCHANGED]) == (changed, 900 - changed)
    print("site retries per worker:", [r["retries"] for r in results])


# -- leases: a worker whose lease ran out writes nothing ----------------------------------


@pytest.mark.parametrize("late_first", [True, False])
def test_a_visit_after_the_lease_was_reaped_does_not_overwrite(
    client: redis.Redis, prefix: str, late_first: bool
) -> None:
    """Worker one takes a URL and hangs; its lease runs out; worker two takes the URL
    again and visits it. One's late visit is refused whether it comes before or after
    two's: the record, the site and the outcome counts are two's alone."""
    one = worker(client, prefix, lease_secs=60.0)
    two = worker(client, prefix, lease_secs=60.0)
    one.add([visited("h", 1)])
    (late,) = one.pop(100.0, 1).leased
    again = two.pop(161.0, 1)
    assert again.reaped == 1
    (fresh,) = again.leased
    assert fresh.token != late.token
    stale = PageState(**{**late.state.__dict__, "fingerprint": 111, "etag": '"one"'})
    newer = PageState(**{**fresh.state.__dict__, "fingerprint": 222, "etag": '"two"'})
    if late_first:
        assert one.visit(late, Outcome.CHANGED, 170.0, POLICY, stale) is None
        assert two.visit(fresh, Outcome.UNCHANGED, 171.0, POLICY, newer) is not None
    else:
        assert two.visit(fresh, Outcome.UNCHANGED, 171.0, POLICY, newer) is not None
        assert one.visit(late, Outcome.CHANGED, 170.0, POLICY, stale) is None
    record = one.store.get(late.key)
    assert record is not None
    assert (record.fingerprint, record.etag, record.last_crawl, record.visits) == (
        222, '"two"', 171.0, 2,
    )  # fmt: skip
    got = site(client, prefix, "h")
    assert (got.visits, got.changes) == (1, 0)
    assert one.outcomes()[Outcome.CHANGED] == 0
    assert one.leases_lost == 1
    assert two.store.counts()[Status.IDLE] == 1


def test_a_commit_sent_twice_counts_once(client: redis.Redis, prefix: str) -> None:
    """A commit retried after a dropped connection (its first try went through) is
    recognised: the record is already what it would write."""
    frontier = worker(client, prefix)
    frontier.add([visited("h", 1)])
    (leased,) = frontier.pop(10.0, 1).leased
    first = PageState(**leased.state.__dict__)
    again = PageState(**leased.state.__dict__)
    assert frontier.visit(leased, Outcome.CHANGED, 11.0, POLICY, first) is not None
    assert frontier.visit(leased, Outcome.CHANGED, 11.0, POLICY, again) is not None
    assert site(client, prefix, "h").visits == 1
    assert frontier.outcomes()[Outcome.CHANGED] == 1
    assert frontier.leases_lost == 0


def test_a_leased_record_is_updated_only_under_its_lease(client: redis.Redis, prefix: str) -> None:
    one = worker(client, prefix, lease_secs=60.0)
    two = worker(client, prefix, lease_secs=60.0)
    one.add([visited("h", 1)])
    (mine,) = one.pop(100.0, 1).leased
    update = PageState(**{**mine.state.__dict__, "request": {"priority": 5}})
    assert one.update_leased(mine, update) is True
    stored = one.store.get(mine.key)
    assert stored is not None
    assert (stored.request, stored.status, stored.in_flight_since) == (
        {"priority": 5}, Status.IN_FLIGHT, 100.0,
    )  # fmt: skip
    (theirs,) = two.pop(161.0, 1).leased
    assert one.update_leased(mine, PageState(**{**update.__dict__, "request": {}})) is False
    stored = one.store.get(mine.key)
    assert stored is not None
    assert (stored.request, stored.in_flight_since) == ({"priority": 5}, 161.0)
    assert two.visit(theirs, Outcome.UNCHANGED, 162.0, POLICY) is not None


# -- the crawl's store (OutageSafeStore) -------------------------------------------------


def safe(client: redis.Redis, prefix: str) -> OutageSafeStore:
    return OutageSafeStore(RedisStore(client, prefix), outage_wait=0.5)


def lease_into(store: OutageSafeStore, leased: list[Leased]) -> None:
    """What SharedFrontier.pull does with the URLs it takes."""
    for x in leased:
        store.leased[x.key] = (PageState(**x.state.__dict__), x.token)


def test_commit_visit_of_the_crawl_store(client: redis.Redis, prefix: str) -> None:
    one, two = safe(client, prefix), safe(client, prefix)
    frontier = worker(client, prefix, lease_secs=60.0)
    frontier.add([visited("h", 1), visited("h", 2)])
    lease_into(one, frontier.pop(100.0, 2).leased)
    keys = sorted(one.leased)
    lost: list[str] = []
    retried: list[int] = []
    state = one.get(keys[0])
    assert state is not None
    assert one.commit_visit(state, Outcome.CHANGED, visit(Outcome.CHANGED, 101.0),
                            lost=lambda: lost.append("0"), retried=retried.append) is True  # fmt: skip
    assert state.last_crawl == 101.0  # the caller's record is the one written
    assert keys[0] not in one.leased
    lease_into(two, worker(client, prefix, lease_secs=60.0).pop(170.0, 1).leased)  # reaped
    state = one.get(keys[1])
    assert state is not None
    assert one.commit_visit(state, Outcome.CHANGED, visit(Outcome.CHANGED, 171.0),
                            lost=lambda: lost.append("1")) is False  # fmt: skip
    assert lost == ["1"]
    assert site(client, prefix, "h").visits == 1
    assert retried == []


def test_a_put_of_a_leased_record_keeps_the_lease_or_writes_nothing(
    client: redis.Redis, prefix: str
) -> None:
    store = safe(client, prefix)
    frontier = worker(client, prefix, lease_secs=60.0)
    frontier.add([visited("h", 1)])
    lease_into(store, frontier.pop(100.0, 1).leased)
    (key,) = store.leased
    state = store.get(key)
    assert state is not None
    state.request = {"priority": 3}
    store.put(state)  # the spider's own request for a URL this worker holds
    assert store.leased[key][0].request == {"priority": 3}  # still leased, copy updated
    assert store.inner.get(key).request == {"priority": 3}  # type: ignore[union-attr]
    worker(client, prefix, lease_secs=60.0).pop(161.0, 1)  # another worker takes it
    state.request = {"priority": 9}
    store.put(state)
    assert key not in store.leased
    assert store.inner.get(key).request == {"priority": 3}  # type: ignore[union-attr]


@pytest.fixture
def own(tmp_path: Path) -> Iterator[OwnServer]:
    server = OwnServer(tmp_path, "--appendonly", "yes", "--appendfsync", "always")
    server.start()
    yield server
    server.stop()


def test_visits_kept_during_an_outage_are_committed_under_their_lease(
    own: OwnServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis goes away while a worker records visits: the visits are kept, and written
    (lease-checked, sites by compare-and-set) when it is back; a visit whose URL went to
    another worker meanwhile is not written and is reported lost. The log names the
    server; nothing committed before the outage is lost."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    monkeypatch.setattr(distributed, "FIRST_BACKOFF_SECS", 0.0)  # retry at every call
    client = redis.Redis(host="127.0.0.1", port=own.port, retry=Retry(NoBackoff(), 1))
    try:
        store = OutageSafeStore(RedisStore(client, "p"), outage_wait=0.5)
        frontier = worker(client, "p", lease_secs=60.0)
        frontier.add([visited("h", n) for n in range(3)])
        (early,) = frontier.pop(50.0, 1).leased  # its lease runs out first
        before, during = frontier.pop(100.0, 2).leased
        lease_into(store, [early, before, during])
        state = store.get(before.key)
        assert state is not None
        assert store.commit_visit(state, Outcome.CHANGED, visit(Outcome.CHANGED, 101.0))
        own.stop()
        lost: list[str] = []
        with caplog.at_level(logging.WARNING, logger="scrapy_fresh.distributed.shared"):
            for n, leased in enumerate((during, early)):
                state = store.get(leased.key)  # the copy taken with the lease
                assert state is not None
                assert store.commit_visit(
                    state, Outcome.UNCHANGED, visit(Outcome.UNCHANGED, 102.0 + n),
                    lost=lambda key=leased.key: lost.append(key),
                ) is True  # fmt: skip
                assert state.last_crawl == 102.0 + n  # applied for the caller at once
        assert f"Redis at 127.0.0.1:{own.port} is unreachable" in caplog.text
        assert f"127.0.0.1:{own.port}" in caplog.text  # the server is named
        assert len(store.pending) == 2
        assert lost == []
        own.start()
        other = worker(client, "p", lease_secs=60.0)
        taken = other.pop(111.0, 10)  # early's lease (50.0) ran out; the others' did not
        assert [x.key for x in taken.leased] == [early.key]
        with caplog.at_level(logging.WARNING, logger="scrapy_fresh.distributed.shared"):
            assert len(store) == 3  # the first call after the outage writes what was kept
        assert f"Redis at 127.0.0.1:{own.port} answers again" in caplog.text
        assert store.pending == []
        assert lost == [early.key]
        got = {key: store.inner.get(key) for key in (early.key, before.key, during.key)}
        assert got[before.key].last_crawl == 101.0  # type: ignore[union-attr]
        assert got[during.key].last_crawl == 102.0  # type: ignore[union-attr]
        taken_again = got[early.key]
        assert taken_again is not None
        assert (taken_again.status, taken_again.in_flight_since) == (Status.IN_FLIGHT, 111.0)
        hsite = store.inner.get_site("h")
        assert hsite is not None
        assert (hsite.visits, hsite.changes) == (2, 1)
        assert other.outcomes()[Outcome.UNCHANGED] == 1
    finally:
        client.close()


# -- the crawl's runtime: FreshRuntime._commit on the shared frontier ---------------------


@pytest.mark.parametrize("late_first", [True, False])
def test_the_crawl_writes_nothing_for_a_lost_lease(
    harness: Callable[..., Any], known: Callable[..., PageState], prefix: str, late_first: bool
) -> None:
    """Two crawl workers (FreshScheduler + FreshRuntime, fake clocks): worker one takes
    the pages and hangs past the lease; worker two takes them again and visits them.
    One's late visits write nothing (stat fresh/redis/lease_lost), whatever the order."""
    settings = {"FRESH_STORE": "redis", "REDIS_URL": SHARED_URL, "FRESH_REDIS_KEY": prefix,
                "FRESH_REDIS_LEASE_SECS": 60.0}  # fmt: skip
    urls = [f"http://example.com/p/{n}" for n in range(3)]
    now = 1_000_000.0  # the harness's clock
    records = [known(u, last_crawl=now - 3600, next_due=now - 1) for u in urls]
    one = harness(settings, records=records)
    assert one.clock[0] == now
    mine = one.drain()
    assert sorted(r.url for r in mine) == urls
    two = harness(settings)
    two.clock[0] = now + 61  # one's leases have run out
    theirs = two.drain()
    assert sorted(r.url for r in theirs) == urls
    order = [(one, mine), (two, theirs)] if late_first else [(two, theirs), (one, mine)]
    for h, requests in order:
        h.clock[0] = now + 62
        for request in requests:
            h.record(request, Outcome.UNCHANGED if h is two else Outcome.CHANGED)
    assert one.stat("fresh/redis/lease_lost") == 3
    assert one.stat("fresh/changed") == 0
    assert (two.stat("fresh/unchanged"), two.stat("fresh/redis/lease_lost")) == (3, 0)
    store = RedisStore(redis.Redis.from_url(SHARED_URL), prefix)
    for url in urls:
        record = store.get(url_key(url))
        assert record is not None
        assert (record.status, record.visits, record.changes) == (Status.IDLE, 1, 0)
    got = store.get_site("example.com")
    assert got is not None
    assert (got.visits, got.changes) == (3, 0)
