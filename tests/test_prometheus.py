"""Prometheus metrics: the endpoint of a continuous crawl scraped over HTTP, its numbers
checked against the crawl's own stats and store; ``scrapy-fresh status --prometheus``."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.settings import Settings

from scrapy_fresh.config import FreshConfig
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.monitoring import estimated_freshness, stats_samples
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.conftest import wait_for
from tests.redis_helpers import free_port

if TYPE_CHECKING:
    from types import ModuleType

prometheus_client = pytest.importorskip(
    "prometheus_client", reason="the 'prometheus' extra (prometheus-client) is not installed"
)
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402


def parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a text exposition, by (name, sorted labels)."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        return parse(answer.read().decode())


def visits(metrics: dict[Any, float], outcome: str) -> float:
    return metrics.get(("fresh_visits_total", (("outcome", outcome),)), -1.0)


@pytest.mark.slow
def test_endpoint_of_a_continuous_crawl_matches_its_stats(
    mockserver: ModuleType, spawn: Any, tmp_path: Path
) -> None:
    db = tmp_path / "s.sqlite"
    port = free_port()
    with mockserver.MockServer(mockserver.MockSite(count=3, paragraphs=2)) as server:
        urls = [server.url(f"/n/{n}") for n in range(3)]
        crawl = spawn(
            {
                "settings": {
                    "ADDONS": {"scrapy_fresh.Addon": 0},
                    "FRESH_SQLITE_PATH": str(db),
                    "FRESH_MODE": "continuous",
                    "FRESH_PROMETHEUS_PORT": port,
                    "FRESH_CHECK": "conditional",
                },
                "start": [{"url": u, "callback": "parse_noitem"} for u in urls],
            },
            tmp_path,
        )
        seen: dict[Any, float] = {}
        try:

            def settled() -> bool:
                seen.update(scrape(port))
                idle = seen.get(("fresh_pages", (("status", "idle"),)))
                return visits(seen, "new") == 3 and idle == 3.0

            assert wait_for(settled, 20, ignore=(OSError,)), seen
            assert seen[("fresh_due_backlog", ())] == 0.0
            assert seen[("fresh_in_flight", ())] == 0.0
            # one page made due from the shell: fetched again, answered 304
            made = subprocess.run(
                [sys.executable, "-m", "scrapy_fresh.commands", "due", urls[0],
                 "--sqlite-path", str(db)],
                capture_output=True, text=True, cwd=tmp_path, timeout=60, check=True,
            )  # fmt: skip
            assert made.stdout.startswith("due now")

            def revisited() -> bool:
                seen.clear()
                seen.update(scrape(port))
                return visits(seen, "not_modified") + visits(seen, "unchanged") == 1

            assert wait_for(revisited, 15, ignore=(OSError,)), seen
            scraped_at = time.time()
            wait_for(
                lambda: "fresh_estimated_freshness" in {k[0] for k in scrape(port)},
                8,
                ignore=(OSError,),
            )
            last = scrape(port)
        finally:
            crawl.process.send_signal(signal.SIGINT)
        result = crawl.finish(timeout=30)
    stats = result.stats
    for stat, outcome in (("fresh/new", "new"), ("fresh/not_modified", "not_modified"),
                          ("fresh/unchanged", "unchanged"), ("fresh/changed", "changed"),
                          ("fresh/errors", "error")):  # fmt: skip
        assert visits(last, outcome) == stats.get(stat, 0), outcome
    assert last[("fresh_requests_new_total", ())] == stats["fresh/requests/new"] == 3
    assert last[("fresh_requests_refresh_total", ())] == stats["fresh/requests/refresh"] == 1
    judged = sum(
        stats.get(s, 0) for s in ("fresh/changed", "fresh/unchanged", "fresh/not_modified")
    )
    assert last[("fresh_not_modified_share", ())] == stats.get("fresh/not_modified", 0) / judged
    with SQLiteStore(db) as store:
        records = list(store.iterate())
    assert last[("fresh_pages", (("status", "idle"),))] == len(records) == 3
    freshness = last[("fresh_estimated_freshness", ())]
    assert freshness == pytest.approx(estimated_freshness(records, scraped_at), abs=0.01)
    assert 0.0 < freshness <= 1.0


def test_status_prometheus_prints_the_stores_gauges(tmp_path: Path, known: Any) -> None:
    db = tmp_path / "s.sqlite"
    now = 1_000_000.0
    with SQLiteStore(db) as store:
        store.put_many(
            [
                known(
                    "http://a.example/1",
                    last_crawl=now - 3600,
                    next_due=now - 1,
                    change_rate=1 / 3600,
                    visits=4,
                ),
                known(
                    "http://a.example/2",
                    last_crawl=now - 10,
                    next_due=now + 99,
                    visits=2,
                    change_rate=0.0,
                ),
            ]
        )
        store.block_host("b.example", now)
    out = subprocess.run(
        [sys.executable, "-m", "scrapy_fresh.commands", "status", "--prometheus",
         "--now", str(now), "--sqlite-path", str(db)],
        capture_output=True, text=True, cwd=tmp_path, timeout=60, check=True,
    ).stdout  # fmt: skip
    metrics = parse(out)
    assert metrics[("fresh_pages", (("status", "idle"),))] == 2.0
    assert metrics[("fresh_due_backlog", ())] == 1.0
    assert metrics[("fresh_in_flight", ())] == 0.0
    assert metrics[("fresh_blocked_hosts", ())] == 1.0
    # e^-1 for the page that changes hourly, visited an hour ago; 1 for the other
    assert metrics[("fresh_estimated_freshness", ())] == pytest.approx((0.36788 + 1) / 2, 1e-4)


def test_stats_samples_name_every_fresh_stat() -> None:
    samples = stats_samples(
        {"fresh/changed": 2, "fresh/not_modified": 6, "fresh/unchanged": 0,
         "fresh/requests/blocked_host": 4, "downloader/request_count": 9,
         "fresh/providers/level/smart": 1, "fresh/weird": "text"}
    )  # fmt: skip
    by_name = {(s.name, s.labels): s for s in samples}
    assert by_name[("fresh_visits", (("outcome", "changed"),))].value == 2
    assert by_name[("fresh_visits", (("outcome", "error"),))].value == 0
    assert by_name[("fresh_not_modified_share", ())].value == 0.75
    assert by_name[("fresh_requests_blocked_host", ())].kind == "counter"
    assert ("fresh_providers_level_smart", ()) in by_name
    assert not any(n.startswith("downloader") or n == "fresh_weird" for n, _ in by_name)


def test_the_endpoint_is_for_continuous_mode() -> None:
    with pytest.raises(ConfigError, match=r"FRESH_PROMETHEUS_PORT \(9100\) serves continuous"):
        FreshConfig.from_settings(Settings({"FRESH_PROMETHEUS_PORT": 9100}))
    with pytest.raises(ConfigError, match=r"FRESH_PROMETHEUS_PORT .* must be at most 65535"):
        FreshConfig.from_settings(
            Settings({"FRESH_PROMETHEUS_PORT": 70000, "FRESH_MODE": "continuous"})
        )
