"""Redis stores written by an earlier version are upgraded when a crawl opens them.

Gone records (404/410) used to be left out of the due set (``P:due``): nothing ever
returned them as due, so a page that came back was missed. Opening the store
(:func:`~scrapy_fresh.distributed.frontier.open_redis_store`) puts them in it, once.
"""

from __future__ import annotations

from typing import Any

import redis
from scrapy.settings import Settings

from scrapy_fresh.distributed.frontier import open_redis_store
from scrapy_fresh.distributed.store import RedisStore
from scrapy_fresh.keys import url_key
from scrapy_fresh.store.base import PageState, Status
from tests.redis_helpers import SHARED_URL

NOW = 1_700_000_000.0


def record(url: str, status: Status, next_due: float) -> PageState:
    return PageState(
        url_key(url), url, "old.test", status=status, next_due=next_due,
        last_crawl=NOW - 86400, visits=3,
    )  # fmt: skip


def as_written_before(client: redis.Redis, prefix: str, keys: list[str]) -> None:
    """What an earlier version left: the gone records out of the due set, no upgrade."""
    for key in keys:
        client.zrem(f"{prefix}:due", bytes.fromhex(key))
    client.delete(f"{prefix}:upgraded")


def open_store(prefix: str) -> RedisStore:
    return open_redis_store(Settings({"REDIS_URL": SHARED_URL}), prefix)


def test_gone_records_of_an_earlier_version_come_due_after_the_upgrade(
    client: redis.Redis, prefix: str
) -> None:
    old = RedisStore(client, prefix)
    gone = [record(f"http://old.test/gone{i}", Status.GONE, NOW + i) for i in range(3)]
    idle = record("http://old.test/idle", Status.IDLE, NOW)
    old.put_many([*gone, idle])
    as_written_before(client, prefix, [s.key for s in gone])
    assert {s.key for s in old.due(NOW + 10, 100)} == {idle.key}  # the failure: never due

    store = open_store(prefix)
    try:
        assert {s.key for s in store.due(NOW + 10, 100)} == {idle.key, *(s.key for s in gone)}
        assert {s.key for s in store.due(NOW + 0.5, 100)} == {idle.key, gone[0].key}
        counts: dict[Any, int] = store.counts()  # the counts were right all along
        assert counts[Status.GONE] == 3
        assert counts[Status.IDLE] == 1
        assert {s.key: s.status for s in store.due(NOW + 10, 100)}[gone[1].key] is Status.GONE
    finally:
        store.close()


def test_the_upgrade_runs_once_and_leaves_indexed_records_alone(
    client: redis.Redis, prefix: str
) -> None:
    old = RedisStore(client, prefix)
    gone = record("http://old.test/gone", Status.GONE, NOW + 5)
    old.put_many([gone])
    as_written_before(client, prefix, [gone.key])
    assert open_store(prefix).upgrade_gone_due() == 0  # opening did it already
    assert client.zscore(f"{prefix}:due", bytes.fromhex(gone.key)) == NOW + 5
    client.zadd(f"{prefix}:due", {bytes.fromhex(gone.key): NOW + 99})  # a newer write's
    client.delete(f"{prefix}:upgraded")
    assert RedisStore(client, prefix).upgrade_gone_due() == 0  # already in: not moved
    assert client.zscore(f"{prefix}:due", bytes.fromhex(gone.key)) == NOW + 99
