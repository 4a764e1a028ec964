"""Requests stored as JSON data in a record and rebuilt for a later run."""

from __future__ import annotations

import json
from typing import Any

from scrapy import Request, Spider

from scrapy_fresh.crawl.requestinfo import rebuild_request, request_info
from scrapy_fresh.keys import url_key


class _Spider(Spider):
    name = "info"

    def parse_page(self, response: Any) -> Any:
        return []

    def failed(self, failure: Any) -> Any:
        return []


def test_round_trip_keeps_what_the_page_needs() -> None:
    spider = _Spider()
    request = Request(
        "http://a.example/search",
        method="POST",
        body=b"q=ducks",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        callback=spider.parse_page,
        errback=spider.failed,
        priority=5,
        cb_kwargs={"page": 2},
        meta={
            "fresh_provider": "smart",
            "download_slot": "x",
            "retry_times": 1,
            "fresh_key": "k",
            "depth": 3,
            "obj": object(),
            "_private": 1,
            "cookiejar": 7,
        },
    )
    info = request_info(request, spider)
    assert json.loads(json.dumps(info)) == info
    assert info["meta"] == {"fresh_provider": "smart", "cookiejar": 7}
    rebuilt = rebuild_request(info, request.url, spider)
    assert rebuilt.method == "POST"
    assert rebuilt.body == b"q=ducks"
    assert rebuilt.callback == spider.parse_page
    assert rebuilt.errback == spider.failed
    assert rebuilt.priority == 5
    assert rebuilt.cb_kwargs == {"page": 2}
    assert rebuilt.headers[b"Content-Type"] == b"application/x-www-form-urlencoded"
    assert url_key(rebuilt.url, rebuilt.method, rebuilt.body) == url_key(
        request.url, request.method, request.body
    )


def test_callbacks_that_are_not_spider_methods_fall_back_to_parse() -> None:
    spider = _Spider()
    info = request_info(Request("http://a.example/", callback=lambda r: None), spider)
    assert "callback" not in info
    assert rebuild_request(info, "http://a.example/", spider).callback is None
    # A callback renamed since the record was written.
    rebuilt = rebuild_request(
        {"url": "http://a.example/", "callback": "gone"}, "http://a.example/", spider
    )
    assert rebuilt.callback is None


def test_an_empty_record_request_rebuilds_a_plain_get() -> None:
    rebuilt = rebuild_request({}, "http://a.example/x", _Spider())
    assert rebuilt.url == "http://a.example/x"
    assert rebuilt.method == "GET"
