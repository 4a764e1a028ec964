"""Record keys: one per canonical URL, equal to Scrapy's default request fingerprint.

:func:`url_key` computes the same SHA-1 that :func:`scrapy.utils.request.fingerprint`
gives a request with that method, URL and body and no extra headers (the default
``REQUEST_FINGERPRINTER_IMPLEMENTATION``), as a 40-character hex string, without
importing Scrapy. So the key of a record is the request fingerprint Scrapy itself
would use, and the store layer stays free of Request objects.
"""

from __future__ import annotations

import hashlib
import json
from urllib.parse import urlsplit

from w3lib.url import canonicalize_url

__all__ = ["url_host", "url_key"]


def url_key(url: str, method: str = "GET", body: bytes = b"") -> str:
    """Return the hex request fingerprint of ``method url`` (w3lib canonical form).

    >>> url_key("http://example.com/a?b=2&a=1") == url_key("http://example.com/a?a=1&b=2")
    True
    >>> len(url_key("http://example.com/"))
    40
    """
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
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.port is not None and parts.port not in (80, 443):
        return f"{host}:{parts.port}"
    return host
