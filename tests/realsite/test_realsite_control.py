"""The operator's controls on a real site nobody here wrote: the Python 3.11 documentation
(Debian's python3.11-doc) served by nginx, crawled by a plain link-following spider with
the add-on, cycle after cycle on the test clock. nginx's own access log is the proof of
what was fetched; plain Scrapy on the same site says what there is to reach.

* ``FRESH_SCHEDULE_RULES``: the library reference every day, "What's new" at most
  monthly, the rest on the default week;
* ``scrapy-fresh due`` makes pages due whatever the rules say; ``scrapy-fresh status
  --prometheus`` counts what the store holds.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from tests.nginx_support import Nginx, copy_python_docs
from tests.realsite_support import RealCrawl, got, html_path, run_crawl

pytestmark = [
    pytest.mark.realsite,
    pytest.mark.usefixtures("nginx_available", "python_docs_available"),
]

DAY = 86400.0
RULES = [{"match": "/library/", "every": "1d"}, {"match": "/whatsnew/", "min": "30d"}]


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy_fresh.commands", *argv],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


@pytest.fixture(scope="module")
def control(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("control")
    copy_python_docs(work / "site")
    db = work / "state.sqlite"
    out: dict[str, Any] = {"db": db}
    with Nginx(work / "site", work / "nginx") as server:
        start = [server.url("/index.html")]
        plain = run_crawl({"spider": "links", "start": start, "settings": {}}, work / "p")
        plain.check()
        out["plain"] = set(got(server.new_requests()))
        settings = {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_SQLITE_PATH": str(db),
            "FRESH_DEFAULT_REFRESH_SECS": 7 * DAY,
            "FRESH_SCHEDULE_RULES": RULES,
            "FRESH_CYCLE_LOOKAHEAD_SECS": 0,
        }
        config = {"spider": "links", "start": start, "settings": settings}

        def cycle(name: str, days: float) -> tuple[RealCrawl, list[Any]]:
            crawl = run_crawl({**config, "clock_offset": days * DAY}, work / name)
            crawl.check()
            return crawl, server.new_requests()

        out["first"] = cycle("c1", 0)
        out["second"] = cycle("c2", 1.05)  # a day later: the library is due, not the rest
        made = cli("due", "--match", "/whatsnew/", "--sqlite-path", str(db))
        assert made.returncode == 0, made.stderr
        out["made_due"] = made.stdout
        out["third"] = cycle("c3", 1.1)
        out["prometheus"] = cli("status", "--prometheus", "--sqlite-path", str(db))
    return out


def fetched(logged: list[Any]) -> set[str]:
    """Paths requested (a 200 or a 304: the conditional check counts as a visit)."""
    return {html_path(r.path) for r in logged if r.status in (200, 304)}


def test_first_cycle_reaches_what_plain_scrapy_reaches(control: dict[str, Any]) -> None:
    assert len(control["plain"]) > 400
    assert fetched(control["first"][1]) == control["plain"]


def test_rules_bring_the_library_back_daily_and_hold_whats_new(control: dict[str, Any]) -> None:
    plain = control["plain"]
    library = {p for p in plain if p.startswith("/library/")}
    whatsnew = {p for p in plain if p.startswith("/whatsnew/")}
    assert len(library) > 200
    assert whatsnew
    second = fetched(control["second"][1])
    assert library <= second  # every library page, checked again after a day
    assert not second & whatsnew
    others = second - library - {"/index.html"}  # the start page goes out every run
    assert others == set(), sorted(others)[:10]
    assert all(r.status == 304 for r in control["second"][1] if r.path != "/index.html")


def test_due_command_fetches_what_the_rules_would_hold(control: dict[str, Any]) -> None:
    whatsnew = {p for p in control["plain"] if p.startswith("/whatsnew/")}
    assert control["made_due"].count("\n") >= len(whatsnew)
    third = fetched(control["third"][1])
    assert whatsnew <= third  # made due now: the 30-day minimum does not hold them back
    assert not {p for p in third if p.startswith("/library/")}  # checked 1.2 h ago


def test_prometheus_counts_the_store(control: dict[str, Any]) -> None:
    done = control["prometheus"]
    assert done.returncode == 0, done.stderr
    samples = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in done.stdout.splitlines()
        if line and not line.startswith("#")
    }
    broken = {html_path(r.path) for r in control["first"][1] if r.status == 404}
    assert broken  # the docs link a page they do not ship (whatsnew/changelog.html)
    pages = sum(v for k, v in samples.items() if k.startswith("fresh_pages{"))
    assert pages == len(control["plain"]) + len(broken)
    assert samples['fresh_pages{status="idle"}'] == len(control["plain"])
    assert samples['fresh_pages{status="gone"}'] == len(broken)  # two 404s: gone
    assert samples["fresh_in_flight"] == 0
