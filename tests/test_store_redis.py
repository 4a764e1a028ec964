"""The Redis store: the store contract on the real server, plus what is particular to it."""

from __future__ import annotations

import json
import pickle
from typing import TYPE_CHECKING

import pytest
import redis
from scrapy.settings import Settings

from scrapy_fresh.distributed.store import MAX_DOC_ID, RedisStore
from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.store.base import SiteState, StateStore, Status
from tests.redis_helpers import OwnServer, delete_prefix, unique_prefix
from tests.store_contract import StoreContract, full_page, page

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path


class TestRedisStore(StoreContract):
    @pytest.fixture
    def make_store(self, client: redis.Redis) -> Iterator[Callable[[], RedisStore]]:
        stores: list[RedisStore] = []

        def make() -> RedisStore:
            stores.append(RedisStore(client, unique_prefix("contract")))
            return stores[-1]

        yield make
        for store in stores:
            store.close()
            delete_prefix(client, store.prefix)


def test_two_stores_share_one_prefix(client: redis.Redis, prefix: str) -> None:
    one, two = RedisStore(client, prefix), RedisStore(client, prefix)
    one.put_many([page(1, next_due=1.0), page(2, next_due=2.0)])
    assert len(two) == 2
    two.mark_in_flight([page(1).key], 5.0)
    assert [s.key for s in one.due(10.0, 10)] == [page(2).key]
    assert one.counts()[Status.IN_FLIGHT] == 1


def test_prefixes_are_separate(client: redis.Redis, prefix: str) -> None:
    one, two = RedisStore(client, prefix + ":a"), RedisStore(client, prefix + ":b")
    one.put(page(1))
    assert len(two) == 0
    assert two.get(page(1).key) is None
    assert all(k.startswith((prefix + ":a:").encode()) for k in client.scan_iter(prefix + "*"))


def test_nothing_is_pickled(client: redis.Redis, prefix: str) -> None:
    store = RedisStore(client, prefix)
    store.put(full_page())
    store.put_site(SiteState("example.com", visits=2))
    raw = client.hget(f"{prefix}:pages", bytes.fromhex(full_page().key))
    assert raw is not None
    header, _, _ = raw.partition(b"|")
    assert header == b"1"  # idle
    body = raw[raw.index(b"{") :]
    data = json.loads(body)  # the record is JSON behind a short text header
    assert data["u"] == full_page().url
    assert data["rq"]["callback"] == "parse_item"
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(raw)
    site = client.hget(f"{prefix}:sites", b"example.com")
    assert site is not None
    assert json.loads(site)["visits"] == 2


def test_doc_ids_beyond_2_53_are_refused(client: redis.Redis, prefix: str) -> None:
    store = RedisStore(client, prefix)
    store.put(page(1, doc_id=MAX_DOC_ID))
    with pytest.raises(ValueError, match=r"2\*\*53"):
        store.put(page(2, doc_id=MAX_DOC_ID + 1))
    assert len(store) == 1


def test_big_put_is_split_in_atomic_chunks(
    client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scrapy_fresh.distributed.store as module

    monkeypatch.setattr(module, "WRITE_CHUNK", 7)
    store = RedisStore(client, prefix)
    store.put_many(page(n) for n in range(30))
    assert len(store) == 30
    assert sorted(s.doc_id for s in store.iterate()) == list(range(1, 31))


def test_release_works_through_many_leases(
    client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scrapy_fresh.distributed.store as module

    monkeypatch.setattr(module, "READ_CHUNK", 10)
    store = RedisStore(client, prefix)
    store.put_many(page(n) for n in range(55))
    store.mark_in_flight([page(n).key for n in range(55)], float(1))
    assert store.release_in_flight(older_than=2.0) == 55
    assert store.counts()[Status.QUEUED] == 55


def test_decoding_client_is_refused(prefix: str) -> None:
    decoding = redis.Redis(host="127.0.0.1", port=6379, decode_responses=True)
    with pytest.raises(ValueError, match="decode_responses"):
        RedisStore(decoding, prefix)


def test_from_settings_uses_scrapy_redis_settings(client: redis.Redis, prefix: str) -> None:
    settings = Settings(
        {
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "REDIS_PARAMS": {"socket_timeout": 5},
            "REDIS_DECODE_RESPONSES": True,  # overridden: the store reads bytes
        }
    )
    store = RedisStore.from_settings(settings, prefix)
    assert isinstance(store, StateStore)
    store.put(page(1))
    assert client.hexists(f"{prefix}:pages", bytes.fromhex(page(1).key))
    assert store.client.get_connection_kwargs()["socket_timeout"] == 5
    assert store.client.get_retry().get_retries() == 1  # the crawl backs off itself
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.get(page(1).key)


def test_unreachable_server_is_a_store_error(prefix: str) -> None:
    settings = Settings({"REDIS_URL": "redis://127.0.0.1:1/0", "REDIS_PARAMS": {}})
    store = RedisStore.from_settings(settings, prefix)
    with pytest.raises(StoreError, match=r"127\.0\.0\.1:1 failed to put records"):
        store.put(page(1))
    store.close()


def test_auth_through_the_url(tmp_path: Path) -> None:
    server = OwnServer(tmp_path, "--requirepass", "s3cret", "--appendonly", "no")
    server.start()
    try:
        bad = RedisStore.from_settings(
            Settings({"REDIS_URL": f"redis://127.0.0.1:{server.port}/0"}), "p"
        )
        with pytest.raises(StoreError, match=r"(?i)auth"):
            bad.put(page(1))
        bad.close()
        good = RedisStore.from_settings(
            Settings({"REDIS_URL": f"redis://:s3cret@127.0.0.1:{server.port}/0"}), "p"
        )
        good.put(page(1))
        assert len(good) == 1
        good.close()
    finally:
        server.stop()


def test_repr(client: redis.Redis, prefix: str) -> None:
    store = RedisStore(client, prefix)
    assert repr(store) == f"<RedisStore {prefix!r} at 127.0.0.1:6379 open>"
    store.close()
    assert "closed" in repr(store)
