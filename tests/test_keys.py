from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.utils.request import fingerprint

from scrapy_fresh.keys import url_host, url_key


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/",
        "http://example.com/a?b=2&a=1",
        "https://EXAMPLE.com:8443/p%C3%A4th?q=caf%C3%A9#frag",
        "http://example.com/ümlaut path",
    ],
)
def test_url_key_equals_scrapy_request_fingerprint(url):
    assert url_key(url) == fingerprint(Request(url)).hex()


def test_url_key_method_and_body_match_scrapy():
    req = Request("http://example.com/form", method="POST", body=b"a=1")
    assert url_key(req.url, "POST", b"a=1") == fingerprint(req).hex()
    assert url_key(req.url, "POST", b"a=1") != url_key(req.url)


def test_url_host_keeps_non_default_port_only():
    assert url_host("http://a.example:80/") == "a.example"
    assert url_host("http://a.example:8080/") == "a.example:8080"
