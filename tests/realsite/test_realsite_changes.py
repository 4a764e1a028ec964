"""Change output on a real site (issue 17): a price-watching spider over nginx.

Four cycles of a small shop: cycle 2 sees a price change, a description edit, a catalog
whose rows were reordered and a deleted product page (its first 404); cycle 3 confirms
the 404 (the page becomes gone); cycle 4 finds it gone again. Checked: ``fresh_previous``
and ``fresh_diff`` on the changed items, reordering is no change with
FRESH_ITEM_KEY_FIELD, one PageGone item in the feed export of cycle 3 and none in
cycle 4, the change feed (``scrapy-fresh changes``) and webhook deliveries to a real
HTTP receiver that checks signatures and is down during cycle 2 (nothing lost).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.crawl.webhook import SIGNATURE_HEADER, verify_signature
from tests.nginx_support import Nginx
from tests.realsite_support import ALL_DUE_OFFSET, run_crawl, store_settings, visits

pytestmark = [pytest.mark.realsite, pytest.mark.usefixtures("nginx_available")]

SECRET = "s3cret-for-tests"
LONG = (
    "This mug holds a generous amount of tea and keeps it warm for a long while. "
    "It is made of stoneware and glazed in a deep blue. "
    "It is safe in the dishwasher and in the microwave. "
    "Each one is thrown by hand, so no two are quite alike."
)
PRODUCTS = {
    1: ("Blue mug", "10.00", LONG),
    2: ("Teapot", "35.00", LONG.replace("mug", "teapot")),
    3: ("Saucer", "4.50", "A saucer."),
    4: ("Spoon", "2.00", "A spoon."),
}


def product_page(n: int, name: str, price: str, description: str) -> str:
    return (
        f"<!DOCTYPE html><html><head><title>{name}</title></head><body>"
        f'<article data-sku="sku-{n}"><h1>{name}</h1><span class="price">{price}</span>'
        f'<p class="description">{description}</p></article></body></html>\n'
    )


def catalog(products: dict[int, tuple[str, str, str]], order: list[int]) -> str:
    rows = "".join(
        f'<tr class="product" data-sku="sku-{n}"><td><a href="p{n}.html">{products[n][0]}'
        f'</a></td><td class="price">{products[n][1]}</td></tr>'
        for n in order
    )
    return f"<!DOCTYPE html><html><body><table>{rows}</table></body></html>\n"


def write_page(path: Path, text: str) -> None:
    """Write a page whose edit nginx must see: its mtime moves on by at least 2 s, since
    nginx's ETag and Last-Modified have whole seconds (an edit of the same size within
    one second would keep both, and the 304 would be right to say unchanged)."""
    before = path.stat().st_mtime if path.exists() else None
    path.write_text(text)
    if before is not None:
        when = max(path.stat().st_mtime, before + 2)
        os.utime(path, (when, when))


def write_shop(root: Path, products: dict[int, tuple[str, str, str]], order: list[int]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    write_page(root / "catalog.html", catalog(products, order))
    for n, (name, price, description) in products.items():
        if n in order:
            write_page(root / f"p{n}.html", product_page(n, name, price, description))


class Receiver:
    """A webhook receiver: a real HTTP server on 127.0.0.1 that checks each signature
    and counts deliveries; it fails its first answer to ``fail_first`` (after counting
    it), as a receiver that crashes before it acknowledges."""

    def __init__(self, port: int = 0, fail_first: int = 0) -> None:
        self.deliveries: list[dict[str, Any]] = []
        self.bad_signatures = 0
        self.fail_first = fail_first
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if not verify_signature(SECRET, body, self.headers.get(SIGNATURE_HEADER)):
                    receiver.bad_signatures += 1
                    self.send_response(401)
                    self.end_headers()
                    return
                data = json.loads(body)
                receiver.deliveries.append(data)
                failing = receiver.fail_first > 0
                receiver.fail_first -= int(failing)
                self.send_response(500 if failing else 204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("changes")
    root = work / "site"
    write_shop(root, PRODUCTS, [1, 2, 3, 4])
    receiver = Receiver(fail_first=1)
    port = receiver.port
    result: dict[str, Any] = {"work": work}
    with Nginx(root, work / "nginx") as server:
        base = {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_SQLITE_PATH": str(work / "state.sqlite"),
            "FRESH_VISIT_LOG": str(work / "visits.jsonl"),
            "FRESH_KEEP_ITEMS": True,
            "FRESH_ITEM_KEY_FIELD": "sku",
            "FRESH_FINGERPRINT_FIELDS": ["sku", "name", "price", "description"],
            "FRESH_WEBHOOK_URL": f"http://127.0.0.1:{port}/hook",
            "FRESH_WEBHOOK_SECRET": SECRET,
            "FRESH_WEBHOOK_OUTBOX": str(work / "outbox.sqlite"),
            "FRESH_WEBHOOK_BACKOFF_SECS": 0.2,
        }

        def cycle(n: int) -> Any:
            settings = {
                **base,
                "FEEDS": {str(work / f"c{n}.jsonl"): {"format": "jsonlines"}},
                # the wait ends once the outbox is empty; cycle 2 has nobody to answer
                "FRESH_WEBHOOK_CLOSE_WAIT_SECS": 1.0 if n == 2 else 30.0,
            }
            config = {"spider": "prices", "start": [server.url("/catalog.html")],
                      "clock_offset": (n - 1) * ALL_DUE_OFFSET, "settings": settings}  # fmt: skip
            crawl = run_crawl(config, work / f"c{n}")
            crawl.check()
            return [json.loads(line) for line in (work / f"c{n}.jsonl").read_text().splitlines()]

        result["c1"] = cycle(1)
        result["after_c1"] = len(receiver.deliveries)
        receiver.stop()  # the receiver is down for all of cycle 2
        edited = dict(PRODUCTS)
        edited[1] = ("Blue mug", "12.50", LONG)
        edited[2] = ("Teapot", "35.00", PRODUCTS[2][2].replace("deep blue", "pale green"))
        (root / "p3.html").unlink()
        write_shop(root, edited, [4, 3, 2, 1])  # reordered; p3 still linked, now a 404
        (root / "p3.html").unlink(missing_ok=True)
        result["c2"] = cycle(2)
        result["down_c2"] = len(receiver.deliveries)
        first = receiver
        receiver = Receiver(port=port)  # back, same address
        result["c3"] = cycle(3)
        # From here on the catalog changes every cycle (the spider sees the p3 link
        # again: a gone page is only fetched again when a spider asks for it).
        for n, price in ((4, "2.10"), (5, "2.20"), (6, "2.30"), (7, "2.40")):
            edited[4] = ("Spoon", price, "A spoon.")
            if n == 5:  # p3 comes back
                write_shop(root, edited, [4, 3, 2, 1])
            else:
                write_shop(root, edited, [4, 2, 1])
                write_page(root / "catalog.html", catalog(edited, [4, 3, 2, 1]))
                (root / "p3.html").unlink(missing_ok=True)
            result[f"c{n}"] = cycle(n)
        receiver.stop()
    result["deliveries"] = first.deliveries + receiver.deliveries
    result["bad_signatures"] = first.bad_signatures + receiver.bad_signatures
    return result


def _product(items: list[dict[str, Any]], sku: str) -> dict[str, Any]:
    found = [i for i in items if i.get("sku") == sku and i.get("page") == "product"]
    assert len(found) == 1, items
    return found[0]


def test_changed_price_carries_its_previous_value(shop: dict[str, Any]) -> None:
    item = _product(shop["c2"], "sku-1")
    assert item["fresh_changed"] is True
    assert item["fresh_changed_fields"] == ["price"]
    assert item["fresh_previous"] == {"price": "10.00"}
    assert "fresh_diff" not in item  # a short field: no diff


def test_long_description_carries_a_compact_diff(shop: dict[str, Any]) -> None:
    item = _product(shop["c2"], "sku-2")
    assert item["fresh_changed_fields"] == ["description"]
    diff = item["fresh_diff"]["description"]
    lines = diff.splitlines()
    assert lines[:2] == ["--- description (previous)", "+++ description"]
    assert "-It is made of stoneware and glazed in a deep blue." in lines
    assert "+It is made of stoneware and glazed in a pale green." in lines
    assert not any("thrown by hand" in line for line in lines)  # one line of context only
    assert item["fresh_previous"]["description"] == PRODUCTS[2][2]


def test_unchanged_products_and_reordered_catalog_rows_are_not_changes(
    shop: dict[str, Any],
) -> None:
    assert _product(shop["c2"], "sku-4")["fresh_changed"] is False
    rows = {i["sku"]: i for i in shop["c2"] if i.get("page") == "catalog"}
    assert rows["sku-1"]["fresh_changed_fields"] == ["price"]
    assert rows["sku-1"]["fresh_previous"] == {"price": "10.00"}
    assert [rows[s]["fresh_changed"] for s in ("sku-2", "sku-3", "sku-4")] == [False] * 3


def test_deleted_page_yields_one_page_gone_once_confirmed(shop: dict[str, Any]) -> None:
    def gone(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [i for i in items if "reason" in i]

    assert gone(shop["c1"]) == gone(shop["c2"]) == []  # one 404 is not yet gone
    [item] = gone(shop["c3"])
    assert item["url"].endswith("/p3.html")
    assert (item["status"], item["reason"]) == (404, "gone")
    assert isinstance(item["last_seen"], float)  # the first cycle saw it
    assert gone(shop["c4"]) == []  # still gone: not told again
    p3 = [v for v in visits(shop["work"] / "visits.jsonl") if v["url"].endswith("/p3.html")]
    assert [v["outcome"] for v in p3] == [
        "new", "gone", "gone", "gone", "unchanged", "gone", "gone"
    ]  # fmt: skip
    assert gone(shop["c5"]) == gone(shop["c6"]) == []  # back, then a first 404
    [again] = gone(shop["c7"])  # it came back and went again: told again
    assert again["url"] == item["url"]
    assert again["last_seen"] > item["last_seen"]  # the visit of cycle 5 saw it


def test_webhook_delivers_every_change_across_a_receiver_restart(shop: dict[str, Any]) -> None:
    assert shop["bad_signatures"] == 0
    assert shop["down_c2"] == shop["after_c1"]  # nothing reached it while it was down
    by_id: dict[str, list[dict[str, Any]]] = {}
    for delivery in shop["deliveries"]:
        by_id.setdefault(delivery["delivery_id"], []).append(delivery)
    kinds = sorted(
        (d[0]["event"]["kind"], d[0]["event"]["url"].rsplit("/", 1)[-1]) for d in by_id.values()
    )
    log = shop["work"] / "visits.jsonl"
    expected = subprocess.run(
        [sys.executable, "-m", "scrapy_fresh.commands", "changes", "--visit-log", str(log)],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    feed = sorted((e["kind"], e["url"].rsplit("/", 1)[-1]) for e in map(json.loads, expected))
    assert kinds == feed  # every change delivered, each under one delivery id
    assert feed.count(("gone", "p3.html")) == 2  # gone, back, gone again
    assert feed.count(("new", "p1.html")) == feed.count(("changed", "p1.html")) == 1
    assert ("changed", "p2.html") in feed
    assert feed.count(("changed", "catalog.html")) == 5  # cycles 2 and 4-7
    duplicates = [d for d in by_id.values() if len(d) > 1]
    assert duplicates, "the receiver failed one answer: that delivery comes again"
    for copies in duplicates:
        assert [c["attempt"] for c in copies] == sorted(c["attempt"] for c in copies)
        assert copies[-1]["attempt"] > 1
        assert all(c["event"] == copies[0]["event"] for c in copies)


def test_report_lists_changes_diffs_gone_pages_and_hosts_only(shop: dict[str, Any]) -> None:
    work = shop["work"]
    done = subprocess.run(
        [sys.executable, "-m", "scrapy_fresh.commands", "report", "--html", str(work / "r.html"),
         "--json", str(work / "r.json"), "--visit-log", str(work / "visits.jsonl"),
         "--sqlite-path", str(work / "state.sqlite")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads((work / "r.json").read_text())
    sites = [s["host"] for s in data["sites"]]
    assert len(sites) == 1
    assert sites[0].startswith("127.0.0.1:")
    kinds = [(c["kind"], c["url"].rsplit("/", 1)[-1]) for c in data["changes"]]
    assert ("gone", "p3.html") in kinds[:3]  # newest first: cycle 7 made it gone
    assert kinds.count(("gone", "p3.html")) == 2
    assert {k for k, _ in kinds[-5:]} == {"new"}  # cycle 1, last
    p2 = next(
        c for c in data["changes"] if c["url"].endswith("/p2.html") and c["kind"] == "changed"
    )
    [item] = p2["items"]
    assert "+It is made of stoneware and glazed in a pale green." in item["diff"]["description"]
    assert [g["url"].rsplit("/", 1)[-1] for g in data["gone"]] == ["p3.html"]
    page = (work / "r.html").read_text()
    for text in ("Latest changes", "glazed in a pale green", "Gone pages", "<h2>Hosts</h2>"):
        assert text in page
    assert "run/cycle" not in page


def _queued_in(outbox: Path) -> int:
    """Changes waiting in a crawl's outbox; 0 while the crawl has not made its table yet
    (the file can exist a moment before the table does)."""
    import sqlite3

    if not outbox.exists():
        return 0
    try:
        with sqlite3.connect(outbox) as conn:
            return int(conn.execute("SELECT count(*) FROM outbox").fetchone()[0])
    except sqlite3.OperationalError:  # no table yet, or the crawl holds the lock
        return 0


def test_webhook_outbox_survives_a_killed_crawl(tmp_path: Path) -> None:
    """A crawl killed (SIGKILL) while its receiver is down loses no change: the next
    crawl delivers what the outbox holds."""
    import sqlite3
    import time

    from tests.realsite_support import start_crawl

    root = tmp_path / "site"
    write_shop(root, PRODUCTS, [1, 2, 3, 4])
    probe = Receiver()
    port = probe.port
    probe.stop()  # nobody listens there during the first crawl
    outbox = tmp_path / "outbox.sqlite"
    with Nginx(root, tmp_path / "nginx") as server:
        settings = {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_SQLITE_PATH": str(tmp_path / "state.sqlite"),
            "FRESH_VISIT_LOG": str(tmp_path / "visits.jsonl"),
            "FRESH_WEBHOOK_URL": f"http://127.0.0.1:{port}/hook",
            "FRESH_WEBHOOK_SECRET": SECRET,
            "FRESH_WEBHOOK_OUTBOX": str(outbox),
            "FRESH_WEBHOOK_BACKOFF_SECS": 0.1,
            "FRESH_WEBHOOK_CLOSE_WAIT_SECS": 300.0,  # it would wait: it is killed instead
        }
        config = {"spider": "prices", "start": [server.url("/catalog.html")], "settings": settings}
        started = start_crawl(config, tmp_path / "c1")
        deadline = time.monotonic() + 60
        queued = 0
        try:
            while time.monotonic() < deadline and queued < 5:
                time.sleep(0.2)
                queued = _queued_in(outbox)
        finally:
            started.process.kill()
            started.finish(10)
        assert queued == 5  # the catalog and four products, all new
        receiver = Receiver(port=port)
        try:
            again = {**config, "settings": {**settings, "FRESH_WEBHOOK_CLOSE_WAIT_SECS": 20.0}}
            run_crawl(again, tmp_path / "c2").check()
        finally:
            receiver.stop()
    got = sorted((d["event"]["kind"], d["event"]["url"].rsplit("/", 1)[-1])
                 for d in receiver.deliveries)  # fmt: skip
    assert got == [("new", "catalog.html")] + [("new", f"p{n}.html") for n in range(1, 5)]
    assert any(d["attempt"] > 1 for d in receiver.deliveries)  # tried while it was down
    with sqlite3.connect(outbox) as conn:
        assert conn.execute("SELECT count(*) FROM outbox").fetchone()[0] == 0


def test_previous_values_with_the_redis_store(tmp_path: Path, module_prefix: str) -> None:
    """The kept items live in the shared Redis store as in SQLite (two cycles)."""
    from tests.redis_helpers import SHARED_URL

    root = tmp_path / "site"
    write_shop(root, PRODUCTS, [1, 2, 3, 4])
    with Nginx(root, tmp_path / "nginx") as server:
        settings = {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_STORE": "redis",
            "REDIS_URL": SHARED_URL,
            "FRESH_REDIS_KEY": module_prefix,
            "FRESH_VISIT_LOG": str(tmp_path / "visits.jsonl"),
            "FRESH_KEEP_ITEMS": True,
            "FRESH_ITEM_KEY_FIELD": "sku",
        }
        config = {"spider": "prices", "start": [server.url("/catalog.html")], "settings": settings}
        run_crawl(config, tmp_path / "c1").check()
        edited = {**PRODUCTS, 2: ("Teapot", "36.00", PRODUCTS[2][2].replace("blue", "red"))}
        write_shop(root, edited, [2, 1, 3, 4])
        second = run_crawl({**config, "clock_offset": ALL_DUE_OFFSET}, tmp_path / "c2")
    second.check()
    [teapot] = [i for i in second.items if i.get("page") == "product" and i["sku"] == "sku-2"]
    assert teapot["fresh_changed_fields"] == ["price", "description"]
    assert teapot["fresh_previous"] == {"price": "35.00", "description": PRODUCTS[2][2]}
    assert (
        "+It is made of stoneware and glazed in a deep red." in teapot["fresh_diff"]["description"]
    )
    rows = {i["sku"]: i for i in second.items if i.get("page") == "catalog"}
    assert rows["sku-2"]["fresh_previous"] == {"price": "35.00"}
    assert rows["sku-1"]["fresh_changed"] is False  # moved, not changed


def test_page_gone_with_an_errback_spider(tmp_path: Path) -> None:
    """Requests with an errback: HttpErrorMiddleware hands the errback the 404, and the
    PageGone item still follows, next to the errback's own item. Only for a page that
    was there: the links that were broken from the start get none."""
    from tests.nginx_support import make_small_site

    root = tmp_path / "site"
    root.mkdir()
    with Nginx(root, tmp_path / "nginx") as server:
        make_small_site(root, server.url("").rstrip("/"), count=4, missing=2)
        settings = {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_SQLITE_PATH": str(tmp_path / "state.sqlite"),
            "FRESH_VISIT_LOG": str(tmp_path / "visits.jsonl"),
        }
        config = {"spider": "kwargs", "start": [server.url("/index.html")], "settings": settings}
        crawls = []
        for n in range(3):
            if n == 1:
                (root / "i2.html").unlink()  # deleted: 404 now, gone when confirmed
            crawl = run_crawl({**config, "clock_offset": n * ALL_DUE_OFFSET}, tmp_path / f"c{n}")
            crawl.check()
            crawls.append(crawl)
    gone = [[i for i in c.items if "reason" in i] for c in crawls]
    errback_items = [[i for i in c.items if i.get("error") == "HttpError"] for c in crawls]
    assert errback_items[0], "the errback got the 404s"
    assert gone[0] == gone[1] == []  # broken links, and a first 404 of i2.html
    (item,) = gone[2]  # the second 404 confirms it: gone
    assert item["url"].rsplit("/", 1)[-1] == "i2.html"
    assert (item["status"], item["reason"]) == (404, "gone")
    assert item["last_seen"] is not None  # when it was last there
    assert [c.stat("fresh/gone_items") for c in crawls] == [0, 0, 1]


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_a_gone_page_that_comes_back_is_fetched_again(
    tmp_path: Path, backend: str, module_prefix: str
) -> None:
    """A product page answers 404 twice (gone: a PageGone item) while its unchanged
    catalog still links it (the catalog answers 304, so no spider sees that link again);
    two days later it is back. The next cycle fetches it, as plain Scrapy does, with
    its new price: a gone page is checked again after a back-off, not forgotten."""
    root = tmp_path / "site"
    write_shop(root, PRODUCTS, [1, 2, 3, 4])
    settings = store_settings(backend, tmp_path, f"{module_prefix}:gone")
    with Nginx(root, tmp_path / "nginx") as server:
        config = {"spider": "prices", "start": [server.url("/catalog.html")], "settings": settings}

        def cycle(n: int, days: float) -> Any:
            crawl = run_crawl({**config, "clock_offset": days * 86400}, tmp_path / f"c{n}")
            crawl.check()
            return crawl

        cycle(1, 0)
        (root / "p3.html").unlink()  # the catalog is not touched: it still links p3
        cycle(2, 2)
        third = cycle(3, 4)
        assert [i["url"].rsplit("/", 1)[-1] for i in third.items if "status" in i] == ["p3.html"]
        back = {**PRODUCTS, 3: ("Saucer", "3.99", "A saucer.")}
        write_shop(root, back, [1, 2, 3, 4])
        write_page(root / "catalog.html", catalog(PRODUCTS, [1, 2, 3, 4]))  # as it was
        fourth = cycle(4, 6)
        plain = run_crawl(
            {"spider": "prices", "start": [server.url("/catalog.html")], "settings": {}},
            tmp_path / "plain",
        )
    plain.check()
    prices = {i["sku"]: i["price"] for i in plain.items if i.get("page") == "product"}
    assert prices["sku-3"] == "3.99"
    saucer = [i for i in fourth.items if i.get("sku") == "sku-3" and i.get("page") == "product"]
    assert [i["price"] for i in saucer] == ["3.99"]


def test_a_page_over_the_keep_cap_tells_the_log_what_it_tells_the_item(tmp_path: Path) -> None:
    """A product whose new description is too long to keep (FRESH_KEEP_ITEMS_MAX_BYTES):
    its item still gets the previous values, and the visit log (the report, the change
    feed's readers) gets the same ones, not nothing."""
    root = tmp_path / "site"
    write_shop(root, PRODUCTS, [1, 2, 3, 4])
    log = tmp_path / "visits.jsonl"
    settings = {
        "ADDONS": {"scrapy_fresh.Addon": 0},
        "FRESH_SQLITE_PATH": str(tmp_path / "state.sqlite"),
        "FRESH_VISIT_LOG": str(log),
        "FRESH_KEEP_ITEMS": True,
        "FRESH_KEEP_ITEMS_MAX_BYTES": 600,
        "FRESH_DIFF_MIN_CHARS": 10_000,  # previous values only: no diffs
    }
    import random

    noise = " ".join(f"{random.Random(n).getrandbits(64):x}" for n in range(200))
    with Nginx(root, tmp_path / "nginx") as server:
        config = {"spider": "prices", "start": [server.url("/catalog.html")], "settings": settings}
        run_crawl(config, tmp_path / "c1").check()
        write_shop(root, {**PRODUCTS, 4: ("Spoon", "2.50", noise)}, [1, 2, 3, 4])
        second = run_crawl({**config, "clock_offset": ALL_DUE_OFFSET}, tmp_path / "c2")
    second.check()
    assert second.stat("fresh/items_not_kept") >= 1  # the new spoon is over the cap
    [spoon] = [i for i in second.items if i.get("sku") == "sku-4" and i.get("page") == "product"]
    assert spoon["fresh_previous"] == {"price": "2.00", "description": "A spoon."}
    [line] = [
        v for v in visits(log)[-40:] if v["url"].endswith("/p4.html") and v["outcome"] == "changed"
    ]
    assert [it["previous"] for it in line["items"]] == [spoon["fresh_previous"]]
