"""Benchmark: record keys by the plain-URL fast path against w3lib's canonicalize_url.

:func:`scrapy_fresh.keys.url_key` builds the canonical form of plain ASCII URLs itself
and hands every other URL to w3lib (``_general_key``); both give the same key
(``tests/test_keys.py``). This measures both on the same URLs, in one run:

* ``plain`` -- the scheduler benchmark's URLs (``http://host7.example/page/123?ref=...``);
* ``mixed`` -- one URL in four needs w3lib (percent escapes, upper-case host, dot
  segments, non-ASCII), to show the cost of the check when the fast path fails.

Usage::

    python bench/url_key.py [--urls 100000]
"""

from __future__ import annotations

import argparse
import platform
import time

from scrapy_fresh.keys import _general_key, _plain_canonical, url_key

_ODD = [
    "http://Host{i}.example/page/{i}",
    "http://host{i}.example/a/../page/{i}",
    "http://host{i}.example/caf%C3%A9/{i}",
    "http://host{i}.example/café/{i}?q=ü",
]


def plain_urls(n: int) -> list[str]:
    return [
        f"http://host{i % 100}.example/page/{i}?ref=listing&lang=en&sort=recent" for i in range(n)
    ]


def mixed_urls(n: int) -> list[str]:
    plain = plain_urls(n)
    return [_ODD[(i // 4) % 4].format(i=i) if i % 4 == 3 else u for i, u in enumerate(plain)]


def per_url_us(fn: object, urls: list[str]) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for u in urls:
            fn(u, "GET", b"")  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return best / len(urls) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=100_000, help="URLs per set (100000)")
    args = parser.parse_args(argv)
    print(f"Machine: Python {platform.python_version()}, {platform.machine()}")
    print()
    print("| URL set | share on the fast path | w3lib µs/URL | url_key µs/URL | speed-up |")
    print("|---|---:|---:|---:|---:|")
    for name, urls in (("plain", plain_urls(args.urls)), ("mixed", mixed_urls(args.urls))):
        assert all(url_key(u) == _general_key(u, "GET", b"") for u in urls[:2000])
        share = sum(_plain_canonical(u) is not None for u in urls) / len(urls)
        slow, fast = per_url_us(_general_key, urls), per_url_us(url_key, urls)
        print(f"| {name} | {share:.0%} | {slow:.1f} | {fast:.1f} | {slow / fast:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
