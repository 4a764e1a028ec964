"""Benchmark: the Redis frontier against scrapy-redis's own PriorityQueue, in one run.

Workload (the same for both): ``--requests`` GET requests (default 50,000) over
``--hosts`` hosts (default 100), URLs like
``http://host{i % H}.example/page/{i}?ref=listing&lang=en&sort=recent``. Every
``scrapy.Request`` is built inside the timed loop; both sides end with ``Request``
objects again when they dequeue.

* **scrapy-redis** -- what ``scrapy_redis.scheduler.Scheduler`` does per request:
  ``RFPDupeFilter.request_seen()`` (SADD of the fingerprint) then
  ``PriorityQueue.push()`` (the request dict pickled, ZADD) on enqueue;
  ``PriorityQueue.pop()`` (MULTI ZRANGE + ZREMRANGEBYRANK, unpickle, ``Request``) on
  dequeue. One request per round trip, as the scheduler calls them.
* **fresh** -- each request becomes a record (``url_key``, ``url_host``,
  ``request_info``) and goes in with :meth:`RedisFrontier.add` in batches of
  ``--batch`` (default 500); dequeue is :meth:`RedisFrontier.pop` of ``--batch`` URLs
  (due-time promotion, per-host politeness, priority, leases) and
  ``rebuild_request()``. ``fresh+commit`` also commits each visit
  (:meth:`RedisFrontier.commit_visits`: record, next due time, site, outcome, the
  lease checked, the sites by compare-and-set) -- work scrapy-redis does not do at all.

Throughput is ``requests / (enqueue seconds + dequeue seconds)``; with several workers
(processes, ``--workers 1,2,4``) each enqueues its share, all start dequeuing together
from the shared queue, and the wall time of each phase is the slowest worker's.

Memory per URL is Redis's ``used_memory`` growth over the enqueue of one worker,
divided by the requests queued: for scrapy-redis the queue (and the queue plus its
dupefilter set, which it needs to not fetch a URL twice); for fresh, the store and the
frontier after the enqueue (records, due-time, doc-id indexes), and again once every
URL is promoted into its host's ready queue.

The benchmark starts its own redis-server (no persistence) on a free port in a
temporary directory, so that nothing else runs against it. The goal (the issue):
fresh >= 2x scrapy-redis's throughput and <= 1x its bytes per URL.

``--sites`` measures instead how a visit's site aggregates are written when several
workers visit the pages of the same hosts at once (``--site-workers`` processes,
``--site-visits`` visits each, over 1 host -- every commit contends -- and over 100
hosts). Each worker first takes its URLs, then all commit their visits together, one
at a time as a crawl does, each a judged visit (changed or unchanged):

* ``racy`` -- what the crawl did before: read the site, ``record_visit``, ``put`` the
  record, ``put_site`` the site (3 round trips, no lease check, last writer wins);
* ``cas`` -- :meth:`RedisFrontier.commit_visit`: one COMMIT script that checks the
  lease and writes the site only if it is still the value this worker last saw (the
  previous commit returned it), else the visit is done again on the current site the
  script returned; ``cas-read`` reads the site (HMGET) before every visit instead;
* ``watch`` -- optimistic WATCH/MULTI: WATCH the sites hash, HGET, ``record_visit``,
  MULTI + COMMIT (record) + HSET (site) + EXEC, again on a ``WatchError`` (a WATCH
  covers a whole key: every site of the crawl is in one hash, so visits to other hosts
  conflict too);
* ``lua`` -- the site maths done server-side: the decayed p_c counter and the
  log-space refresh average of ``record_visit`` rewritten in Lua inside the commit
  script (one round trip, no conflicts; a second implementation of the policy maths,
  and Lua's cjson keeps 14 digits of every float).

It reports visits per second (the slowest worker's wall time), the site visits that
were lost (counted minus committed), retries per visit and the Redis server's CPU per
visit.

Usage::

    python bench/redis_frontier.py                       # 50,000 requests, 1/2/4 workers
    python bench/redis_frontier.py --requests 10000 --workers 1
    python bench/redis_frontier.py --sites               # site aggregates, 4 workers

Prints machine info and markdown tables on stdout.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL_SPEED = 2.0
GOAL_BYTES = 1.0
PREFIX = "bench"


def url(i: int, hosts: int) -> str:
    return f"http://host{i % hosts}.example/page/{i}?ref=listing&lang=en&sort=recent"


def _spider() -> Any:
    from scrapy import Spider

    class BenchSpider(Spider):
        name = "bench"

        def parse(self, response: Any) -> Any:
            return []

    return BenchSpider()


def _client(port: int) -> Any:
    import redis

    return redis.Redis(host="127.0.0.1", port=port)


# -- scrapy-redis --------------------------------------------------------------------------


class ScrapyRedis:
    def __init__(self, port: int, spider: Any) -> None:
        from scrapy_redis.dupefilter import RFPDupeFilter
        from scrapy_redis.queue import PriorityQueue

        self.server = _client(port)
        self.queue = PriorityQueue(self.server, spider, f"{PREFIX}:%(spider)s:requests")
        self.dupefilter = RFPDupeFilter(self.server, f"{PREFIX}:bench:dupefilter")

    def enqueue(self, urls: list[str], batch: int) -> int:
        from scrapy import Request

        accepted = 0
        for u in urls:
            request = Request(u)
            if not self.dupefilter.request_seen(request):
                self.queue.push(request)
                accepted += 1
        return accepted

    def dequeue(self, batch: int, commit: bool) -> int:
        out = 0
        while self.queue.pop() is not None:
            out += 1
        return out


# -- scrapy_fresh ---------------------------------------------------------------------------


class Fresh:
    def __init__(self, port: int, spider: Any) -> None:
        from scrapy_fresh.distributed.frontier import RedisFrontier, due_priority
        from scrapy_fresh.distributed.store import RedisStore

        self.spider = spider
        self.store = RedisStore(_client(port), f"{PREFIX}:fresh", priority=due_priority())
        self.frontier = RedisFrontier(self.store, lease_secs=3600.0, promote_batch=5000)

    def enqueue(self, urls: list[str], batch: int) -> int:
        from scrapy import Request

        from scrapy_fresh.crawl.requestinfo import request_info
        from scrapy_fresh.keys import url_host, url_key
        from scrapy_fresh.store.base import PageState

        now = time.time()
        accepted = 0
        pending: list[PageState] = []
        for u in urls:
            request = Request(u)
            pending.append(
                PageState(
                    key=url_key(request.url, request.method, request.body),
                    url=request.url,
                    host=url_host(request.url),
                    first_seen=now,
                    next_due=now,
                    request=request_info(request, self.spider),
                )
            )
            if len(pending) >= batch:
                accepted += len(self.frontier.add(pending))
                pending = []
        if pending:
            accepted += len(self.frontier.add(pending))
        return accepted

    def dequeue(self, batch: int, commit: bool) -> int:
        from scrapy_fresh.crawl.requestinfo import rebuild_request
        from scrapy_fresh.distributed.frontier import Visit
        from scrapy_fresh.frontier.revisit import record_visit
        from scrapy_fresh.outcome import Outcome

        out = 0
        policy = _policy()
        while True:
            now = time.time()
            got = self.frontier.pop(now, batch)
            if not got.leased:
                if got.next_time is None or got.next_time > now + 1.0:
                    return out
                continue
            for leased in got.leased:
                rebuild_request(leased.state.request, leased.state.url, self.spider)
            out += len(got.leased)
            if commit:

                def apply(state: Any, site: Any, now: float = now) -> None:
                    record_visit(state, Outcome.NEW, now, policy, site)

                self.frontier.commit_visits(
                    [Visit(leased, Outcome.NEW, apply) for leased in got.leased]
                )


def _policy() -> Any:
    from scrapy_fresh.frontier.revisit import RevisitPolicy

    return RevisitPolicy()


# -- site aggregates under concurrent visits (--sites) ------------------------------------

#: The site maths of ``record_visit`` (``_update_site``) in Lua, inside a commit script:
#: the "server-side increments" design, for comparison only.
LUA_SITE_COMMIT = r"""
local key, token = ARGV[2], ARGV[3]
local old = redis.call('HGET', K_PAGES, key)
if not old then return 0 end
local r = parse(old)
if r.s ~= '2' or r.ifs ~= token then return -1 end
unindex(key, r)
local nr = {s = ARGV[4], f = ARGV[5], d = r.d, nd = ARGV[6], ifs = ARGV[7], pr = ARGV[8],
            host = ARGV[9], body = ARGV[10]}
redis.call('HSET', K_PAGES, key, build(nr))
index(key, nr)
redis.call('HINCRBY', P .. ':outcomes', ARGV[12], 1)
local host = ARGV[11]
local raw = redis.call('HGET', P .. ':sites', host)
local s
if raw then s = cjson.decode(raw) else
  s = {host = host, visits = 0, changes = 0, p_c = 0, refresh_secs = cjson.null,
       updated_at = 0, checks = {}}
end
local ch, page_refresh, now = tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15])
local d, wt = tonumber(ARGV[16]), tonumber(ARGV[17])
local w
if d >= 1 then w = s.visits else w = (1 - d ^ s.visits) / (1 - d) end
local c = math.min(w, math.max(0, s.p_c) * w)
w = w * d + 1
c = math.min(w, c * d + ch)
s.visits = s.visits + 1
s.changes = s.changes + ch
s.p_c = math.min(1, c / w)
if s.refresh_secs == cjson.null then s.refresh_secs = page_refresh else
  s.refresh_secs = math.exp((1 - wt) * math.log(s.refresh_secs) + wt * math.log(page_refresh))
end
s.updated_at = now
redis.call('HSET', P .. ':sites', host, cjson.encode(s))
return 1
"""


def site_url(i: int, hosts: int) -> str:
    return f"http://site{i % hosts}.example/page/{i}"


def site_setup(port: int, prefix: str, total: int, hosts: int) -> None:
    """``total`` pages visited once before, due now, over ``hosts`` hosts."""
    from scrapy_fresh.distributed.frontier import RedisFrontier, due_priority
    from scrapy_fresh.distributed.store import RedisStore
    from scrapy_fresh.keys import url_key
    from scrapy_fresh.store.base import PageState, Status

    store = RedisStore(_client(port), prefix, priority=due_priority())
    frontier = RedisFrontier(store)
    now = time.time()
    states = []
    for i in range(total):
        u = site_url(i, hosts)
        states.append(PageState(
            key=url_key(u), url=u, host=f"site{i % hosts}.example", status=Status.IDLE,
            first_seen=now - 7200, last_crawl=now - 3600, next_due=now - 1, visits=1,
            fingerprint=1, refresh_secs=3600.0,
        ))  # fmt: skip
    for start in range(0, total, 1000):
        frontier.add(states[start : start + 1000])
    store.client.close()


def site_worker(kind: str, port: int, prefix: str, visits: int, barrier: Any, out: Any) -> None:
    import copy

    import redis

    from scrapy_fresh.distributed import _lua as lua
    from scrapy_fresh.distributed.frontier import RedisFrontier, due_priority
    from scrapy_fresh.distributed.store import RedisStore, decode_site, encode_record, encode_site
    from scrapy_fresh.frontier.revisit import record_visit
    from scrapy_fresh.outcome import Outcome
    from scrapy_fresh.store.base import SiteState

    client = _client(port)
    store = RedisStore(client, prefix, priority=due_priority())
    frontier = RedisFrontier(store, lease_secs=3600.0)
    policy = _policy()
    taken: list[Any] = []
    while len(taken) < visits:
        got = frontier.pop(time.time(), visits - len(taken)).leased
        if not got:
            break
        taken.extend(got)
    commit_sha = client.script_load(lua.COMMIT)
    lua_commit = client.register_script(lua._PRELUDE + LUA_SITE_COMMIT)
    k_sites = f"{prefix}:sites"
    retries = most = 0
    barrier.wait()
    t0 = time.perf_counter()
    for leased in taken:
        now = time.time()
        outcome = Outcome.CHANGED if int(leased.key[:4], 16) % 3 == 0 else Outcome.UNCHANGED
        state, host = leased.state, leased.state.host
        if kind == "racy":
            site = store.get_site(host) or SiteState(host)
            record_visit(state, outcome, now, policy, site)
            store.put(state)
            store.put_site(site)
        elif kind in ("cas", "cas-read"):
            if kind == "cas-read":
                frontier._site_values.clear()  # read the site before every visit
            before = frontier.site_retries
            frontier.visit(leased, outcome, now, policy)
            most = max(most, frontier.site_retries - before)
        elif kind == "watch":
            tries = 0
            with client.pipeline() as pipe:
                while True:
                    try:
                        pipe.watch(k_sites)
                        site = decode_site(pipe.hget(k_sites, host)) or SiteState(host)
                        record = copy.copy(state)
                        record_visit(record, outcome, now, policy, site)
                        row = encode_record(record, store.priority(record))
                        pipe.multi()
                        pipe.evalsha(commit_sha, 0, prefix, row[0], leased.token, *row[1:3],
                                     *row[4:], host, "-", b"", outcome.value)  # fmt: skip
                        pipe.hset(k_sites, host, encode_site(site))
                        pipe.execute()
                        break
                    except redis.WatchError:
                        retries += 1
                        tries += 1
                most = max(most, tries)
        else:  # lua
            record_visit(state, outcome, now, policy, None)
            row = encode_record(state, store.priority(state))
            lua_commit(args=[
                prefix, row[0], leased.token, *row[1:3], *row[4:], host, outcome.value,
                int(outcome is Outcome.CHANGED), repr(state.refresh_secs), repr(now),
                repr(policy.decay), repr(policy.site_weight),
            ])  # fmt: skip
    t1 = time.perf_counter()
    if kind.startswith("cas"):
        retries = frontier.site_retries
    out.put({"visits": len(taken), "secs": t1 - t0, "retries": retries, "most": most})


def run_sites(kind: str, port: int, workers: int, visits: int, hosts: int) -> dict[str, Any]:
    from scrapy_fresh.distributed.store import RedisStore

    client = _client(port)
    client.flushall()
    prefix = f"{PREFIX}:sites"
    site_setup(port, prefix, workers * visits, hosts)
    cpu0 = _server_cpu(client)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(workers)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=site_worker, args=(kind, port, prefix, visits, barrier, out))
        for _ in range(workers)
    ]
    for proc in procs:
        proc.start()
    results = [out.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join()
    cpu = _server_cpu(client) - cpu0
    done = sum(r["visits"] for r in results)
    counted = sum(s.visits for s in RedisStore(client, prefix).sites())
    client.flushall()
    client.close()
    return {
        "kind": kind, "hosts": hosts, "visits": done,
        "per_s": done / max(r["secs"] for r in results),
        "lost": done - counted,
        "retries": sum(r["retries"] for r in results) / done,
        "most": max(r["most"] for r in results),
        "server_us": cpu / done * 1e6,
    }  # fmt: skip


SITE_KINDS = ("racy", "cas-read", "cas", "watch", "lua")


def sites_report(
    port: int, workers: int, visits: int, hosts_list: list[int], kinds: list[str]
) -> None:
    print(f"# site aggregates: {workers} workers x {visits} judged visits, committed one "
          "at a time\n")  # fmt: skip
    print("| hosts | design | visits/s | site visits lost | retries per visit (most) | "
          "Redis CPU µs per visit |\n|---|---|---|---|---|---|")  # fmt: skip
    for hosts in hosts_list:
        for kind in kinds:
            r = run_sites(kind, port, workers, visits, hosts)
            print(f"| {hosts} | {kind} | {r['per_s']:,.0f} | {r['lost']} | "
                  f"{r['retries']:.2f} ({r['most']}) | {r['server_us']:.0f} |")  # fmt: skip
            sys.stdout.flush()


# -- record writes outside a visit under concurrent visits (--records) ------------------


def record_worker(kind: str, port: int, prefix: str, ops: int, seed: int, barrier: Any,
                  out: Any) -> None:  # fmt: skip
    """Half the operations visit a page (pop, commit: visits + 1), half write a provider
    signal into a random page (read it, add a past update of its own, write it back:
    ``racy`` with a plain ``put_many``, ``cas`` through the crawl's store)."""
    import random as rnd

    from scrapy_fresh.distributed.frontier import RedisFrontier, due_priority
    from scrapy_fresh.distributed.shared import OutageSafeStore
    from scrapy_fresh.distributed.store import RedisStore
    from scrapy_fresh.outcome import Outcome
    from scrapy_fresh.store.base import Status

    rng = rnd.Random(seed)
    store = RedisStore(_client(port), prefix, priority=due_priority())
    crawl = OutageSafeStore(RedisStore(_client(port), prefix, priority=due_priority()))
    frontier = RedisFrontier(store, lease_secs=1e9)
    keys = [k for k, _ in store.client.hscan_iter(f"{prefix}:pages")]
    commits = signals = 0
    barrier.wait()
    t0 = time.perf_counter()
    for i in range(ops):
        if i % 2:
            (leased,) = frontier.pop(time.time() + 1e6, 1).leased or (None,)
            if leased is None:
                continue

            def apply(record: Any, site: Any) -> None:
                record.visits += 1
                record.next_due = 0.0
                record.status, record.in_flight_since = Status.IDLE, None

            commits += frontier.commit_visit(leased, Outcome.UNCHANGED, apply)
        else:
            key = rng.choice(keys).hex()
            state = store.get(key) if kind == "racy" else crawl.get(key)
            if state is None:
                continue
            state.past_updates = sorted([*state.past_updates, seed * 1e6 + i])[-32:]
            (store.put_many if kind == "racy" else crawl.put_many)([state])
            signals += 1
    crawl.replay()
    crawl.flush()
    out.put({"commits": commits, "signals": signals, "secs": time.perf_counter() - t0,
             "retries": crawl.frontier.record_retries, "deferred": len(crawl.deferred)})  # fmt: skip


def run_records(kind: str, port: int, workers: int, ops: int, pages: int) -> dict[str, Any]:
    from scrapy_fresh.distributed.store import RedisStore

    client = _client(port)
    client.flushall()
    prefix = f"{PREFIX}:records"
    site_setup(port, prefix, pages, 10)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(workers)
    out = ctx.Queue()
    procs = [ctx.Process(target=record_worker, args=(kind, port, prefix, ops, w + 1, barrier, out))
             for w in range(workers)]  # fmt: skip
    for proc in procs:
        proc.start()
    results = [out.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join()
    records = list(RedisStore(client, prefix).iterate())
    client.flushall()
    client.close()
    commits = sum(r["commits"] for r in results)
    signals = sum(r["signals"] for r in results)
    return {
        "kind": kind, "commits": commits, "signals": signals,
        "visits_lost": commits - sum(r.visits - 1 for r in records),
        "signals_lost": signals - sum(len(r.past_updates) for r in records),
        "retries": sum(r["retries"] for r in results),
        "per_s": (commits + signals) / max(r["secs"] for r in results),
    }  # fmt: skip


SYSTEMS: dict[str, Any] = {"scrapy-redis": ScrapyRedis, "fresh": Fresh, "fresh+commit": Fresh}


# -- one worker (child process) --------------------------------------------------------


def worker(kind: str, port: int, urls: list[str], batch: int, barrier: Any, out: Any) -> None:
    spider = _spider()
    system = SYSTEMS[kind](port, spider)
    barrier.wait()
    t0 = time.perf_counter()
    accepted = system.enqueue(urls, batch)
    t1 = time.perf_counter()
    barrier.wait()
    t2 = time.perf_counter()
    done = system.dequeue(batch, commit=kind == "fresh+commit")
    t3 = time.perf_counter()
    out.put({"accepted": accepted, "dequeued": done, "enqueue": t1 - t0, "dequeue": t3 - t2})


def run(
    kind: str, port: int, requests: int, hosts: int, workers: int, batch: int
) -> dict[str, Any]:
    client = _client(port)
    client.flushall()
    urls = [url(i, hosts) for i in range(requests)]
    cpu0 = _server_cpu(client)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(workers)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=worker, args=(kind, port, urls[w::workers], batch, barrier, out))
        for w in range(workers)
    ]
    for proc in procs:
        proc.start()
    results: list[dict[str, Any]] = []
    while len(results) < len(procs):
        try:
            results.append(out.get(timeout=5))
        except queue.Empty:  # noqa: PERF203  # a worker that died sends nothing
            if any(p.exitcode not in (None, 0) for p in procs):
                for p in procs:
                    p.kill()
                sys.exit(f"a {kind} worker failed (see its traceback above)")
    for proc in procs:
        proc.join()
    enqueue = max(r["enqueue"] for r in results)
    dequeue = max(r["dequeue"] for r in results)
    dequeued = sum(r["dequeued"] for r in results)
    cpu = _server_cpu(client) - cpu0
    client.flushall()
    client.close()
    return {
        "kind": kind,
        "workers": workers,
        "accepted": sum(r["accepted"] for r in results),
        "dequeued": dequeued,
        "enqueue_s": enqueue,
        "dequeue_s": dequeue,
        "per_s": requests / (enqueue + dequeue),
        "server_us": cpu / requests * 1e6,
    }


def _server_cpu(client: Any) -> float:
    """CPU seconds the Redis server has used (user + system)."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def memory(port: int, requests: int, hosts: int, batch: int) -> dict[str, float]:
    """Bytes per URL in Redis after one worker's enqueue (no timing)."""
    client = _client(port)
    spider = _spider()
    urls = [url(i, hosts) for i in range(requests)]
    result: dict[str, float] = {}

    def used() -> int:
        return int(client.info("memory")["used_memory"])

    client.flushall()
    base = used()
    srd = ScrapyRedis(port, spider)
    from scrapy import Request

    for u in urls:
        srd.queue.push(Request(u))
    result["scrapy-redis queue"] = (used() - base) / requests
    for u in urls:
        srd.dupefilter.request_seen(Request(u))
    result["scrapy-redis queue + dupefilter"] = (used() - base) / requests
    client.flushall()
    base = used()
    fresh = Fresh(port, spider)
    fresh.enqueue(urls, batch)
    result["fresh store + frontier (waiting)"] = (used() - base) / requests
    now = time.time() + 1
    while fresh.frontier.pop(now, 0).next_due_time is not None:
        pass
    result["fresh store + frontier (all promoted, ready)"] = (used() - base) / requests
    client.flushall()
    client.close()
    return result


# -- the server and the report --------------------------------------------------------------


def start_server(directory: str) -> tuple[subprocess.Popen[bytes], int]:
    exe = shutil.which("redis-server")
    if exe is None:
        sys.exit("redis-server is not installed")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [exe, "--bind", "127.0.0.1", "--port", str(port), "--dir", directory, "--save", "",
         "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return proc, port
        except OSError:  # noqa: PERF203  # not listening yet
            time.sleep(0.05)
    proc.terminate()
    sys.exit("redis-server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=50_000)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--memory-requests", type=int, default=20_000)
    parser.add_argument(
        "--sites",
        action="store_true",
        help="measure site aggregate writes under concurrent visits instead",
    )
    parser.add_argument("--site-workers", type=int, default=4)
    parser.add_argument("--site-visits", type=int, default=2000)
    parser.add_argument("--site-hosts", default="1,100")
    parser.add_argument("--site-kinds", default=",".join(SITE_KINDS))
    parser.add_argument(
        "--records",
        action="store_true",
        help="measure provider writes of records under concurrent visits instead",
    )
    parser.add_argument("--record-ops", type=int, default=2000)
    parser.add_argument("--record-pages", type=int, default=200)
    args = parser.parse_args()
    import redis
    import scrapy
    import scrapy_redis

    with tempfile.TemporaryDirectory(prefix="redis-bench-") as tmp:
        proc, port = start_server(tmp)
        try:
            version = _client(port).info("server")["redis_version"]
            print(
                f"# {platform.platform()}, Python {platform.python_version()}, "
                f"{os.cpu_count()} CPUs; redis-server {version}, redis-py {redis.__version__}, "
                f"Scrapy {scrapy.__version__}, scrapy-redis {scrapy_redis.__version__}"
            )
            if args.records:
                print(
                    f"# records: {args.site_workers} workers x {args.record_ops} operations "
                    f"(half visits, half provider signals) on {args.record_pages} pages\n"
                )
                print("| design | ops/s | visits | visits lost | signals | signals lost | "
                      "retries |\n|---|---|---|---|---|---|---|")  # fmt: skip
                for kind in ("racy", "cas"):
                    r = run_records(kind, port, args.site_workers, args.record_ops,
                                    args.record_pages)  # fmt: skip
                    print(f"| {kind} | {r['per_s']:,.0f} | {r['commits']} | "
                          f"{r['visits_lost']} | {r['signals']} | {r['signals_lost']} | "
                          f"{r['retries']} |")  # fmt: skip
                return
            if args.sites:
                sites_report(
                    port, args.site_workers, args.site_visits,
                    [int(h) for h in args.site_hosts.split(",")], args.site_kinds.split(","),
                )  # fmt: skip
                return
            print(f"# {args.requests} requests over {args.hosts} hosts, batch {args.batch}\n")
            rows = []
            for workers in [int(w) for w in args.workers.split(",")]:
                for kind in SYSTEMS:
                    rows.append(run(kind, port, args.requests, args.hosts, workers, args.batch))
                    r = rows[-1]
                    print(
                        f"  {kind} x{workers}: {r['per_s']:.0f} req/s "
                        f"(accepted {r['accepted']}, dequeued {r['dequeued']})",
                        file=sys.stderr,
                    )
            print("| workers | scrapy-redis req/s | fresh req/s | ratio | "
                  "fresh+commit req/s | ratio |")  # fmt: skip
            print("|---|---|---|---|---|---|")
            by = {(r["kind"], r["workers"]): r for r in rows}
            for workers in sorted({r["workers"] for r in rows}):
                base = by[("scrapy-redis", workers)]["per_s"]
                fresh = by[("fresh", workers)]["per_s"]
                commit = by[("fresh+commit", workers)]["per_s"]
                print(f"| {workers} | {base:,.0f} | {fresh:,.0f} | {fresh / base:.2f}x | "
                      f"{commit:,.0f} | {commit / base:.2f}x |")  # fmt: skip
            print("\n| Redis server CPU per request (µs), x1 | scrapy-redis | fresh | "
                  "fresh+commit |\n|---|---|---|---|")  # fmt: skip
            one_worker = [by[(kind, min(r["workers"] for r in rows))] for kind in SYSTEMS]
            print("| enqueue + dequeue | " + " | ".join(
                f"{r['server_us']:.0f}" for r in one_worker) + " |")  # fmt: skip
            mem = memory(port, args.memory_requests, args.hosts, args.batch)
            print(f"\n| Redis bytes per URL ({args.memory_requests} URLs) | bytes | vs queue |")
            print("|---|---|---|")
            queue = mem["scrapy-redis queue"]
            for name, value in mem.items():
                print(f"| {name} | {value:.0f} | {value / queue:.2f}x |")
            one = by[("fresh", 1)]["per_s"] / by[("scrapy-redis", 1)]["per_s"] if (
                ("fresh", 1) in by) else 0.0  # fmt: skip
            # A scrapy-redis crawl keeps each request's fingerprint in its dupefilter set
            # as well as the pickled request in its queue; the fresh store is both.
            waiting = (
                mem["fresh store + frontier (waiting)"] / mem["scrapy-redis queue + dupefilter"]
            )
            print(
                f"\nthroughput x1: {one:.2f}x (goal >= {GOAL_SPEED}x) "
                f"{'PASS' if one >= GOAL_SPEED else 'MISS'}; "
                f"bytes vs queue + dupefilter: {waiting:.2f}x (goal <= {GOAL_BYTES}x) "
                f"{'PASS' if waiting <= GOAL_BYTES else 'MISS'}"
            )
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
