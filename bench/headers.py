"""Benchmark: reading response headers, Scrapy's ``Headers`` API against its dict.

:func:`scrapy_fresh.crawl.runtime.header` reads a header's last value from the dict a
Scrapy ``Headers`` object keeps under normalised names, and
:func:`~scrapy_fresh.crawl.runtime.header_items` walks that dict; both give what
``Headers.get`` and ``Headers.items`` give (``tests/test_crawl_headers.py``). A page's
answer is read about nine times by name and walked twice (the conditional check, the
provider signals, the visit log). This measures both ways on an nginx-like answer:

* ``get`` -- the nine reads by name, decoded (``Headers.get`` against ``header``);
* ``items`` -- one walk of every header (``Headers.items`` against ``header_items``).

Usage::

    python bench/headers.py [--answers 20000]
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable

from scrapy.http.headers import Headers

from scrapy_fresh.crawl.runtime import header, header_items

NAMES = (
    "etag", "last-modified", "content-length", "last-modified", "cache-control",
    "expires", "date", "age", "content-type",
)  # fmt: skip


def answer() -> Headers:
    return Headers(
        {
            "Server": "nginx/1.22.1",
            "Date": "Thu, 26 Nov 2026 21:00:00 GMT",
            "Content-Type": "text/html",
            "Content-Length": "5483",
            "Last-Modified": "Thu, 26 Nov 2026 20:59:00 GMT",
            "Connection": "keep-alive",
            "ETag": '"6b08a30b-156b"',
            "Accept-Ranges": "bytes",
        }
    )


def scrapy_get(h: Headers) -> None:
    for name in NAMES:
        value = h.get(name)
        _ = value.decode("latin-1") if value is not None else None


def dict_get(h: Headers) -> None:
    for name in NAMES:
        header(h, name)


def scrapy_items(h: Headers) -> None:
    for name, values in h.items():
        len(name) + len(values)


def dict_items(h: Headers) -> None:
    for name, values in header_items(h):
        len(name) + len(values)


def per_answer_us(fn: Callable[[Headers], None], answers: list[Headers]) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for h in answers:
            fn(h)
        best = min(best, time.perf_counter() - t0)
    return best / len(answers) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=20_000, help="answers read (20000)")
    args = parser.parse_args(argv)
    answers = [answer() for _ in range(args.answers)]
    h = answers[0]
    assert [header(h, n) for n in NAMES] == [
        None if h.get(n) is None else h.get(n).decode("latin-1")  # type: ignore[union-attr]
        for n in NAMES
    ]
    assert list(header_items(h)) == list(h.items())
    print(f"Machine: Python {platform.python_version()}, {platform.machine()}")
    print()
    print("| read | Headers API µs/answer | its dict µs/answer | speed-up |")
    print("|---|---:|---:|---:|")
    for name, slow_fn, fast_fn in (
        ("get (9 names)", scrapy_get, dict_get),
        ("items", scrapy_items, dict_items),
    ):
        slow, fast = per_answer_us(slow_fn, answers), per_answer_us(fast_fn, answers)
        print(f"| {name} | {slow:.2f} | {fast:.2f} | {slow / fast:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
