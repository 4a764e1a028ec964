"""A shop watched for prices and stock: every real change found, with its field, and
nothing else (issue 15).

A local shop serves 60 product pages without ETag or Last-Modified: a name, a price, a
stock count and a description, and a sidebar whose render time changes on every answer
(two digits: the page's byte length does not move). The spider yields one item per page
with those fields and the sidebar; FRESH_FIELD_RULES ignores the render time in it.
Between the first two runs 10 prices change keeping their digit count (51.77 -> 52.77),
10 stock counts change ("19 available" -> "18 available") and 10 descriptions are
rewritten; the third run sees no edit at all. Runs are 40 simulated days apart, so every
page is due each time.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

DAY = 86400.0
SHIFT = 40 * DAY
COUNT = 60
WORDS = [
    "sturdy",
    "ceramic",
    "mug",
    "glazed",
    "blue",
    "holds",
    "coffee",
    "tea",
    "soup",
    "dishwasher",
    "safe",
    "handmade",
    "small",
    "batch",
    "studio",
    "pottery",
    "warm",
    "grip",
    "wide",
    "base",
    "stacks",
    "neatly",
    "gift",
    "boxed",
    "kitchen",
    "table",
]
PRICES = range(10)
STOCKS = range(10, 20)
DESCRIPTIONS = range(20, 30)


@dataclass
class Product:
    name: str
    cents: int
    stock: int
    description: str


@dataclass
class Shop:
    products: list[Product]
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list[tuple[str, str]] = field(default_factory=list)
    rng: random.Random = field(default_factory=lambda: random.Random(7))

    def page(self, n: int) -> bytes:
        with self.lock:
            p = self.products[n]
            render_ms = self.rng.randrange(10, 100)  # changes on every answer, same length
        paragraphs = "".join(f"<p>{s}</p>" for s in p.description.split(". "))
        return (
            f"<html><head><title>{p.name}</title></head><body>"
            f"<aside>Your cart (0) - page rendered in {render_ms} ms</aside>"
            f"<main><h1>{p.name}</h1><span class='price'>{p.cents // 100}.{p.cents % 100:02d}"
            f"</span><span class='stock'>{p.stock} available</span>"
            f"<div class='description'>{paragraphs}</div></main></body></html>"
        ).encode()


def _shop(rng: random.Random) -> Shop:
    products = [
        Product(
            name=f"Mug {n}",
            cents=rng.randrange(1000, 9000),  # 10.00 .. 89.99: a price change keeps 4 digits
            stock=rng.randrange(11, 99),
            description=". ".join(
                " ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(6)
            ),
        )
        for n in range(COUNT)
    ]
    return Shop(products)


class _Handler(BaseHTTPRequestHandler):
    server: _ShopServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def do_GET(self) -> None:
        self._serve(head=False)

    def _serve(self, head: bool) -> None:
        shop = self.server.shop
        parts = self.path.strip("/").split("/")
        with shop.lock:
            shop.requests.append((self.command, self.path))
        if len(parts) != 2 or parts[0] != "p" or not parts[1].isdigit() or int(parts[1]) >= COUNT:
            body, status = b"not found", 404
        else:
            body, status = shop.page(int(parts[1])), 200
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))  # no ETag, no Last-Modified
        self.end_headers()
        if not head:
            self.wfile.write(body)


class _ShopServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, shop: Shop) -> None:
        self.shop = shop
        super().__init__(("127.0.0.1", 0), _Handler)


@dataclass
class Runs:
    shop: Shop
    results: list[Any]
    requests: list[list[tuple[str, str]]]


def _by_product(result: Any) -> dict[int, dict[str, Any]]:
    return {int(item["url"].rsplit("/", 1)[1]): item for item in result.items}


@pytest.fixture(scope="module")
def runs(crawl: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("shop")
    shop = _shop(random.Random(11))
    server = _ShopServer(shop)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    config = {
        "settings": {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_SQLITE_PATH": str(work / "shop.sqlite"),
            "FRESH_PROVIDER_AUTODETECT": False,
            "FRESH_FIELD_RULES": {"sidebar": {"ignore": [r"rendered in \d+ ms"]}},
            "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        },
        "start": [{"url": f"{base}/p/{n}", "callback": "parse_product"} for n in range(COUNT)],
    }
    out = Runs(shop, [], [])
    try:
        for run in range(3):
            if run == 1:
                with shop.lock:
                    for n in PRICES:  # 51.77 -> 52.77: same digits, same length
                        p = shop.products[n]
                        p.cents += 100 if p.cents < 8900 else -100
                    for n in STOCKS:  # "19 available" -> "18 available"
                        shop.products[n].stock -= 1
                    for n in DESCRIPTIONS:
                        p = shop.products[n]
                        p.description = p.description.replace(" ", " fresh ", 3)
            mark = len(shop.requests)
            result = crawl({**config, "clock_offset": run * SHIFT}, work)
            out.results.append(result)
            out.requests.append(shop.requests[mark:])
        yield out
    finally:
        server.shutdown()
        server.server_close()


def test_every_page_is_fetched_in_full_without_validators(runs: Runs) -> None:
    for requests in runs.requests:
        assert sorted(requests) == sorted(("GET", f"/p/{n}") for n in range(COUNT))
    assert runs.results[1].stat("fresh/length_probes") == 0


def test_every_price_stock_and_description_change_is_found_with_its_field(runs: Runs) -> None:
    items = _by_product(runs.results[1])
    assert len(items) == COUNT
    expected = {n: ["price"] for n in PRICES}
    expected.update({n: ["stock"] for n in STOCKS})
    expected.update({n: ["description"] for n in DESCRIPTIONS})
    found = {n: item["fresh_changed_fields"] for n, item in items.items() if item["fresh_changed"]}
    assert found == expected
    for n, item in items.items():
        assert item["fresh_changed_fields"] == expected.get(n, []), n
    stats = runs.results[1].stats
    assert (stats.get("fresh/changed"), stats.get("fresh/unchanged")) == (30, COUNT - 30)
    assert stats.get("fresh/items_changed") == 30
    for name in ("price", "stock", "description"):
        assert stats.get(f"fresh/field_changed/{name}") == 10
    assert "fresh/field_changed/sidebar" not in stats  # its render time is ignored by rule


def test_no_false_change_when_only_the_render_time_moves(runs: Runs) -> None:
    items = _by_product(runs.results[2])
    assert len(items) == COUNT
    assert [n for n, item in items.items() if item["fresh_changed"]] == []
    assert all(item["fresh_changed_fields"] == [] for item in items.values())
    assert runs.results[2].stat("fresh/unchanged") == COUNT
    assert runs.results[2].stat("fresh/changed") == 0


def test_a_new_page_reports_every_counted_field(runs: Runs) -> None:
    items = _by_product(runs.results[0])
    assert len(items) == COUNT
    for item in items.values():
        assert item["fresh_changed"] is True
        assert item["fresh_changed_fields"] == [
            "url", "name", "price", "stock", "description", "sidebar"
        ]  # fmt: skip
