"""Shared fixtures for the scrapy_fresh test suite."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

if TYPE_CHECKING:  # imported where used, so that a broken module fails its tests only
    from scrapy_fresh.crawl.runtime import FreshRuntime
    from scrapy_fresh.crawl.scheduler import FreshScheduler
    from scrapy_fresh.outcome import Outcome
    from scrapy_fresh.store.base import PageState, Provider, SiteState

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def python_env() -> dict[str, str]:
    """Environment for subprocesses that must import this checkout of scrapy_fresh."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture
def python_exe() -> str:
    return sys.executable


# -- real crawls against local servers (tests/test_crawl_*.py) ---------------------------


def _load_mockserver() -> ModuleType:
    path = ROOT / "tests" / "mockserver.py"
    spec = importlib.util.spec_from_file_location("fresh_mockserver", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def mockserver() -> ModuleType:
    """The tests/mockserver.py module (MockSite, MockServer)."""
    return sys.modules.get("fresh_mockserver") or _load_mockserver()


@dataclass
class CrawlResult:
    returncode: int
    stats: dict[str, Any]
    items: list[dict[str, Any]]
    dropped: int
    reason: str | None
    log: str
    errbacks: list[list[str]] = field(default_factory=list)

    def stat(self, name: str) -> int:
        return int(self.stats.get(name, 0))


@dataclass
class SpawnedCrawl:
    process: subprocess.Popen[str]
    output: Path

    def finish(self, timeout: float = 30.0, *, check: bool = True) -> CrawlResult:
        stdout, stderr = self.process.communicate(timeout=timeout)
        return _result(self.process.returncode, self.output, stdout + stderr, check)


def spawn_crawl(
    config: dict[str, Any], workdir: Path, runner: Path = ROOT / "tests" / "crawl_runner.py"
) -> SpawnedCrawl:
    """Start ``runner`` (tests/crawl_runner.py) with ``config`` in a subprocess; do not wait."""
    workdir.mkdir(parents=True, exist_ok=True)
    n = len(list(workdir.glob("crawl-*.json")))
    config_path = workdir / f"crawl-{n}.json"
    output = workdir / f"result-{n}.json"
    config_path.write_text(json.dumps({**config, "output": str(output)}))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    process = subprocess.Popen(
        [sys.executable, str(runner), str(config_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=workdir,
    )
    return SpawnedCrawl(process, output)


def run_crawl(
    config: dict[str, Any], workdir: Path, *, timeout: float = 60.0, check: bool = True
) -> CrawlResult:
    """Run tests/crawl_runner.py with ``config`` in a subprocess; return what it wrote."""
    spawned = spawn_crawl(config, workdir)
    try:
        return spawned.finish(timeout, check=check)
    finally:
        if spawned.process.poll() is None:
            spawned.process.kill()
            spawned.process.wait()


def _result(returncode: int, output: Path, log: str, check: bool) -> CrawlResult:
    data = json.loads(output.read_text()) if output.exists() else {}
    result = CrawlResult(
        returncode,
        data.get("stats", {}),
        data.get("items", []),
        data.get("dropped", 0),
        data.get("reason"),
        log,
        data.get("errbacks", []),
    )
    if check:
        assert returncode == 0, result.log[-5000:]
        assert output.exists(), result.log[-5000:]
        assert "Traceback" not in result.log, result.log[-5000:]
    return result


@pytest.fixture(scope="session")
def crawl() -> Callable[..., CrawlResult]:
    """Run one real crawl in a subprocess: ``crawl(config, workdir)``."""
    return run_crawl


def sqlite_records_by_path(
    path: Path, hosts: Collection[str] | None = None
) -> dict[str, PageState]:
    """Every record of the SQLite store at ``path`` (of ``hosts`` only, if given), by its
    URL's path (``/v/1``)."""
    from scrapy_fresh.store.sqlite import SQLiteStore

    store = SQLiteStore(path)
    try:
        return {
            "/" + s.url.split("/", 3)[3]: s
            for s in store.iterate()
            if hosts is None or s.host in hosts
        }
    finally:
        store.close()


@pytest.fixture(scope="session")
def records_by_path() -> Callable[[Path], dict[str, PageState]]:
    """``records_by_path(sqlite_path)``: a store's records, by URL path."""
    return sqlite_records_by_path


@pytest.fixture(scope="session")
def spawn() -> Callable[..., SpawnedCrawl]:
    """Start one real crawl in a subprocess: ``spawn(config, workdir).finish()``."""
    return spawn_crawl


# -- FreshScheduler and the middlewares driven directly (memory store, fake clock) -------

#: The fake clock's start.
HARNESS_NOW = 1_000_000.0


class HarnessSpider(Spider):
    name = "harness"

    def parse(self, response: Any) -> Any:
        return []

    def parse_page(self, response: Any) -> Any:
        return []


@dataclass
class Harness:
    scheduler: FreshScheduler
    runtime: FreshRuntime
    clock: list[float]
    crawler: Any

    def stat(self, name: str) -> int:
        return int(self.crawler.stats.get_value(name, 0))

    def drain(self) -> list[Request]:
        out = []
        while (request := self.scheduler.next_request()) is not None:
            out.append(request)
        return out

    def record(self, request: Request, outcome: Outcome | None = None) -> None:
        from scrapy_fresh.outcome import Outcome

        outcome = outcome or Outcome.NOT_MODIFIED
        assert self.runtime.visits.record_outcome(request.meta, outcome) is not None

    def state(self, url: str) -> PageState:
        from scrapy_fresh.keys import url_key

        state = self.runtime.records.lookup(url_key(url))
        assert state is not None
        return state


def item_pipeline(crawler: Any) -> Any:
    """FreshItemPipeline as Scrapy builds it for ``crawler``: None when it is not built
    (FRESH_DROP_UNCHANGED_ITEMS False). Build it before the spider middleware judges."""
    from scrapy.exceptions import NotConfigured

    from scrapy_fresh.crawl.pipelines import FreshItemPipeline

    try:
        return FreshItemPipeline.from_crawler(crawler)
    except NotConfigured:
        return None


def items_passed(pipeline: Any, items: list[Any]) -> list[Any]:
    """The items ``pipeline`` (:func:`item_pipeline`) lets through: all without one."""
    from scrapy.exceptions import DropItem

    if pipeline is None:
        return list(items)
    kept = []
    for item in items:
        with contextlib.suppress(DropItem):
            kept.append(pipeline.process_item(item))
    return kept


def known_record(
    url: str,
    *,
    last_crawl: float,
    next_due: float,
    access_count: int = 0,
    provider: Provider | None = None,
    callback: str = "parse_page",
    first_seen: float | None = None,
    **fields: Any,
) -> PageState:
    """A record fetched before (idle), as a previous run leaves it (first seen 100 s
    before its last crawl unless ``first_seen`` says)."""
    from scrapy_fresh.keys import url_host, url_key
    from scrapy_fresh.store.base import PageState, Provider, Status

    provider = provider or Provider.NORMAL
    return PageState(
        key=url_key(url),
        url=url,
        host=url_host(url),
        status=Status.IDLE,
        provider=provider,
        first_seen=last_crawl - 100 if first_seen is None else first_seen,
        last_crawl=last_crawl,
        next_due=next_due,
        access_count=access_count,
        fingerprint=fields.pop("fingerprint", 1),
        request={"url": url, "callback": callback},
        **fields,
    )


@pytest.fixture(scope="session")
def known() -> Callable[..., PageState]:
    """``known(url, last_crawl=..., next_due=..., **fields)``: a visited record."""
    return known_record


@pytest.fixture
def harness() -> Iterator[Callable[..., Harness]]:
    """``harness(settings, spider=..., records=[...])``: an open FreshScheduler."""
    made: list[Harness] = []

    def make(
        settings: dict[str, Any] | None = None,
        spider: type[Spider] = HarnessSpider,
        records: list[PageState] | None = None,
        sites: list[SiteState] | None = None,
        blocked: list[str] | None = None,
        meta: dict[tuple[str, str], dict[str, Any]] | None = None,
    ) -> Harness:
        from scrapy_fresh.crawl.runtime import FreshRuntime
        from scrapy_fresh.crawl.scheduler import FreshScheduler

        crawler = get_crawler(spider, {"FRESH_STORE": "memory", **(settings or {})})
        crawler.spider = spider.from_crawler(crawler)
        crawler.stats.open_spider()
        runtime = FreshRuntime.of(crawler)
        clock = [HARNESS_NOW]
        runtime.clock = lambda: clock[0]
        if records:
            runtime.store.put_many(records)
        for site in sites or []:
            runtime.store.put_site(site)
        for (namespace, key), value in (meta or {}).items():
            runtime.store.put_meta(namespace, key, value)
        for host in blocked or []:  # blocked before the run opens (scrapy-fresh block)
            runtime.store.block_host(host, HARNESS_NOW - 60)
        scheduler = FreshScheduler.from_crawler(crawler)
        scheduler.open(crawler.spider)
        made.append(h := Harness(scheduler, runtime, clock, crawler))
        return h

    yield make
    for h in made:
        h.scheduler.close("finished")


# -- Redis (a real server: tests/redis_helpers.py) -------------------------------------------


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 bound and never listened on: connections to it are refused."""
    with socket.socket() as closed:
        closed.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        closed.bind(("127.0.0.1", 0))
        yield closed.getsockname()[1]


@pytest.fixture
def client() -> Iterator[Any]:
    """A client of the shared test Redis server."""
    from tests.redis_helpers import shared_client

    c = shared_client()
    yield c
    c.close()


@pytest.fixture
def prefix(client: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """A key prefix of this test alone, deleted afterwards."""
    from tests.redis_helpers import delete_prefix, unique_prefix

    p = unique_prefix(request.module.__name__.rsplit(".", 1)[-1])
    yield p
    delete_prefix(client, p)


def wait_for(
    predicate: Callable[[], Any], timeout: float, *, ignore: tuple[type[Exception], ...] = ()
) -> bool:
    """Poll ``predicate`` every 50 ms until it is true (True) or ``timeout`` seconds pass
    (False); exceptions of the ``ignore`` types count as not yet (a server not listening)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return True
        except ignore:
            pass
        time.sleep(0.05)
    return False
