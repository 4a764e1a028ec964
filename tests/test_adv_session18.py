"""Adversarial tests of session 18's changes: one response_downloaded receiver
(FreshRuntime.download_listeners), FreshItemPipeline built only with
FRESH_DROP_UNCHANGED_ITEMS, request_left_downloader connected from the first robots gate
on (FreshScheduler._close_gate). Written by an adversarial review; the two bugs it found
in a first design (a count of waiting gates, disconnected at zero: stuck above zero by a
deferred gate, and a disconnect inside the signal's dispatch that made Scrapy skip the
next receiver) are why the receiver is never disconnected."""

from __future__ import annotations

from typing import Any

from pydispatch import dispatcher
from scrapy import Request, signals
from scrapy.http import Response

from scrapy_fresh.keys import url_host

#: A Retry-After of 10**23 seconds (delta-seconds are digits only).
FOR_EVER = str(10**23)


def _listening(h: Any) -> int:
    sender = h.crawler.signals.sender
    return len(list(dispatcher.getReceivers(sender, signals.request_left_downloader)))


def _robots(url: str) -> Request:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    # as Scrapy's RobotsTxtMiddleware makes it (meta dont_obey_robotstxt, priority)
    return Request(
        f"{parts.scheme}://{parts.netloc}/robots.txt",
        priority=10000,
        meta={"dont_obey_robotstxt": True},
    )


# -- 3. request_left_downloader connected from the first gate on ----------------------------


def test_a_host_deferred_by_its_robots_txt_keeps_its_pages_and_the_others_flow(
    harness: Any,
) -> None:
    """Cycle mode, ROBOTSTXT_OBEY: a.example's robots.txt answers 503 with a Retry-After
    longer than the run may wait while its gate waits. Its other page waits for the next
    run; b.example's gate opens with its first answer; the receiver stays connected."""
    h = harness({"ROBOTSTXT_OBEY": True})
    for url in ("http://a.example/0", "http://a.example/1", "http://b.example/0"):
        h.scheduler.enqueue_request(Request(url))
    first, second = h.drain()
    assert {url_host(first.url), url_host(second.url)} == {"a.example", "b.example"}
    assert _listening(h) == 1
    a_first = first if url_host(first.url) == "a.example" else second
    robots = _robots(a_first.url)
    answer = Response(robots.url, status=503, headers={"Retry-After": FOR_EVER}, request=robots)
    h.runtime._response_downloaded(answer, robots)  # the runtime's one receiver
    assert h.scheduler._gates["a.example"].deferred  # a.example/1 waits for the next run
    h.crawler.signals.send_catch_log(
        signal=signals.request_left_downloader, request=robots, spider=None
    )
    h.runtime.host_answered("b.example")  # b.example's first page answered
    assert not h.drain()  # a.example/1 is not handed out in this run
    assert not [g for g in h.scheduler._gates.values() if g.waiting and not g.deferred]
    assert _listening(h) == 1


def test_a_receiver_connected_while_a_gate_waits_hears_the_request_that_releases_it(
    harness: Any,
) -> None:
    """The scheduler disconnects its request_left_downloader receiver from inside the
    dispatch of that very signal. pydispatch iterates the live receivers list, so the
    receiver after the scheduler's (one connected while a gate waited, e.g. by a spider
    callback or an extension) is skipped for that request: it never hears it leave."""
    h = harness({"ROBOTSTXT_OBEY": True})
    h.scheduler.enqueue_request(Request("http://a.example/0"))
    h.scheduler.enqueue_request(Request("http://a.example/1"))
    (first,) = h.drain()
    assert _listening(h) == 1
    heard: list[str] = []

    def other(request: Request) -> None:
        heard.append(request.url)

    h.crawler.signals.connect(other, signal=signals.request_left_downloader)
    # a download error of a.example's first page: it leaves the downloader
    h.crawler.signals.send_catch_log(
        signal=signals.request_left_downloader, request=first, spider=None
    )
    assert [r.url for r in h.drain()] == ["http://a.example/1"]  # the gate opened
    assert heard == [first.url], "a receiver of request_left_downloader missed the signal"


def _waiting(h: Any) -> int:
    return sum(1 for g in h.scheduler._gates.values() if g.waiting and not g.deferred)


def test_gates_of_many_hosts_open_each_way_with_one_receiver(harness: Any) -> None:
    """Released in every way (robots.txt parsed, a first answer, a download error of the
    page, a failed robots.txt download, the gate's deadline), each gate opens once and
    hands out its host's parked page; one receiver serves them all."""
    h = harness({"ROBOTSTXT_OBEY": True, "DOWNLOAD_TIMEOUT": 10})
    hosts = [f"h{n}.example" for n in range(5)]
    for host in hosts:
        for n in range(2):
            h.scheduler.enqueue_request(Request(f"http://{host}/{n}"))
    firsts = {url_host(r.url): r for r in h.drain()}
    assert sorted(firsts) == hosts
    assert (_waiting(h), _listening(h)) == (5, 1)

    class Parser:
        def crawl_delay(self, agent: str) -> None:
            return None

    send = h.crawler.signals.send_catch_log
    # h0: robots.txt answered, left the downloader, then parsed
    robots = _robots(firsts["h0.example"].url)
    h.runtime._response_downloaded(Response(robots.url, status=200, request=robots), robots)
    send(signal=signals.request_left_downloader, request=robots, spider=None)
    assert _waiting(h) == 5  # an answered robots.txt waits to be parsed
    send(signal=signals.robots_parsed, robotparser=Parser(), request=robots)
    send(signal=signals.robots_parsed, robotparser=Parser(), request=robots)  # again
    assert _waiting(h) == 4
    # h1: the first page answered (twice)
    h.runtime.host_answered("h1.example")
    h.runtime.host_answered("h1.example")
    assert _waiting(h) == 3
    # h2: the first page failed to download
    send(signal=signals.request_left_downloader, request=firsts["h2.example"], spider=None)
    assert _waiting(h) == 2
    # h3: its robots.txt failed to download
    send(signal=signals.request_left_downloader, request=_robots(firsts["h3.example"].url),
         spider=None)  # fmt: skip
    assert _waiting(h) == 1
    assert sorted(url_host(r.url) for r in h.drain()) == hosts[:4]  # one page each
    # h4: nothing heard; its deadline (DOWNLOAD_TIMEOUT + 5 s) opens it
    h.clock[0] += 16
    h.scheduler._release("h4.example")
    assert [r.url for r in h.drain()] == ["http://h4.example/1"]
    assert (_waiting(h), _listening(h)) == (0, 1)


def test_two_schedulers_of_two_crawlers_do_not_share_the_receiver(harness: Any) -> None:
    """Two crawlers in one process: each scheduler's receiver is connected to its own
    crawler's signals; a download error sent by one crawler opens only its gate."""
    one = harness({"ROBOTSTXT_OBEY": True})
    two = harness({"ROBOTSTXT_OBEY": True})
    for h in (one, two):
        h.scheduler.enqueue_request(Request("http://a.example/0"))
        h.scheduler.enqueue_request(Request("http://a.example/1"))
        assert len(h.drain()) == 1
    assert (_listening(one), _listening(two)) == (1, 1)
    first = Request("http://a.example/0")  # its first page failed to download
    two.crawler.signals.send_catch_log(
        signal=signals.request_left_downloader, request=first, spider=None
    )
    assert [r.url for r in two.drain()] == ["http://a.example/1"]
    assert not one.drain()  # one's gate still waits


# -- real crawls (tests/crawl_runner.py in subprocesses, servers on 127.0.0.1) ----------

import contextlib  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

LONG_SECS = 60.0
DAY = 86400.0


def _fresh(db: Path, **settings: Any) -> dict[str, Any]:
    return {"ADDONS": {"scrapy_fresh.Addon": 0}, "FRESH_SQLITE_PATH": str(db), **settings}


def _elapsed(result: Any) -> float:
    return float(result.stats["elapsed_time_seconds"])


def _lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_several_refusing_hosts_beside_a_live_one_fail_as_fast_as_in_plain_scrapy(
    crawl: Any, mockserver: Any, tmp_path: Path
) -> None:
    """ROBOTSTXT_OBEY, retries, two hosts refusing connections and one answering: the
    gates open and close one after another (the receiver connected, disconnected and
    connected again); no refused host waits for DOWNLOAD_TIMEOUT + 5 s."""
    site = mockserver.MockSite(count=4, seed=3)
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(mockserver.MockServer(site))
        ports = []
        for _ in range(2):
            closed = stack.enter_context(socket.socket())
            closed.bind(("127.0.0.1", 0))
            ports.append(closed.getsockname()[1])
        start = [
            {"url": server.url(f"/v/{n}"), "errback": "on_error", "callback": "parse_links"}
            for n in range(4)
        ]
        for port in ports:
            start += [
                {"url": f"http://127.0.0.1:{port}/p/{n}", "errback": "on_error"} for n in range(3)
            ]
        settings = {"ROBOTSTXT_OBEY": True, "DOWNLOAD_TIMEOUT": LONG_SECS, "RETRY_TIMES": 2}
        plain = crawl({"settings": settings, "start": start}, tmp_path / "plain", check=False)
        fresh = crawl(
            {"settings": _fresh(tmp_path / "s.sqlite", **settings), "start": start},
            tmp_path / "fresh",
            timeout=3 * LONG_SECS,
            check=False,
        )
    assert (plain.returncode, fresh.returncode) == (0, 0), fresh.log[-3000:]
    assert (plain.reason, fresh.reason) == ("finished", "finished")
    assert _elapsed(fresh) < LONG_SECS / 2, fresh.log[-3000:]
    assert sorted(fresh.errbacks) == sorted(plain.errbacks)
    assert len(fresh.errbacks) == 6
    for name in ("retry/count", "downloader/exception_count", "robotstxt/request_count"):
        assert fresh.stat(name) == plain.stat(name), name
    assert fresh.stat("fresh/errors") == 6
    assert fresh.stat("fresh/new") == 4


@pytest.mark.slow
def test_the_visit_log_has_one_fetch_line_per_request_the_servers_answered(
    crawl: Any, mockserver: Any, tmp_path: Path
) -> None:
    """Two real cycles (200s, 304s, 404, 500s retried, robots.txt) over two hosts: the
    visit log's "fetch" lines are the requests the servers logged, none missing, none
    twice (the visit log is now one listener of the runtime's receiver)."""
    sites = [mockserver.MockSite(count=3, seed=5), mockserver.MockSite(count=3, seed=6)]
    log = tmp_path / "visits.jsonl"
    with contextlib.ExitStack() as stack:
        servers = [
            stack.enter_context(mockserver.MockServer(s, host=h))
            for s, h in zip(sites, ("127.0.0.1", "127.0.0.2"), strict=True)
        ]
        start = [
            {"url": server.url(path), "errback": "on_error"}
            for server in servers
            for path in ("/v/0", "/v/1", "/w/0", "/n/0", "/i/2", "/gone/0", "/err/0")
        ]
        settings = _fresh(
            tmp_path / "s.sqlite",
            ROBOTSTXT_OBEY=True,
            RETRY_TIMES=1,
            FRESH_VISIT_LOG=str(log),
            FRESH_UNREACHABLE_ATTEMPTS=3,
        )
        crawl({"settings": settings, "start": start}, tmp_path / "c1", check=False)
        sites[0].change("/v/1")
        crawl(
            {"settings": settings, "start": start, "clock_offset": 2 * DAY},
            tmp_path / "c2",
            check=False,
        )
    fetches = [e for e in _lines(log) if e["e"] == "fetch"]
    runs = {e["run"] for e in fetches}
    assert len(runs) == 2
    logged: Counter[tuple[str, str, int]] = Counter()
    for server, site in zip(servers, sites, strict=True):
        for r in site.log:
            logged[(server.url(r.path), r.method, r.status)] += 1
    from_log = Counter((e["url"], e["method"], e["status"]) for e in fetches)
    assert from_log == logged
    assert any(status == 304 for (_, _, status) in from_log)
    assert all(e["t"] > 0 and e["bytes"] > 0 for e in fetches)
    assert all(e["key"] for e in fetches if "robots.txt" not in e["url"])


def _drop_cycles(crawl: Any, mockserver: Any, tmp_path: Path, drop: bool) -> tuple[Any, Any]:
    site = mockserver.MockSite(count=4, seed=11)
    with mockserver.MockServer(site) as server:
        start = [{"url": server.url(f"/n/{n}")} for n in range(4)]
        settings = _fresh(
            tmp_path / "s.sqlite",
            FRESH_DROP_UNCHANGED_ITEMS=drop,
            FRESH_LENGTH_PROBE_FULL_EVERY=0,
        )
        first = crawl({"settings": settings, "start": start}, tmp_path / "c1")
        site.change("/n/2")
        second = crawl(
            {"settings": settings, "start": start, "clock_offset": 2 * DAY}, tmp_path / "c2"
        )
    return first, second


@pytest.mark.slow
@pytest.mark.parametrize("drop", [True, False])
def test_items_of_unchanged_pages_are_dropped_only_when_asked(
    crawl: Any, mockserver: Any, tmp_path: Path, drop: bool
) -> None:
    first, second = _drop_cycles(crawl, mockserver, tmp_path, drop)
    assert len(first.items) == 4
    assert first.dropped == 0
    assert all(item["fresh_changed"] is True for item in first.items)
    assert second.stat("fresh/changed") == 1
    assert second.stat("fresh/unchanged") == 3
    by_path = {item["url"].rsplit("/", 2)[-2] + "/" + item["url"].rsplit("/", 1)[-1]: item
               for item in second.items}  # fmt: skip
    if drop:
        assert sorted(by_path) == ["n/2"]
        assert second.dropped == 3
        assert second.stat("fresh/items_dropped_unchanged") == 3
    else:
        assert sorted(by_path) == ["n/0", "n/1", "n/2", "n/3"]
        assert second.dropped == 0
        assert second.stat("fresh/items_dropped_unchanged") == 0
        assert "FreshItemPipeline" not in second.log.split("Enabled item pipelines")[1][:300]
    for path, item in by_path.items():
        assert item["fresh_changed"] is (path == "n/2"), path


@pytest.mark.slow
def test_no_unreachable_watch_with_zero_attempts_breaks_nothing(
    crawl: Any, mockserver: Any, tmp_path: Path
) -> None:
    """FRESH_UNREACHABLE_ATTEMPTS = 0: FreshReachabilityMiddleware is not built (no
    download listener of it); the scheduler's and the visit log's still run."""
    site = mockserver.MockSite(count=3, seed=2)
    log = tmp_path / "visits.jsonl"
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(mockserver.MockServer(site))
        closed = stack.enter_context(socket.socket())
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        start = [{"url": server.url(f"/v/{n}"), "errback": "on_error"} for n in range(3)]
        start += [
            {"url": f"http://127.0.0.1:{port}/p/{n}", "errback": "on_error"} for n in range(4)
        ]
        settings = _fresh(
            tmp_path / "s.sqlite",
            ROBOTSTXT_OBEY=True,
            RETRY_TIMES=1,
            DOWNLOAD_TIMEOUT=LONG_SECS,
            FRESH_UNREACHABLE_ATTEMPTS=0,
            FRESH_VISIT_LOG=str(log),
        )
        result = crawl({"settings": settings, "start": start}, tmp_path / "c", check=False)
    assert result.returncode == 0, result.log[-3000:]
    assert result.reason == "finished"
    assert "FreshReachabilityMiddleware" not in result.log.split("Enabled downloader")[1][:2000]
    assert "Error caught on signal handler" not in result.log
    assert _elapsed(result) < LONG_SECS / 2
    assert result.stat("fresh/new") == 3
    assert result.stat("fresh/errors") == 4
    assert len(result.errbacks) == 4
    fetches = [e for e in _lines(log) if e["e"] == "fetch"]
    assert Counter(e["url"].rsplit("/", 1)[-1] for e in fetches) == Counter(
        ["robots.txt", "0", "1", "2"]
    )


_DEFER_RUNNER = r"""
import json, sys
from pydispatch import dispatcher
from scrapy import Request, Spider, signals
from scrapy.crawler import CrawlerProcess

config = json.loads(open(sys.argv[1]).read())

class S(Spider):
    name = "deferred_robots"
    async def start(self):
        for url in config["start"]:
            yield Request(url)
    def parse(self, response):
        yield {"url": response.url}

process = CrawlerProcess({"LOG_LEVEL": "INFO", "TELNETCONSOLE_ENABLED": False,
                          "USER_AGENT": "fresh-test", **config["settings"]})
crawler = process.create_crawler(S)
out = {}
def closed(reason):
    scheduler = crawler.engine._slot.scheduler
    out["reason"] = reason
    out["waiting"] = sorted(h for h, g in scheduler._gates.items() if g.waiting and not g.deferred)
    out["deferred"] = sorted(scheduler._deferred)
    out["receivers"] = len(list(dispatcher.getReceivers(
        crawler.signals.sender, signals.request_left_downloader)))
crawler.signals.connect(closed, signal=signals.spider_closed)
process.crawl(crawler)
process.start()
out["stats"] = {k: str(v) for k, v in crawler.stats.get_stats().items()}
open(config["output"], "w").write(json.dumps(out))
"""


@pytest.mark.slow
def test_in_a_real_crawl_a_robots_txt_deferral_ends_the_run_with_the_others_done(
    mockserver: Any, tmp_path: Path
) -> None:
    """A real cycle-mode crawl, ROBOTSTXT_OBEY: host A's robots.txt answers 503 with a
    Retry-After longer than the run may wait (its gate waits then, and is deferred); host B
    serves 12 pages, spaced. The run finishes with B's pages and A's first fetched, no
    gate left waiting, A deferred to the next run."""
    import subprocess
    import sys
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Busy(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/robots.txt":
                self.send_response(503)
                self.send_header("Retry-After", FOR_EVER)
            else:
                self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    busy = ThreadingHTTPServer(("127.0.0.1", 0), Busy)
    threading.Thread(target=busy.serve_forever, daemon=True).start()
    site = mockserver.MockSite(count=12, seed=4)
    try:
        with mockserver.MockServer(site, host="127.0.0.2") as server:
            a = f"http://127.0.0.1:{busy.server_address[1]}"
            start = [f"{a}/p/{n}" for n in range(3)]
            start += [server.url(f"/v/{n}") for n in range(12)]
            output = tmp_path / "out.json"
            config = {
                "settings": _fresh(
                    tmp_path / "s.sqlite",
                    ROBOTSTXT_OBEY=True,
                    DOWNLOAD_SLOTS={"127.0.0.2": {"delay": 0.05}},
                ),
                "start": start,
                "output": str(output),
            }
            (tmp_path / "config.json").write_text(json.dumps(config))
            (tmp_path / "runner.py").write_text(_DEFER_RUNNER)
            root = Path(__file__).resolve().parent.parent
            done = subprocess.run(
                [sys.executable, str(tmp_path / "runner.py"), str(tmp_path / "config.json")],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
                cwd=tmp_path,
                env={**__import__("os").environ, "PYTHONPATH": str(root)},
            )
    finally:
        busy.shutdown()
        busy.server_close()
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(output.read_text())
    assert out["reason"] == "finished"
    assert out["deferred"] == [a.split("//")[1]]
    assert int(out["stats"].get("fresh/new", 0)) == 13  # B's 12 and A's first page
    assert out["waiting"] == []  # no gate waits at the end...
    assert out["receivers"] == 1  # connected once, at the first gate
