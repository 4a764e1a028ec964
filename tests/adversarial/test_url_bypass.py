"""URLs from outside a crawl are judged as Scrapy fetches them (issue 18, item 1-2).

A property suite over :func:`scrapy_fresh.urls.accept_url` and the notify-server's
endpoints (a real server on 127.0.0.1): whatever the tricks (backslash, ``@``, ``%40``,
``%2F``, tabs and newlines, IPv6 literals, punycode, trailing dots, upper-case schemes,
port confusion), an accepted URL is fetched by ``scrapy.Request`` from the host the
key or the document covers, and nothing accepted reaches another host.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scrapy import Request

from scrapy_fresh.notify.record import record_changes
from scrapy_fresh.providers.document import parse_document
from scrapy_fresh.store.memory import MemoryStore
from scrapy_fresh.urls import URLRefused, accept_url, parse_host
from tests.adversarial.tricks import BYPASS, COVERED, fetched_from, urls
from tests.notify_support import NOW


def covered(host: str, scheme: str) -> tuple[str, int]:
    name, port = parse_host(host)
    return name, port or {"http": 80, "https": 443}[scheme]


HOSTS = st.sampled_from([COVERED, "example.com", "[::1]:8080", "xn--bcher-kva.example"])


@settings(max_examples=600, deadline=None)
@given(host=HOSTS, url=urls)
@example(host=COVERED, url=BYPASS)
@example(host=COVERED, url="http://127.0.0.1:18080\\@evil.example/x")
@example(host=COVERED, url="http://evil.example%40127.0.0.1:18080/x")
@example(host=COVERED, url="http://evil.example%2F@127.0.0.1:18080/x")
@example(host=COVERED, url="http://127.0.0.1:18080%2F@evil.example/x")
@example(host=COVERED, url="http://ev\til.example@127.0.0.1:18080/x")
@example(host="xn--bcher-kva.example", url="HTTP://BÜCHER.example./x")
def test_an_accepted_url_is_fetched_from_the_covered_host(host: str, url: str) -> None:
    try:
        accepted = accept_url(url, host=host)
    except URLRefused:
        return
    assert Request(url).url == accepted == Request(accepted).url
    scheme = urlsplit(accepted).scheme
    assert fetched_from(url) == covered(host, scheme)
    assert "@" not in urlsplit(accepted).netloc


@settings(max_examples=300, deadline=None)
@given(url=urls)
def test_a_document_entry_is_fetched_from_the_document_site(url: str) -> None:
    sitemap = "http://127.0.0.1:18080/sitemap.xml"
    body = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{quote(url, safe=":/@%?#[]")}</loc></url></urlset>'
    for entry in parse_document(body.encode(), sitemap, NOW).urls():
        assert fetched_from(entry)[0] == "127.0.0.1"
        assert Request(entry).url == entry


@pytest.mark.parametrize(
    "url",
    [
        BYPASS,
        "http://evil.example%2F@127.0.0.1:18080/x",
        "http://127.0.0.1:18080%2F@evil.example/x",
        "http://127.0.0.1:18080\t/x",
        "http://127.0.0.1:18080@evil.example/x",
        "https://127.0.0.1:18080/x\\y",
        "http://127.0.0.1%2Eevil.example/x",
        "http://2130706433/x",
        "http://127.0.0.1:18080.evil.example/x",
        "http://127.0.0.1.:18080/x",  # a trailing dot: refused, not compared
    ],
)
def test_malformed_urls_are_refused_everywhere(url: str) -> None:
    with pytest.raises(URLRefused) as refused:
        accept_url(url)
    assert not refused.value.other_host
    assert record_changes(MemoryStore(), [url], now=NOW).rejected


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1.evil.example:18080/x",
        "http://127.0.0.1:18081/x",
        "http://127.0.0.1/x",
        "http://[::ffff:127.0.0.1]:18080/x",
    ],
)
def test_urls_of_another_host_or_port_are_refused(url: str) -> None:
    with pytest.raises(URLRefused) as refused:
        accept_url(url, host=COVERED)
    assert refused.value.other_host


def test_urls_are_stored_as_scrapy_fetches_them() -> None:
    store = MemoryStore()
    result = record_changes(store, ["HTTP://Bücher.Example/a b"], now=NOW)
    assert result.added == ["http://xn--bcher-kva.example/a%20b"]
    assert [s.url for s in store.due(NOW, 10)] == ["http://xn--bcher-kva.example/a%20b"]
