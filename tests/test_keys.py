from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy import Request
from scrapy.utils.request import fingerprint

from scrapy_fresh.keys import _general_key, _plain_canonical, url_host, url_key


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


# -- the fast path for plain URLs gives the same keys as w3lib --------------------------

# Characters near the edges of what the fast path accepts: it must either build
# w3lib's canonical form exactly or hand the URL to w3lib.
_URL_CHARS = "aAzZ09-._~!$&'()*+,;=:@/?#%[]| é\t"
_hosts = st.sampled_from(
    [
        "example.com", "a.example", "EXAMPLE.com", "xn--bcher-kva.example", "1.2.3.4",
        "a..b", ".a", "a-", "-a", "a" * 64 + ".com", "exämple.com", "[::1]", "user@host",
    ]
)  # fmt: skip
_ports = st.sampled_from(
    ["", ":80", ":8080", ":0", ":080", ":65535", ":99999", ":", ":54321", ":65536", ":65529",
     ":10000", ":09999", ":100000", ":6553", ":64999"]
)  # fmt: skip
_paths = st.text(alphabet=_URL_CHARS, max_size=20) | st.sampled_from(
    ["", "/", "/a/../b", "/./a", "/a/.", "/a/..", "/.well-known/x", "/a.b/c", "/%7e", "/a;b"]
)
_queries = st.lists(
    st.tuples(
        st.text(alphabet="abAB09-._~+%=é", max_size=4),
        st.none() | st.text(alphabet="abAB09-._~+%=é", max_size=4),
    ),
    max_size=4,
)


@st.composite
def _urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "ftp"]))
    url = f"{scheme}://{draw(_hosts)}{draw(_ports)}"
    path = draw(_paths)
    url += path if not path or path.startswith("/") else "/" + path
    pairs = draw(_queries)
    if pairs or draw(st.booleans()):
        url += "?" + "&".join(k if v is None else f"{k}={v}" for k, v in pairs)
    if draw(st.booleans()):
        url += "#" + draw(st.text(alphabet=_URL_CHARS, max_size=5))
    return url


@given(_urls(), st.sampled_from(["GET", "get", "POST", "HEAD"]), st.binary(max_size=4))
@settings(max_examples=3000, deadline=None)
def test_fast_key_equals_w3lib_key(url, method, body):
    try:
        expected = _general_key(url, method, body)
    except ValueError:  # e.g. a port above 65535: w3lib refuses the URL
        with pytest.raises(ValueError):
            url_key(url, method, body)
        return
    assert url_key(url, method, body) == expected


@pytest.mark.parametrize(
    "url",
    [
        "http://host7.example/page/123?ref=listing&lang=en&sort=recent",
        "https://example.com:8443/a/b?z=1&a&a=0#top",
        "http://127.0.0.1:54321/page-17.html",
        "http://example.com",
        "http://example.com/x?",
    ],
)
def test_plain_urls_take_the_fast_path_and_match_scrapy(url):
    assert _plain_canonical(url) is not None
    assert url_key(url) == fingerprint(Request(url)).hex()


@pytest.mark.parametrize(
    "url",
    ["http://example.com/a/../b", "http://example.com/%7e", "http://xn--bcher-kva.example/",
     "http://Example.com/", "http://example.com/a?x=1&&y=2", "http://example.com/a;p"],
)  # fmt: skip
def test_urls_w3lib_would_change_take_the_general_path(url):
    assert _plain_canonical(url) is None
    assert url_key(url) == fingerprint(Request(url)).hex()


def _general_host(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.port is not None and parts.port not in (80, 443):
        return f"{host}:{parts.port}"
    return host


@given(_urls())
@settings(max_examples=2000, deadline=None)
def test_fast_host_equals_urlsplit_host(url):
    try:
        expected = _general_host(url)
    except ValueError:
        with pytest.raises(ValueError):
            url_host(url)
        return
    assert url_host(url) == expected
