"""End to end: the example project's spiders crawl the demo site for two cycles (real
``scrapy crawl`` subprocesses); the report's figures are checked against the site's truth."""

from __future__ import annotations

import bisect
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.commands import main
from scrapy_fresh.demo import DemoClock, DemoSite
from scrapy_fresh.demo.driver import SPIDERS, crawl
from scrapy_fresh.demo.model import HOUR
from scrapy_fresh.demo.server import DemoServer

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "example_project"
START = 1_800_000_000.0


def _detected(truth: dict[str, Any]) -> int:
    """GETs answered 200 after a true change since the page's previous GET 200/304."""
    last: dict[str, float] = {}
    found = 0
    for r in sorted(truth["requests"], key=lambda r: r["t"]):
        if r["method"] != "GET" or r["status"] not in (200, 304):
            continue
        path, t = r["path"], r["t"]
        changes = truth["pages"].get(path, {}).get("changes", [])
        if path in last and r["status"] == 200 and any(last[path] < c <= t for c in changes):
            found += 1
        last[path] = t
    return found


@pytest.mark.slow
def test_two_cycles_of_the_example_project_against_the_truth(tmp_path: Path) -> None:
    site = DemoSite(DemoClock(speed=1.0, start=START), seed=3, crawl_delay=0.01, retry_after=1)
    log = tmp_path / "visits.jsonl"
    with DemoServer(site) as server:
        for cycle in (1, 2):
            for spider in SPIDERS:
                run = crawl(
                    PROJECT,
                    spider,
                    server.base_url,
                    {
                        "FRESH_SQLITE_PATH": str(tmp_path / f"{spider}.sqlite"),
                        "FRESH_VISIT_LOG": str(log),
                        "LOG_LEVEL": "INFO",
                    },
                    timeout=300,
                )
                assert run.returncode == 0, run.log[-4000:]
                assert "Traceback" not in run.log, run.log[-4000:]
            if cycle == 1:
                site.clock.advance(12 * HOUR)  # every page is due again (6 h refresh)
        truth = site.truth()
    truth_file = tmp_path / "truth.json"
    truth_file.write_text(json.dumps(truth))
    stores = [a for s in SPIDERS for a in ("--sqlite-path", str(tmp_path / f"{s}.sqlite"))]
    assert (
        main(
            [
                "report",
                "--html",
                str(tmp_path / "r.html"),
                "--json",
                str(tmp_path / "r.json"),
                "--visit-log",
                str(log),
                "--site-truth",
                str(truth_file),
                *stores,
            ]
        )
        == 0
    )
    report = json.loads((tmp_path / "r.json").read_text())
    served = truth["requests"]
    statuses = Counter(str(r["status"]) for r in served)
    # A visit ends with a GET answered 200 or 304, or with a HEAD probe answered 200 that
    # no GET of the page follows (its validators or length did not move).
    by_path: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(served, key=lambda r: r["t"]):
        by_path.setdefault(r["path"], []).append(r)
    head_visits = [
        (r["path"], r["t"])
        for rs in by_path.values()
        for r, after in zip(rs, [*rs[1:], None], strict=True)
        if r["method"] == "HEAD"
        and r["status"] == 200
        and (after is None or after["method"] != "GET" or after["t"] - r["t"] > HOUR)
    ]

    # Every request the site served is in the report, with its status.
    assert report["requests"] == len(served)
    assert report["requests_by_status"] == dict(sorted(statuses.items()))
    assert report["outcomes"]["not_modified"] == statuses["304"] + len(head_visits)
    assert statuses["304"] > 0
    assert report["outcomes"]["gone"] == statuses["404"] + statuses["410"] > 0
    assert report["bytes"] == pytest.approx(sum(r["bytes"] for r in served), rel=0.03)
    assert not any(r["path"].startswith("/private/") for r in served)  # robots.txt obeyed

    # The second cycle's verdict on each article (story, post, doc) is the truth's.
    articles = {
        p for p, page in truth["pages"].items() if page["kind"] in ("story", "post", "doc")
    }
    syncs: dict[str, list[float]] = {}
    for r in served:
        if r["method"] == "GET" and r["status"] in (200, 304):
            syncs.setdefault(r["path"], []).append(r["t"])
    for path, t in head_visits:
        syncs.setdefault(path, []).append(t)
    for times in syncs.values():
        times.sort()
    changed_truly = set()
    for path in articles & syncs.keys():
        times, changes = syncs[path], truth["pages"][path]["changes"]
        assert len(times) == 2, (path, times)  # once per cycle
        if bisect.bisect_right(changes, times[1]) > bisect.bisect_right(changes, times[0]):
            changed_truly.add(path)
    pages = {re.sub(r"^https?://[^/]+", "", p["url"]): p for p in report["pages"]}
    changed_said = {p for p in articles & pages.keys() if pages[p]["changes"]}
    assert changed_truly  # 12 simulated hours: some stories and posts changed
    assert changed_said == changed_truly
    cosmetic = {p for p in articles if truth["pages"][p]["cosmetic"]}
    assert cosmetic & syncs.keys()
    assert not (cosmetic & changed_said - changed_truly)  # footer churn is not a change

    figures = report["truth"]
    assert figures["detected_changes"] == _detected(truth)
    assert figures["judgements"]["false_changed"] == 0
    assert figures["requests"] == len(served)
    assert 0 < figures["freshness"] <= 1
    html = (tmp_path / "r.html").read_text()
    assert html.count("data:image/png;base64,") == 5
