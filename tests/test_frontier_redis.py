"""The Redis frontier on the real server: due times, politeness, priority, streams, leases."""

from __future__ import annotations

import json
import subprocess

import pytest
import redis

from scrapy_fresh.distributed.frontier import RedisFrontier, due_priority
from scrapy_fresh.distributed.store import RedisStore
from scrapy_fresh.frontier.frontier import Stream
from scrapy_fresh.frontier.revisit import RevisitPolicy
from scrapy_fresh.frontier.scoring import priority_score
from scrapy_fresh.keys import url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.base import PageState, Provider, SiteState, Status
from tests.redis_helpers import SHARED_URL


def rec(host: str, n: int, **fields: object) -> PageState:
    url = f"http://{host}/p/{n}"
    return PageState(key=url_key(url), url=url, host=host, **fields)  # type: ignore[arg-type]


def by_access(state: PageState) -> float:
    return float(state.access_count)


@pytest.fixture
def store(client: redis.Redis, prefix: str) -> RedisStore:
    return RedisStore(client, prefix, priority=by_access)


def urls(popped: list) -> list[str]:  # type: ignore[type-arg]
    return [leased.state.url for leased in popped]


def test_only_due_urls_come_out(store: RedisStore) -> None:
    frontier = RedisFrontier(store)
    frontier.add([rec("a", 1, next_due=10.0), rec("b", 1, next_due=20.0)])
    got = frontier.pop(5.0, 10)
    assert got.leased == []
    assert got.next_time == 10.0
    got = frontier.pop(10.0, 10)
    assert urls(got.leased) == ["http://a/p/1"]
    assert got.next_due_time == 20.0
    assert urls(frontier.pop(25.0, 10).leased) == ["http://b/p/1"]
    assert frontier.pop(500.0, 10).leased == []
    assert frontier.pop(500.0, 10).next_time is None  # both leased: nothing to wait for


def test_popped_urls_are_leased_in_the_store(store: RedisStore) -> None:
    frontier = RedisFrontier(store)
    frontier.add([rec("a", 1), rec("b", 1)])
    got = frontier.pop(1.0, 1)
    state = store.get(got.leased[0].key)
    assert state is not None
    assert (state.status, state.in_flight_since) == (Status.IN_FLIGHT, 1.0)
    assert got.leased[0].token.startswith("t")  # a nonce, not the pop time
    assert store.counts()[Status.IN_FLIGHT] == 1
    assert len(store.due(1.0, 10)) == 1


def test_priority_orders_the_urls_of_a_host(store: RedisStore) -> None:
    frontier = RedisFrontier(store)
    frontier.add([rec("a", n, access_count=n % 7) for n in range(20)])
    got = frontier.pop(1.0, 20)
    counts = [leased.state.access_count for leased in got.leased]
    assert counts == sorted(counts, reverse=True)
    assert len(counts) == 20


def test_priority_picks_among_ready_hosts(store: RedisStore) -> None:
    frontier = RedisFrontier(store, default_delay=10.0)
    frontier.add([rec("low", 1, access_count=1), rec("high", 1, access_count=9),
                  rec("mid", 1, access_count=5)])  # fmt: skip
    assert urls(frontier.pop(1.0, 1).leased) == ["http://high/p/1"]
    assert urls(frontier.pop(1.0, 5).leased) == ["http://mid/p/1", "http://low/p/1"]


def test_one_request_per_host_then_the_delay(store: RedisStore) -> None:
    frontier = RedisFrontier(store, default_delay=2.0, hold_secs=30.0)
    frontier.add([rec("a", n) for n in range(3)] + [rec("b", n) for n in range(3)])
    first = frontier.pop(100.0, 10)
    assert sorted(leased.state.host for leased in first.leased) == ["a", "b"]
    assert first.next_host_time == 130.0  # held: their requests are under way
    assert frontier.pop(120.0, 10).leased == []
    frontier.host_done("a", 121.0)  # a answered: its delay counts from its answer
    assert frontier.pop(122.9, 10).leased == []
    assert urls(frontier.pop(123.0, 10).leased) == ["http://a/p/1"]
    assert frontier.ready_at("a") == 125.0  # the delay from the pop, at least
    assert urls(frontier.pop(130.0, 10).leased) == ["http://b/p/1"]  # b's hold ran out


def test_no_delay_no_hold(store: RedisStore) -> None:
    frontier = RedisFrontier(store)
    frontier.add([rec("a", n) for n in range(3)])
    assert len(frontier.pop(1.0, 10).leased) == 3


def test_crawl_delay_and_back_off(store: RedisStore) -> None:
    frontier = RedisFrontier(store, default_delay=1.0, hold_secs=5.0)
    frontier.set_delay("a", 30.0)
    frontier.set_delay("b", 0.5)  # never below the default delay
    assert (frontier.delay("a"), frontier.delay("b"), frontier.delay("c")) == (30.0, 1.0, 1.0)
    frontier.add([rec("a", n) for n in range(2)] + [rec("b", n) for n in range(2)])
    assert len(frontier.pop(0.0, 10).leased) == 2
    frontier.host_done("a", 0.5)
    frontier.host_done("b", 0.5)
    assert urls(frontier.pop(1.5, 10).leased) == ["http://b/p/1"]
    assert frontier.pop(30.4, 10).leased == []
    assert len(frontier.pop(30.5, 10).leased) == 1
    frontier.add([rec("c", 1), rec("c", 2)])
    frontier.back_off("c", 500.0)
    frontier.back_off("c", 400.0)  # never shortens a back-off
    assert frontier.pop(499.0, 10).leased == []
    assert len(frontier.pop(500.0, 10).leased) == 1
    frontier.host_done("c", 501.0)
    frontier.back_off("c", 600.0)
    assert frontier.pop(599.0, 10).leased == []
    assert len(frontier.pop(600.0, 10).leased) == 1


def test_hosts_are_shared_by_workers(client: redis.Redis, prefix: str) -> None:
    one = RedisFrontier(RedisStore(client, prefix), default_delay=5.0)
    two = RedisFrontier(RedisStore(client, prefix), default_delay=5.0)
    one.add([rec("a", n) for n in range(4)])
    assert len(one.pop(10.0, 10).leased) == 1
    assert two.pop(100.0, 10).leased == []  # a's request is under way at worker one
    one.host_done("a", 101.0)
    assert two.pop(105.0, 10).leased == []
    assert len(two.pop(106.0, 10).leased) == 1


def test_a_worker_can_leave_hosts_to_the_others(store: RedisStore) -> None:
    frontier = RedisFrontier(store, default_delay=1.0)
    frontier.add([rec("a", 1), rec("b", 1)])
    assert urls(frontier.pop(0.0, 10, skip_hosts=["a"]).leased) == ["http://b/p/1"]
    assert urls(frontier.pop(0.0, 10).leased) == ["http://a/p/1"]


def test_discovery_and_refresh_streams_are_mixed(store: RedisStore) -> None:
    frontier = RedisFrontier(store, new_share=0.25)
    old = [rec(f"h{n}", 0, last_crawl=0.0, visits=1, status=Status.IDLE) for n in range(40)]
    new = [rec(f"h{n}", 1) for n in range(40)]
    frontier.add(old + new)
    streams = [leased.stream for leased in frontier.pop(1.0, 40).leased]
    assert streams.count(Stream.NEW) == 10
    assert streams.count(Stream.REFRESH) == 30
    assert frontier.served() == {Stream.NEW: 10, Stream.REFRESH: 30}
    rest = frontier.pop(1.0, 100).leased  # one stream alone when the other is empty
    assert len(rest) == 40


def test_commit_records_the_visit_and_the_next_due_time(store: RedisStore) -> None:
    frontier = RedisFrontier(store)
    policy = RevisitPolicy(default_refresh_secs=100.0, min_refresh_secs=10.0)
    frontier.add([rec("a", 1, next_due=0.0, refresh_secs=100.0)])
    (leased,) = frontier.pop(5.0, 1).leased
    leased.state.fingerprint = 42
    done = frontier.visit(leased, Outcome.NEW, 6.0, policy)
    assert done is not None
    stored = store.get(leased.key)
    assert stored is not None
    assert (stored.status, stored.last_crawl, stored.next_due, stored.fingerprint) == (
        Status.IDLE, 6.0, 106.0, 42,
    )  # fmt: skip
    assert store.get_site("a") == SiteState("a")  # the first fetch judges nothing
    assert frontier.outcomes()[Outcome.NEW] == 1
    assert frontier.pop(105.0, 1).leased == []
    (again,) = frontier.pop(106.0, 1).leased
    assert again.stream is Stream.REFRESH
    frontier.visit(again, Outcome.CHANGED, 107.0, policy)
    site = store.get_site("a")
    assert site is not None
    assert (site.visits, site.changes) == (1, 1)
    assert store.counts()[Status.IDLE] == 1


def test_gone_pages_leave_the_frontier_until_their_back_off(store: RedisStore) -> None:
    frontier = RedisFrontier(store)
    policy = RevisitPolicy(gone_confirmations=1, error_backoff_secs=300.0)
    frontier.add([rec("a", 1, last_crawl=0.0, visits=1, status=Status.IDLE)])
    (leased,) = frontier.pop(1.0, 1).leased
    frontier.visit(leased, Outcome.GONE, 1.0, policy)
    assert store.get(leased.key).status is Status.GONE  # type: ignore[union-attr]
    assert frontier.pop(300.0, 10).leased == []
    (again,) = frontier.pop(302.0, 10).leased  # checked again once the back-off passed
    assert again.key == leased.key


def test_expired_leases_come_back_and_late_commits_are_refused(
    client: redis.Redis, prefix: str
) -> None:
    dead = RedisFrontier(RedisStore(client, prefix), lease_secs=60.0)
    alive = RedisFrontier(RedisStore(client, prefix), lease_secs=60.0)
    dead.add([rec("a", 1), rec("b", 1)])
    taken = dead.pop(100.0, 10).leased
    assert len(taken) == 2
    assert alive.pop(159.0, 10).leased == []  # still leased
    back = alive.pop(161.0, 10)
    assert back.reaped == 2
    assert sorted(urls(back.leased)) == sorted(urls(taken))
    policy = RevisitPolicy()
    assert dead.visit(taken[0], Outcome.NEW, 162.0, policy) is None  # lease lost
    mine = {leased.key: leased for leased in back.leased}
    assert alive.visit(mine[taken[0].key], Outcome.NEW, 162.0, policy) is not None
    assert alive.outcomes()[Outcome.NEW] == 1


def test_give_back(store: RedisStore) -> None:
    frontier = RedisFrontier(store)
    frontier.add([rec("a", 1)])
    (leased,) = frontier.pop(1.0, 1).leased
    assert frontier.give_back(leased) is True
    assert frontier.give_back(leased) is False
    assert store.get(leased.key).status is Status.QUEUED  # type: ignore[union-attr]
    assert urls(frontier.pop(2.0, 1).leased) == ["http://a/p/1"]


def test_store_writes_move_urls_in_the_frontier(store: RedisStore) -> None:
    frontier = RedisFrontier(store)
    frontier.add([rec("a", n) for n in range(4)])
    assert frontier.pop(0.0, 0).leased == []  # promotes all four
    store.put(rec("a", 0, next_due=50.0))  # postponed
    store.delete(rec("a", 1).key)
    store.mark_in_flight([rec("a", 2).key], 0.0)  # leased through the store API
    store.put(rec("a", 9, next_due=-5.0))  # written already due
    assert sorted(urls(frontier.pop(1.0, 10).leased)) == ["http://a/p/3", "http://a/p/9"]
    assert store.release_in_flight(older_than=0.5) == 1  # a/2, leased at 0.0
    assert store.release_in_flight(older_than=1.5) == 2  # the two popped at 1.0
    assert len(frontier.pop(2.0, 10).leased) == 3
    assert urls(frontier.pop(50.0, 10).leased) == ["http://a/p/0"]


def test_due_priority_is_the_score_at_due_time() -> None:
    score = due_priority()
    smart = rec("a", 1, provider=Provider.SMART, last_crawl=0.0, next_due=7200.0,
                past_updates=[3600.0], access_count=3)  # fmt: skip
    assert score(smart) == priority_score(smart, 7200.0)
    new = rec("a", 2, request={"priority": 7})
    assert score(new) == 7.0
    assert score(rec("a", 3, next_due=float("inf"))) == 0.0


def test_bad_arguments(store: RedisStore) -> None:
    with pytest.raises(ValueError, match="lease_secs"):
        RedisFrontier(store, lease_secs=0)
    with pytest.raises(ValueError, match="new_share"):
        RedisFrontier(store, new_share=2.0)
    frontier = RedisFrontier(store)
    with pytest.raises(ValueError, match="delay"):
        frontier.set_delay("a", -1.0)


# -- concurrency: several processes pop from one frontier --------------------------------

POPPER = """
import json, sys, time
import redis
from scrapy_fresh.distributed.frontier import RedisFrontier
from scrapy_fresh.distributed.store import RedisStore
prefix, batch = sys.argv[1], int(sys.argv[2])
client = redis.Redis.from_url(sys.argv[3])
frontier = RedisFrontier(RedisStore(client, prefix), lease_secs=3600.0)
client.rpush(prefix + ":test:ready", 1)
client.blpop([prefix + ":test:go"], timeout=60)  # all start together
keys = []
while True:
    got = frontier.pop(1000.0, batch).leased
    if not got:
        break
    keys.extend(leased.key for leased in got)
    time.sleep(0.001)  # a little work per batch, so that the workers interleave
print(json.dumps(keys))
"""


def test_concurrent_poppers_never_get_the_same_url(
    store: RedisStore, python_exe: str, python_env: dict[str, str]
) -> None:
    frontier = RedisFrontier(store)
    states = [rec(f"h{n % 25}", n) for n in range(3000)]
    for start in range(0, len(states), 500):
        frontier.add(states[start : start + 500])
    workers = [
        subprocess.Popen(
            [python_exe, "-c", POPPER, store.prefix, str(batch), SHARED_URL],
            env=python_env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for batch in (1, 7, 50)
    ]
    for _ in workers:
        assert store.client.blpop([store.prefix + ":test:ready"], timeout=60) is not None
    store.client.rpush(store.prefix + ":test:go", 1, 1, 1)
    results = [json.loads(worker.communicate(timeout=120)[0]) for worker in workers]
    every = [key for keys in results for key in keys]
    assert len(every) == len(set(every))  # nobody got a URL twice
    assert set(every) == {s.key for s in states}  # and none was lost
    assert all(results)  # every worker got some
    assert store.counts()[Status.IN_FLIGHT] == 3000


def test_a_cycle_run_waits_for_a_crawl_delay_not_for_a_long_back_off(
    client: redis.Redis, prefix: str
) -> None:
    """SharedFrontier in cycle mode (``max_wait``, FRESH_CYCLE_MAX_WAIT_SECS): a host
    the frontier may contact only later than that keeps no run waiting when a back-off
    says so, but does when its robots.txt Crawl-delay is that long (as the other stores
    wait out a delay); continuous mode (``max_wait`` None) waits for both."""
    from scrapy_fresh.distributed.shared import OutageSafeStore, SharedFrontier

    def shared(max_wait: float | None) -> SharedFrontier:
        safe = OutageSafeStore(RedisStore(client, prefix), outage_wait=0.5)
        return SharedFrontier(
            safe, lease_secs=60.0, default_delay=0.0, new_share=0.2, max_wait=max_wait
        )

    cycle, continuous = shared(10.0), shared(None)
    cycle.frontier.add([rec("slow", n, next_due=0.0) for n in range(3)])
    taken: list[PageState] = []

    def lease(state: PageState, *_: object) -> None:
        taken.append(state)

    cycle.frontier.set_delay("slow", 30.0)  # Crawl-delay: 30
    assert cycle.pull(100.0, lease, by_access, n=1) == 1
    cycle.frontier.host_done("slow", 100.0)  # its next page may go at 130
    assert cycle.pull(102.0, lease, by_access) == 0
    assert (cycle.waiting, cycle.next_time) == (True, 130.0)  # waited for, as elsewhere
    cycle.frontier.set_delay("elsewhere", 600.0)  # another host's delay is not slow's
    cycle.frontier.back_off("slow", 1000.0)  # Retry-After: not before 1000
    assert cycle.pull(104.0, lease, by_access) == 0
    assert (cycle.waiting, cycle.next_time) == (False, None)  # the next run takes them
    assert cycle.give_back([taken[0].key]) == 1  # no lease of another worker to wait for
    assert continuous.pull(106.0, lease, by_access) == 0
    assert (continuous.waiting, continuous.next_time) == (True, 1000.0)
    assert len(taken) == 1
