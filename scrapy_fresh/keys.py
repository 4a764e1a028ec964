"""Record keys: one per canonical URL, equal to Scrapy's default request fingerprint.

:func:`url_key` computes the same SHA-1 that :func:`scrapy.utils.request.fingerprint`
gives a request with that method, URL and body and no extra headers (the default
``REQUEST_FINGERPRINTER_IMPLEMENTATION``), as a 40-character hex string, without
importing Scrapy. So the key of a record is the request fingerprint Scrapy itself
would use, and the store layer stays free of Request objects.

Keys are computed for every request a spider yields, so they sit on the scheduler's
hot path, where w3lib's general ``canonicalize_url`` takes about 35 µs. Most crawled
URLs are plain ASCII with nothing to normalise but the order of their query
arguments; for those (:data:`_PLAIN_URL`) the canonical form is built directly, in
a few microseconds. Every other URL goes through w3lib. Both give the same keys
(``tests/test_keys.py`` compares them on generated URLs; ``bench/url_key.py``
measures the difference).
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from urllib.parse import urlsplit

from w3lib.url import canonicalize_url

__all__ = ["url_host", "url_key"]


_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_QUERY_WORD = r"[A-Za-z0-9._~-]"
#: A port w3lib and urlsplit accept, as they write it: 1-65535 without leading zeros.
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"
#: URLs whose canonical form w3lib would leave as it is but for the query order, an
#: empty path ("/"), an empty query ("?") and the fragment: http(s), a lower-case
#: ASCII host (no IDNA "xn--" labels), a port of 1-65535 without leading zeros, a path of
#: characters w3lib keeps (no "%", ";" params, "'" or dot segments), a query of
#: ``name[=value]`` pairs of unreserved characters.
_PLAIN_URL = re.compile(
    rf"(https?)://((?!xn--){_LABEL}(?:\.(?!xn--){_LABEL})*(?::{_PORT})?)"
    r"((?:/[A-Za-z0-9._~!$&()*+,=:@-]*)*)"
    rf"(?:\?((?:{_QUERY_WORD}+(?:={_QUERY_WORD}*)?(?:&{_QUERY_WORD}+(?:={_QUERY_WORD}*)?)*)?))?"
    r"(?:#[A-Za-z0-9/?._~!$&()*+,=:@-]*)?"
)
#: The host and port of an http(s) URL without user info, IPv6 address or odd port.
_PLAIN_HOST = re.compile(rf"(?:https?|HTTPS?)://([A-Za-z0-9.-]+)(?::({_PORT}))?(?:[/?#]|$)")
_DOT_SEGMENT = re.compile(r"/\.\.?(?:/|$)")


def _plain_canonical(url: str) -> str | None:
    """w3lib's canonical form of a plain URL (:data:`_PLAIN_URL`), else None."""
    match = _PLAIN_URL.fullmatch(url)
    if match is None:
        return None
    scheme, netloc, path, query = match.groups()
    if _DOT_SEGMENT.search(path):
        return None
    canonical = f"{scheme}://{netloc}{path or '/'}"
    if not query:
        return canonical
    pairs = [pair if "=" in pair else f"{pair}=" for pair in query.split("&")]
    if len(pairs) > 1:
        pairs.sort(key=lambda pair: pair.partition("="))  # by name, then value
    return f"{canonical}?{'&'.join(pairs)}"


def url_key(url: str, method: str = "GET", body: bytes = b"") -> str:
    """Return the hex request fingerprint of ``method url`` (w3lib canonical form).

    >>> url_key("http://example.com/a?b=2&a=1") == url_key("http://example.com/a?a=1&b=2")
    True
    >>> len(url_key("http://example.com/"))
    40
    """
    if not body and type(url) is str and type(method) is str:
        return _bodiless_key(url, method)  # a body (a POST's, any size) is never cached
    return _key(url, method, body)


@lru_cache(maxsize=8192)  # a link-dense site links the same URLs from page after page
def _bodiless_key(url: str, method: str) -> str:
    return _key(url, method, b"")


def _key(url: str, method: str, body: bytes) -> str:
    canonical = _plain_canonical(url)
    if canonical is not None and method.isalpha() and method.isascii():
        # json.dumps(..., sort_keys=True) of the dict below: nothing here needs escaping.
        text = (
            f'{{"body": "{body.hex()}", "headers": {{}}, '
            f'"method": "{method.upper()}", "url": "{canonical}"}}'
        )
        return hashlib.sha1(text.encode()).hexdigest()
    return _general_key(url, method, body)


def _general_key(url: str, method: str, body: bytes) -> str:
    """:func:`url_key` by way of w3lib's ``canonicalize_url`` (any URL)."""
    data = {
        "method": method.upper(),
        "url": canonicalize_url(url),
        "body": body.hex(),
        "headers": {},
    }
    return hashlib.sha1(json.dumps(data, sort_keys=True).encode()).hexdigest()


def url_host(url: str) -> str:
    """Return the lower-case host (with a non-default port) that politeness is kept for.

    >>> url_host("https://Example.COM:8080/x")
    'example.com:8080'
    >>> url_host("http://example.com/")
    'example.com'
    """
    match = _PLAIN_HOST.match(url)
    if match is not None:
        host, port = match.groups()
        if port is None or port in ("80", "443"):
            return host.lower()
        return f"{host.lower()}:{port}"
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.port is not None and parts.port not in (80, 443):
        return f"{host}:{parts.port}"
    return host
