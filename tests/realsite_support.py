"""Helpers of the real-site crawl tests (tests/realsite/): crawls of real spiders, each a
subprocess of tests/realsite_runner.py, and readers of what they left (nginx's access
log, the visit log, the store).
"""

from __future__ import annotations

import email.utils
import json
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tests.conftest import spawn_crawl
from tests.nginx_support import Logged

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy_fresh.store.base import PageState

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "tests" / "realsite_runner.py"

#: A second cycle "a month later": past FRESH_MAX_REFRESH_SECS (30 days), so every
#: record the first cycle left is due, whatever refresh time it was given.
ALL_DUE_OFFSET = 31 * 86400.0


@dataclass
class RealCrawl:
    """What one crawl process left: its items, stats and log."""

    returncode: int | None  # None: killed after its timeout
    items: list[dict[str, Any]]
    stats: dict[str, Any]
    reason: str | None
    log: str
    #: ``gc_seconds`` and ``connections`` of a crawl run with ``measure`` (bench/crawl.py).
    measured: dict[str, float] = field(default_factory=dict)

    def stat(self, name: str) -> int:
        return int(self.stats.get(name, 0))

    def check(self) -> None:
        """Fail unless the crawl ran to its normal end."""
        assert self.returncode is not None, "killed after its timeout:\n" + self.log[-3000:]
        assert self.returncode == 0, self.log[-3000:]
        assert "Traceback" not in self.log, self.log[-3000:]
        assert self.reason == "finished", (self.reason, self.log[-3000:])


@dataclass
class Started:
    process: subprocess.Popen[str]
    output: Path

    def finish(self, timeout: float) -> RealCrawl:
        try:
            out, err = self.process.communicate(timeout=timeout)
            code: int | None = self.process.returncode
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, err = self.process.communicate()
            code = None
        data = json.loads(self.output.read_text()) if self.output.exists() else {}
        measured = {k: data[k] for k in ("gc_seconds", "connections") if k in data}
        return RealCrawl(
            code, data.get("items", []), data.get("stats", {}), data.get("reason"), out + err,
            measured,
        )  # fmt: skip


def start_crawl(config: dict[str, Any], workdir: Path) -> Started:
    """Start one crawl of tests/realsite_runner.py; ``finish()`` waits for it."""
    spawned = spawn_crawl(config, workdir, RUNNER)
    return Started(spawned.process, spawned.output)


def run_crawl(config: dict[str, Any], workdir: Path, timeout: float = 120.0) -> RealCrawl:
    return start_crawl(config, workdir).finish(timeout)


def addon_cycle(
    config: dict[str, Any], work: Path, n: int, extra: dict[str, Any] | None = None
) -> tuple[RealCrawl, dict[str, list[str]]]:
    """Run cycle ``n`` (1, 2...) of the add-on over ``config``'s spider: every record due
    (``n - 1`` times :data:`ALL_DUE_OFFSET` later), the SQLite store ``work/state.sqlite``,
    the visit log ``work/v<n>.jsonl``, more settings in ``extra``. Fail unless it ran to
    its end; return the crawl and its outcomes by path."""
    log = work / f"v{n}.jsonl"
    settings = {"ADDONS": {"scrapy_fresh.Addon": 0}, "FRESH_SQLITE_PATH": str(work / "state.sqlite"),
                "FRESH_VISIT_LOG": str(log), **(extra or {})}  # fmt: skip
    crawl = run_crawl(
        {**config, "clock_offset": ALL_DUE_OFFSET * (n - 1), "settings": settings},
        work / f"c{n}",
    )
    crawl.check()
    return crawl, outcomes_by_path(visits(log))


# -- reading what happened ---------------------------------------------------------------


def html_path(url: str) -> str:
    """A URL's path, without query or fragment: how nginx logs it."""
    return urlsplit(url).path


def got(logged: Iterable[Logged], status: int = 200) -> Counter[str]:
    """How many GETs of each ``.html`` path nginx answered with ``status``."""
    return Counter(
        r.path for r in logged if r.method == "GET" and r.status == status and ".html" in r.path
    )


def html_gets(logged: Iterable[Logged]) -> Counter[str]:
    """How many GETs of each ``.html`` path nginx logged, whatever the answer."""
    return Counter(r.path for r in logged if r.method == "GET" and ".html" in r.path)


def item_paths(crawl: RealCrawl) -> Counter[str]:
    return Counter(html_path(item["url"]) for item in crawl.items)


def visits(log: Path) -> list[dict[str, Any]]:
    """The visit lines of a FRESH_VISIT_LOG file (one per recorded outcome)."""
    if not log.exists():
        return []
    lines = (json.loads(line) for line in log.read_text().splitlines() if line)
    return [line for line in lines if line.get("e") == "visit"]


def outcomes_by_path(lines: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in lines:
        out.setdefault(html_path(line["url"]), []).append(line["outcome"])
    return out


def nginx_validators(file: Path) -> tuple[str, str]:
    """The ``ETag`` and ``Last-Modified`` nginx sends for a static file."""
    st = file.stat()
    mtime = int(st.st_mtime)
    return f'"{mtime:x}-{st.st_size:x}"', email.utils.formatdate(mtime, usegmt=True)


def site_validators(root: Path) -> dict[str, tuple[str, str]]:
    """What nginx sends as (ETag, Last-Modified) for each HTML page under ``root``, by path."""
    return {"/" + str(f.relative_to(root)): nginx_validators(f) for f in root.rglob("*.html")}


def sqlite_records(path: Path) -> list[PageState]:
    from scrapy_fresh.store.sqlite import SQLiteStore

    store = SQLiteStore(path)
    try:
        return list(store.iterate())
    finally:
        store.close()


def redis_records(url: str, prefix: str) -> list[PageState]:
    import redis

    from scrapy_fresh.distributed.store import RedisStore

    client = redis.Redis.from_url(url)
    try:
        return list(RedisStore(client, prefix).iterate())
    finally:
        client.close()


@dataclass
class Cycles:
    """A site crawled by plain Scrapy, then by the add-on twice (all due the second time),
    with some pages edited in between."""

    root: Path  # the site's files
    plain: RealCrawl
    plain_log: list[Logged]
    first: list[RealCrawl]  # one per worker
    first_log: list[Logged]
    first_records: list[PageState]
    edited: list[str]  # paths of the pages edited between the cycles
    #: (ETag, Last-Modified) nginx sent for each page in the first cycle, by path
    first_validators: dict[str, tuple[str, str]] = field(default_factory=dict)
    second: list[RealCrawl] = field(default_factory=list)
    second_log: list[Logged] = field(default_factory=list)
    second_records: list[PageState] = field(default_factory=list)
    visit_logs: list[Path] = field(default_factory=list)
    workers: int = 1  # add-on processes per cycle, each with its own start request
    start: str = "/index.html"  # the start page's path

    def plain_pages(self) -> set[str]:
        return set(got(self.plain_log))


def by_path(records: Iterable[PageState]) -> dict[str, list[PageState]]:
    out: dict[str, list[PageState]] = {}
    for state in records:
        out.setdefault(html_path(state.url), []).append(state)
    return out


def store_settings(backend: str, tmp_path: Path, redis_key: str) -> dict[str, Any]:
    """The add-on on the ``"sqlite"`` store in ``tmp_path`` or the shared ``"redis"`` one
    under ``redis_key`` (tests/redis_helpers.py's server)."""
    from tests.redis_helpers import SHARED_URL

    store = (
        {"FRESH_SQLITE_PATH": str(tmp_path / "state.sqlite")}
        if backend == "sqlite"
        else {"FRESH_STORE": "redis", "REDIS_URL": SHARED_URL, "FRESH_REDIS_KEY": redis_key}
    )
    return {"ADDONS": {"scrapy_fresh.Addon": 0}, **store}
