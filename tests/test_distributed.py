"""OutageSafeStore: writes made while Redis is down are kept and written when it is back."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from scrapy_fresh.distributed import shared as distributed
from scrapy_fresh.distributed.shared import OutageSafeStore
from scrapy_fresh.distributed.store import RedisStore
from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.store.base import SiteState, StateStore, Status
from tests.redis_helpers import OwnServer
from tests.store_contract import page

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture
def server(tmp_path: Path) -> Iterator[OwnServer]:
    own = OwnServer(tmp_path, "--appendonly", "yes", "--appendfsync", "always")
    own.start()
    yield own
    own.stop()


@pytest.fixture
def store(server: OwnServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[OutageSafeStore]:
    monkeypatch.setattr(distributed, "FIRST_BACKOFF_SECS", 0.0)  # retry at every call
    client = redis.Redis(host="127.0.0.1", port=server.port, retry=Retry(NoBackoff(), 1))
    safe = OutageSafeStore(RedisStore(client, "p"), outage_wait=0.5)
    yield safe
    safe.pending.clear()
    safe.inner.close()
    client.close()


def test_is_a_state_store(store: OutageSafeStore) -> None:
    assert isinstance(store, StateStore)


def test_writes_during_an_outage_are_kept_and_written_later(
    store: OutageSafeStore, server: OwnServer, caplog: pytest.LogCaptureFixture
) -> None:
    store.put(page(1, next_due=1.0))
    leased = page(2, status=Status.IN_FLIGHT, in_flight_since=5.0)
    store.put(leased)
    store.leased[leased.key] = (leased, "5.0")
    server.stop()
    with caplog.at_level(logging.WARNING, logger="scrapy_fresh.distributed.shared"):
        store.put(page(2, status=Status.IDLE, visits=1, next_due=99.0))  # its visit
        assert store.add_many([page(3), page(4)]) == [page(3).key, page(4).key]
        store.put_site(SiteState("example.com", visits=1))
    assert f"Redis at 127.0.0.1:{server.port} is unreachable" in caplog.text
    assert len(store.pending) == 3
    assert store.get_site("example.com") == SiteState("example.com", visits=1)  # kept copy
    with pytest.raises(StoreError, match=r"Connection refused|connecting"):
        store.get(page(1).key)  # not leased here: no copy to fall back to
    server.start()
    with caplog.at_level(logging.WARNING, logger="scrapy_fresh.distributed.shared"):
        assert len(store) == 4  # the first call after the outage writes what was kept
    assert f"Redis at 127.0.0.1:{server.port} answers again" in caplog.text
    assert store.pending == []
    two = store.get(page(2).key)
    assert two is not None
    assert (two.status, two.next_due) == (Status.IDLE, 99.0)
    assert store.get_site("example.com") == SiteState("example.com", visits=1)


def test_leased_records_are_read_from_the_lease(store: OutageSafeStore, server: OwnServer) -> None:
    leased = page(1, status=Status.IN_FLIGHT, in_flight_since=5.0)
    store.put(leased)
    store.leased[leased.key] = (leased, "5.0")
    server.stop()
    got = store.get(leased.key)
    assert got == leased
    assert got is not leased


def test_bad_records_still_fail_at_once(store: OutageSafeStore, server: OwnServer) -> None:
    bad = page(1)
    bad.next_due = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        store.put(bad)
    server.stop()
    with pytest.raises(ValueError, match="NaN"):
        store.put(bad)
    assert store.pending == []


def test_flush_gives_up_after_the_outage_wait(
    store: OutageSafeStore, server: OwnServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.stop()
    store.put(page(1))
    with caplog.at_level(logging.ERROR, logger="scrapy_fresh.distributed.shared"):
        store.flush()
    assert "1 kept writes are lost" in caplog.text
    assert store.pending == []


def test_start_urls_from_redis_are_managed() -> None:
    from scrapy_redis.spiders import RedisSpider

    from scrapy_fresh.distributed.shared import FreshStartUrlsMixin

    class Plain(RedisSpider):
        name = "plain"
        redis_encoding = "utf-8"

    class Managed(FreshStartUrlsMixin, Plain):
        name = "managed"

    data = b'{"url": "http://127.0.0.1/a", "meta": {"k": 1}}'
    assert Plain().make_request_from_data(data).dont_filter is True  # bypasses freshness
    request = Managed().make_request_from_data(data)
    assert (request.url, request.dont_filter, request.meta["k"]) == (
        "http://127.0.0.1/a",
        False,
        1,
    )
