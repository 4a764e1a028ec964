"""Meta records (trust, stamped reads, quiet claims, the run cadence) beside the pages
and sites: old stores are moved to them, concurrent workers' updates all count, and a
Redis outage loses none (the contract itself: tests/store_contract.py)."""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from scrapy_fresh.distributed import shared as distributed
from scrapy_fresh.distributed.frontier import open_redis_store
from scrapy_fresh.distributed.shared import OutageSafeStore
from scrapy_fresh.distributed.store import RedisStore
from scrapy_fresh.keys import url_key
from scrapy_fresh.policy.trust import Evidence, TrustRecord
from scrapy_fresh.providers.ledger import QuietClaim, TrustLedger, iter_trust
from scrapy_fresh.providers.tracker import STAMPED_NAMESPACE, StampedReads
from scrapy_fresh.store.base import SiteState
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.redis_helpers import OwnServer

if TYPE_CHECKING:
    from collections.abc import Iterator

#: A version 5 store written by the code before meta records (/work/main at b2011f4):
#: trust records of shop.test (sitemap) and news.test (feed: demoted; cache), two quiet
#: claims, stamped reads of shop.test's sitemap (and a reset one of old.test), the run
#: cadence, the real site shop.test and one page. All of them were site rows then.
V5_FILE = Path(__file__).parent / "data" / "store-v5-meta.sqlite"
QUIET_A = url_key("http://news.test/a")
QUIET_B = url_key("http://news.test/b")


def check_v5_content(store: Any) -> None:
    """What the v5 file held, read through the ledger, the tracker's and the cadence's
    readers."""
    assert [s.host for s in store.sites()] == ["shop.test"]  # the one real host
    assert store.get_site("shop.test") == SiteState(
        "shop.test", visits=7, changes=2, p_c=0.25, refresh_secs=3600.0, updated_at=7000.0,
        checks={"etag": 3},
    )  # fmt: skip
    trust = {(t.host, t.kind): t for t in iter_trust(store)}
    assert set(trust) == {("shop.test", "sitemap"), ("news.test", "feed"), ("news.test", "cache")}
    feed = trust[("news.test", "feed")]
    assert feed.record.demoted is True
    assert feed.record.observations == 6
    assert feed.record.refuted == pytest.approx(5.797242409493313)
    assert feed.last_claim_at == 2000.0
    sitemap = trust[("shop.test", "sitemap")]
    assert sitemap.record == TrustRecord(
        confirmed=pytest.approx(1.2862327044933592), refuted=pytest.approx(0.2),
        demoted=False, observations=2,
    )  # fmt: skip
    ledger = TrustLedger(store)
    assert not ledger.trusted("news.test", "feed")
    assert ledger.kinds_in_use("news.test") == ["feed", "cache"]
    assert ledger.quiet_claim(QUIET_A) == QuietClaim(
        3000.0, 4000.0, until=9000.0, hours=frozenset({0, 1, 23}), days=frozenset({5, 6})
    )
    assert ledger.quiet_claim(QUIET_B) == QuietClaim(3100.0, 4100.0)
    stamped = dict(store.meta(STAMPED_NAMESPACE))
    assert stamped == {"sitemap/shop.test": {"reads": 2, "entries": 40, "read_at": 5000.0}}
    assert StampedReads.from_meta(stamped["sitemap/shop.test"]) == StampedReads(2, 40, 5000.0)
    assert store.get_meta("run", "cycle") == {"period": 21600.0, "started_at": 6000.0}


def test_version_5_file_is_migrated_to_meta_records(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    path.write_bytes(V5_FILE.read_bytes())
    with SQLiteStore(path) as store:
        check_v5_content(store)
        assert len(store) == 1  # the page stays
    with SQLiteStore(path) as store:  # opened again: nothing moves twice
        check_v5_content(store)


def test_old_redis_site_records_are_moved_when_the_store_opens(
    client: redis.Redis, prefix: str
) -> None:
    """A Redis store written before meta records gets the same content as a migrated
    SQLite file (the old site rows copied over from the v5 file)."""
    from scrapy.settings import Settings

    from tests.redis_helpers import SHARED_URL

    old = RedisStore(client, prefix)
    with closing(sqlite3.connect(f"file:{V5_FILE}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT host, visits, changes, p_c, refresh_secs, updated_at, checks FROM sites"
        ).fetchall()
    for host, visits, changes, p_c, refresh, updated, checks in rows:
        old.put_site(
            SiteState(host, visits, changes, p_c, refresh, updated, json.loads(checks or "{}"))
        )
    old.put_meta("trust", "feed/news.test", {"observations": 99})  # a newer worker's
    assert len(list(old.sites())) == len(rows) == 9
    store = open_redis_store(Settings({"REDIS_URL": SHARED_URL}), prefix)
    try:
        assert [s.host for s in store.sites()] == ["shop.test"]
        newer = next(t for t in iter_trust(store) if t.kind == "feed")
        assert newer.record.observations == 99  # kept: not overwritten by the old row
        store.put_meta("trust", "feed/news.test", dict(old_feed(rows)))
        check_v5_content(store)
        assert store.upgrade_legacy_sites() == 0  # nothing left to move
    finally:
        store.close()


def old_feed(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    from scrapy_fresh.store._legacy import meta_of_site

    (row,) = [r for r in rows if r[0] == "trust/feed/news.test"]
    moved = meta_of_site(SiteState(*row[:6]))
    assert moved is not None
    return moved[2]


def test_workers_judging_one_host_at_once_all_count(client: redis.Redis, prefix: str) -> None:
    """Four workers (threads, each with its own store and ledger) add evidence to one
    trust record at once: every observation counts (compare-and-set)."""
    per_worker = 25
    barrier = threading.Barrier(4)

    def work() -> None:
        ledger = TrustLedger(RedisStore(redis.Redis(host="127.0.0.1", port=6379), prefix))
        barrier.wait()
        for _ in range(per_worker):
            ledger.observe("busy.test", "sitemap", Evidence.CONFIRMED)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    (entry,) = iter_trust(RedisStore(client, prefix))
    assert entry.record.observations == 4 * per_worker


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[OwnServer]:
    server = OwnServer(tmp_path, "--appendonly", "yes", "--appendfsync", "always")
    server.start()
    yield server
    server.stop()


def test_meta_updates_during_a_redis_outage_are_applied_when_it_is_back(
    own_server: OwnServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While Redis is down, evidence is added to the copy last seen; once it is back the
    update runs again on the stored value, which another worker changed meanwhile."""
    monkeypatch.setattr(distributed, "FIRST_BACKOFF_SECS", 0.0)  # retry at every call
    client = redis.Redis(host="127.0.0.1", port=own_server.port, retry=Retry(NoBackoff(), 1))
    store = OutageSafeStore(RedisStore(client, "p"), outage_wait=0.5)
    try:
        ledger = TrustLedger(store)
        ledger.observe("a.test", "feed", Evidence.CONFIRMED)
        own_server.stop()
        ledger.forget_cache()
        ledger.observe("a.test", "feed", Evidence.CONFIRMED)  # on the copy kept
        assert ledger.get("a.test", "feed").record.observations == 2  # type: ignore[union-attr]
        assert len(store.pending) == 1
        own_server.start()
        other = RedisStore(redis.Redis(host="127.0.0.1", port=own_server.port), "p")
        stored = other.get_meta("trust", "feed/a.test")
        assert stored is not None
        assert stored["observations"] == 1  # the outage's update is not there yet
        other.put_meta("trust", "feed/a.test", {**stored, "observations": 5})  # another worker
        assert list(store.meta("quiet")) == []  # any call once it is back replays
        assert store.pending == []
        assert other.get_meta("trust", "feed/a.test")["observations"] == 6  # type: ignore[index]
        other.close()
    finally:
        store.pending.clear()
        store.inner.close()
        client.close()
