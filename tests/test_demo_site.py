"""The demo site (scrapy_fresh.demo): schedules, validators, truth log, the command."""

from __future__ import annotations

import http.client
import json
import math
import subprocess
import sys
import time
import urllib.request
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.demo import DemoClock, DemoSite
from scrapy_fresh.demo.model import DAY, HOUR, NEWS_SLOT_BASE, NEWS_SLOT_SECS
from scrapy_fresh.demo.server import DemoServer
from scrapy_fresh.demo.truth import copy_stats

START = 1_800_000_000.0


def make_site(seed: int = 1, **kwargs: Any) -> DemoSite:
    return DemoSite(DemoClock(speed=1.0, start=START), seed=seed, **kwargs)


def get(
    server: DemoServer, path: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        body = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body
    finally:
        conn.close()


@pytest.fixture
def server() -> Any:
    with DemoServer(make_site()) as srv:
        yield srv


# -- clock -----------------------------------------------------------------------------


def test_clock_runs_at_its_speed_and_advances() -> None:
    ticks = [10.0]
    clock = DemoClock(speed=60, start=START, real_clock=lambda: ticks[0])
    ticks[0] = 12.0
    assert clock.now() == START + 120
    assert clock.advance(3600) == START + 3720


@pytest.mark.parametrize("speed", [0, -1, math.inf, math.nan])
def test_clock_refuses_bad_speed(speed: float) -> None:
    with pytest.raises(ValueError, match="speed"):
        DemoClock(speed=speed)


def test_clock_refuses_going_back() -> None:
    with pytest.raises(ValueError, match="secs"):
        DemoClock().advance(-1)


# -- schedules -------------------------------------------------------------------------


def test_news_changes_only_at_announced_slots() -> None:
    site = make_site()
    times = [
        t
        for p in site.pages.values()
        if p.kind == "story"
        for t in site.changes(p.path, START + 5 * DAY)
    ]
    assert times
    assert all((t - NEWS_SLOT_BASE) % NEWS_SLOT_SECS == 0 for t in times)


def test_poisson_counts_match_rates_over_orders_of_magnitude() -> None:
    site = make_site()
    horizon = START + 60 * DAY
    posts = [p for p in site.pages.values() if p.kind == "post"]
    rates = [p.rate for p in posts]
    assert max(rates) / min(rates) > 100
    expected = sum(p.rate * (horizon - site.history_start) for p in posts)
    observed = sum(len(site.changes(p.path, horizon)) for p in posts)
    assert abs(observed - expected) < 4 * math.sqrt(expected)
    fastest, slowest = posts[0], posts[-1]
    assert len(site.changes(fastest.path, horizon)) > 5 * len(site.changes(slowest.path, horizon))


def test_same_seed_same_history_other_seed_other_history() -> None:
    a, b, c = make_site(1), make_site(1), make_site(2)
    path = "/blog/post-0"
    b.changes("/docs/page-0", START + DAY)  # asking in another order changes nothing
    assert a.changes(path, START + 10 * DAY) == b.changes(path, START + 10 * DAY)
    assert a.changes(path, START + 10 * DAY) != c.changes(path, START + 10 * DAY)


def test_derived_pages_change_with_their_members() -> None:
    site = make_site()
    at = START + 2 * DAY
    members = {t for p in site.pages["/news/"].members for t in site.changes(p, at)}
    assert site.changes("/news/", at) == sorted(members)
    assert site.changes("/docs/", at) == []


# -- HTTP: validators, sections --------------------------------------------------------


def test_etag_page_answers_304_to_its_etag_and_200_after_a_change(server: DemoServer) -> None:
    site = server.site
    status, headers, body = get(server, "/news/story-0")
    assert status == 200
    assert body
    etag = headers["etag"]
    status, headers304, body304 = get(server, "/news/story-0", {"If-None-Match": etag})
    assert status == 304
    assert body304 == b""
    assert headers304["etag"] == etag
    full = site.requests[-2]["bytes"]
    assert site.requests[-1]["bytes"] <= 0.02 * full  # a 304 costs <= 2% of the page
    site.clock.advance(2 * DAY)  # story-0 changes at most slots (p = 0.9)
    assert site.changes("/news/story-0", site.clock.now())[-1] > START
    status, headers, body2 = get(server, "/news/story-0", {"If-None-Match": etag})
    assert status == 200
    assert headers["etag"] != etag
    assert body2 != body


def test_last_modified_page_answers_304_to_if_modified_since(server: DemoServer) -> None:
    status, headers, _ = get(server, "/blog/post-1")
    assert status == 200
    assert "etag" not in headers
    last_modified = headers["last-modified"]
    assert parsedate_to_datetime(last_modified).timestamp() == int(
        server.site.modified("/blog/post-1", server.site.clock.now())
    )
    status, _, body = get(server, "/blog/post-1", {"If-Modified-Since": last_modified})
    assert (status, body) == (304, b"")


def test_pages_without_validators_never_answer_304(server: DemoServer) -> None:
    status, headers, _ = get(server, "/docs/page-1")
    assert status == 200
    assert "etag" not in headers
    assert "last-modified" not in headers
    status, _, _ = get(
        server,
        "/docs/page-1",
        {"If-None-Match": "*", "If-Modified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"},
    )
    assert status == 200


def test_cosmetic_churn_changes_the_footer_only(server: DemoServer) -> None:
    _, _, a = get(server, "/docs/page-2")
    time.sleep(0.01)
    _, _, b = get(server, "/docs/page-2")
    assert a != b
    assert a.split(b"<footer>")[0] == b.split(b"<footer>")[0]


def test_head_has_the_headers_of_get_and_no_body(server: DemoServer) -> None:
    _, get_headers, _ = get(server, "/news/story-3")
    status, headers, body = get(server, "/news/story-3", method="HEAD")
    assert (status, body) == (200, b"")
    assert headers["etag"] == get_headers["etag"]
    assert headers["content-length"] == get_headers["content-length"]
    assert server.site.requests[-1]["body_bytes"] == 0


def test_robots_txt(server: DemoServer) -> None:
    status, _, body = get(server, "/robots.txt")
    lines = body.decode().splitlines()
    assert status == 200
    assert "Disallow: /private/" in lines
    assert "Crawl-delay: 0.05" in lines
    assert f"Sitemap: {server.base_url}/sitemap.xml" in lines


def test_rss_announces_the_schedule_and_dates_the_items(server: DemoServer) -> None:
    site = server.site
    _, headers, body = get(server, "/news/feed.rss")
    text = body.decode()
    assert headers["content-type"].startswith("application/rss+xml")
    for element in (
        "<sy:updatePeriod>hourly</sy:updatePeriod>",
        "<sy:updateFrequency>2</sy:updateFrequency>",
        "<sy:updateBase>2000-01-01T00:00:00+00:00</sy:updateBase>",
        "<ttl>30</ttl>",
    ):
        assert element in text
    pub = text.split("<pubDate>")[1].split("</pubDate>")[0]
    assert parsedate_to_datetime(pub).timestamp() == site.modified(
        "/news/story-0", site.clock.now()
    )


def test_sitemap_and_atom_carry_last_modification_times(server: DemoServer) -> None:
    site = server.site
    _, _, sitemap = get(server, "/sitemap.xml")
    _, _, atom = get(server, "/blog/atom.xml")
    from scrapy_fresh.demo.render import iso_date

    expected = iso_date(site.modified("/blog/post-0", site.clock.now()))
    assert f"/blog/post-0</loc><lastmod>{expected}</lastmod>".encode() in sitemap
    assert f"/blog/post-0</id><updated>{expected}</updated>".encode() in atom


def test_gone_pages_and_their_time(server: DemoServer) -> None:
    assert get(server, "/docs/old-0")[0] == 404
    assert get(server, "/docs/old-1")[0] == 410
    assert get(server, "/docs/old-2")[0] == 200
    server.site.clock.advance(DAY + 1)
    assert get(server, "/docs/old-2")[0] == 410
    assert get(server, "/no/such/page")[0] == 404


def test_flaky_pages_answer_some_503_with_retry_after(server: DemoServer) -> None:
    flaky = [p.path for p in server.site.pages.values() if p.flaky]
    assert flaky
    answers = [get(server, flaky[0]) for _ in range(40)]
    busy = [h for status, h, _ in answers if status == 503]
    assert 2 <= len(busy) <= 25
    assert all(h["retry-after"] == "120" for h in busy)
    assert any(status == 200 for status, _, _ in answers)


# -- the truth log ---------------------------------------------------------------------


def test_truth_logs_every_request_with_its_bytes(server: DemoServer) -> None:
    paths = ["/news/story-1", "/blog/post-2", "/docs/page-0", "/docs/old-0", "/robots.txt"]
    bodies = {p: get(server, p)[2] for p in paths}
    with urllib.request.urlopen(server.url("/_demo/truth")) as response:
        truth = json.load(response)
    logged = truth["requests"]
    assert [r["path"] for r in logged] == paths  # control endpoints are not logged
    for entry in logged:
        assert entry["method"] == "GET"
        assert entry["body_bytes"] == len(bodies[entry["path"]])
        assert entry["bytes"] > entry["body_bytes"]  # status line and headers count too
    assert logged[3]["status"] == 404
    assert truth["pages"]["/blog/post-2"]["changes"] == server.site.changes(
        "/blog/post-2", truth["now"]
    )
    with urllib.request.urlopen(server.url("/_demo/truth?since=3")) as response:
        assert [r["path"] for r in json.load(response)["requests"]] == paths[3:]


def test_truth_never_tells_the_future(server: DemoServer) -> None:
    with urllib.request.urlopen(server.url("/_demo/truth")) as response:
        truth = json.load(response)
    assert all(t <= truth["now"] for page in truth["pages"].values() for t in page["changes"])


def test_advance_endpoint_moves_the_clock(server: DemoServer) -> None:
    request = urllib.request.Request(server.url("/_demo/advance?secs=7200"), method="POST")
    with urllib.request.urlopen(request) as response:
        now = json.load(response)["now"]
    assert now >= START + 7200


def test_copy_stats_from_truth(server: DemoServer) -> None:
    site = server.site
    t0 = site.clock.now()
    etag = get(server, "/news/story-0")[1]["etag"]
    site.clock.advance(6 * HOUR)
    assert get(server, "/news/story-0", {"If-None-Match": etag})[0] == 200
    truth = site.truth()
    stats = copy_stats(
        truth,
        start=t0,
        end=site.clock.now(),
        keep=lambda r: r["path"] == "/news/story-0",
        paths=["/news/story-0"],
    )
    assert stats.detected_changes == 1
    assert stats.requests == 2
    assert stats.true_changes == len(
        [t for t in truth["pages"]["/news/story-0"]["changes"] if t0 < t <= site.clock.now()]
    )
    # Fresh from the first GET to the first change after it (a slot, at most 30 min
    # unless the story skipped slots), stale until the second GET: a small share.
    first_change = next(t for t in truth["pages"]["/news/story-0"]["changes"] if t > t0)
    assert stats.freshness == pytest.approx((first_change - t0) / (6 * HOUR), abs=0.02)
    assert stats.series[-1][2] > 0  # the age grows while the copy is stale


# -- the command -----------------------------------------------------------------------


def test_demo_site_command_serves_until_stopped(
    tmp_path: Path, python_env: dict[str, str]
) -> None:
    ready = tmp_path / "ready.json"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scrapy_fresh.commands",
            "demo-site",
            "--port",
            "0",
            "--speed",
            "600",
            "--ready-file",
            str(ready),
        ],
        env=python_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        url = json.loads(ready.read_text())["url"]
        with urllib.request.urlopen(url + "/_demo/clock") as response:
            clock = json.load(response)
        assert clock["speed"] == 600
        with urllib.request.urlopen(url + "/docs/") as response:
            assert b"/docs/page-0" in response.read()
    finally:
        process.terminate()
        process.communicate(timeout=10)


def test_demo_site_command_rejects_bad_speed(python_env: dict[str, str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "scrapy_fresh.commands", "demo-site", "--speed", "0"],
        env=python_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "--speed" in result.stderr
