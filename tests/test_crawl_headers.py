"""header() and header_items() read a Scrapy Headers object's dict straight: the same
answers as its get() and items()."""

from __future__ import annotations

from scrapy.http.headers import Headers

from scrapy_fresh.crawl.runtime import header, header_items


def headers() -> Headers:
    h = Headers({"Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT", "etag": b'"x"'})
    h.appendlist("Set-Cookie", "a=1")
    h.appendlist("set-cookie", "b=2")
    h["X-Empty"] = []
    h["X-Number"] = 7
    return h


def test_header_answers_as_headers_get():
    h = headers()
    for name in ("last-modified", "ETag", "ETAG", "set-cookie", "x-empty", "x-number", "age"):
        got = h.get(name)
        assert header(h, name) == (None if got is None else got.decode("latin-1")), name
    assert header(h, "set-cookie") == "b=2"  # the last value
    assert header(h, "x-empty") is None
    assert header(h, "age") is None


def test_header_items_are_headers_items():
    h = headers()
    assert list(header_items(h)) == list(h.items())
    plain = {b"ETag": [b'"abc"']}
    assert list(header_items(plain)) == list(plain.items())
    assert header({"etag": '"y"'}, "etag") == '"y"'  # any mapping with get()
