"""URLs from outside a crawl, checked in the form Scrapy will fetch them.

A URL that a notification, a WebSub push, a sitemap or a feed hands us is fetched later
by ``scrapy.Request(url)``, which first rewrites it with w3lib's ``safe_url_string``
(the WHATWG URL parser: ``\\`` becomes ``/`` in http(s) URLs, tabs and newlines are
dropped, Unicode hosts become IDNA, the scheme and host are lower-cased). A check made
on the raw text can therefore pass a URL whose fetched host is another one:
``http://evil.example\\@127.0.0.1/`` is fetched from ``evil.example``.

:func:`accept_url` is the one gate: it normalises the URL exactly as ``scrapy.Request``
does, checks that form (http or https, a well-formed host, no user info, nothing left
that another parser could read differently) and, given the host a key covers or the
document the URL was listed in, that the URL is fetched from that host (or site). The
URL it returns is the normalised one: the one stored and fetched. No Scrapy here.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from w3lib.url import safe_url_string

__all__ = [
    "MAX_URL_LENGTH",
    "FetchURL",
    "URLRefused",
    "accept_url",
    "fetch_url",
    "normal_host",
    "parse_host",
    "same_site",
]

#: Longest URL accepted (the sitemap protocol's and IndexNow's limit).
MAX_URL_LENGTH = 2048
_DEFAULT_PORTS = {"http": 80, "https": 443}
_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
#: Characters never accepted in a URL: control characters, tabs and newlines (which
#: w3lib drops, unlike other parsers) and the backslash (read as "/" by WHATWG parsers
#: only). Spaces are let through: w3lib encodes them, and a space in a host is refused.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f\\]")


class URLRefused(ValueError):
    """A URL that is not accepted; ``str(exc)`` says why.

    :param other_host: True when the URL is well formed but fetched from another host
        than the one allowed (an answer of 422 rather than 400).
    """

    def __init__(self, reason: str, *, other_host: bool = False) -> None:
        super().__init__(reason)
        self.other_host = other_host


@dataclass(frozen=True)
class FetchURL:
    """A URL as Scrapy fetches it, with the host and port it is fetched from."""

    url: str
    scheme: str
    #: Lower-case host name (IDNA ASCII) or IP address (IPv6 without brackets).
    host: str
    #: The port connected to (the scheme's default when the URL names none).
    port: int

    @property
    def authority(self) -> str:
        """``host[:port]``, the port only when it is not the scheme's default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = _DEFAULT_PORTS[self.scheme]
        return host if self.port == default else f"{host}:{self.port}"


def _check_host(host: str) -> str:
    """``host`` (from a normalised URL) in one spelling per address; raise if malformed."""
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        pass
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise URLRefused("its host is not a valid host name or IP address")
    if labels[-1].isdigit() or labels[-1].startswith("0x"):
        raise URLRefused("its host looks like an IP address written unusually")
    for label in labels:
        if label.startswith("xn--"):
            try:
                label.encode("ascii").decode("idna")
            except UnicodeError:
                raise URLRefused("its host has an invalid IDNA (xn--) label") from None
    return host


def fetch_url(url: object) -> FetchURL:
    """Normalise ``url`` as ``scrapy.Request(url)`` does and check that form.

    >>> fetch_url("HTTP://Bücher.example:8080/a b").url
    'http://xn--bcher-kva.example:8080/a%20b'
    >>> fetch_url("http://evil.example\\\\@127.0.0.1/")
    Traceback (most recent call last):
    ...
    scrapy_fresh.urls.URLRefused: contains control characters, tabs, newlines or a backslash

    Raises :class:`URLRefused` naming what is wrong.
    """
    if not isinstance(url, str) or not url:
        raise URLRefused("not a string")
    if len(url) > MAX_URL_LENGTH:
        raise URLRefused(f"longer than {MAX_URL_LENGTH} characters")
    if _UNSAFE.search(url):
        raise URLRefused("contains control characters, tabs, newlines or a backslash")
    try:
        fetched = safe_url_string(url, "utf-8")
        parts = urlsplit(fetched)
        port = parts.port
    except ValueError:
        raise URLRefused("not a valid URL") from None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or "://" not in fetched:
        raise URLRefused("not an absolute http(s) URL")
    if "@" in parts.netloc:
        raise URLRefused("has user info (user@ or user:password@ before the host)")
    if _UNSAFE.search(fetched) or len(fetched) > MAX_URL_LENGTH:
        raise URLRefused("is not the same URL once normalised")
    host = _check_host(parts.hostname)
    return FetchURL(fetched, parts.scheme, host, port or _DEFAULT_PORTS[parts.scheme])


def parse_host(text: str) -> tuple[str, int | None]:
    """The host and port (None: not given) of ``host[:port]``, spelt as :func:`fetch_url`
    spells them.

    >>> parse_host("Bücher.example:8080"), parse_host("[::1]")
    (('xn--bcher-kva.example', 8080), ('::1', None))
    """
    if not isinstance(text, str) or not text or re.search(r"[/?#@\\]", text):
        raise URLRefused(f"{str(text)[:100]!r} is not a host[:port]")
    fetched = fetch_url(f"http://{text}/")
    explicit = urlsplit(fetched.url).port is not None
    return fetched.host, fetched.port if explicit else None


def normal_host(text: str) -> str:
    """``host[:port]`` spelt as :func:`fetch_url` spells hosts (IPv6 in brackets).

    >>> normal_host("EXAMPLE.com:8080"), normal_host("[0:0::1]")
    ('example.com:8080', '[::1]')
    """
    name, port = parse_host(text)
    name = f"[{name}]" if ":" in name else name
    return name if port is None else f"{name}:{port}"


def accept_url(url: object, *, host: str | None = None, site: str | None = None) -> str:
    """Return ``url`` as Scrapy will fetch it, if it may enter the store.

    :param url: the URL as received.
    :param host: ``host[:port]`` a key covers: the URL must be fetched from that host,
        on that port (without one: on its scheme's default port).
    :param site: the URL of the document that listed ``url``: the URL must belong to
        its site (:func:`same_site`).

    >>> accept_url("http://127.0.0.1:18080/x", host="127.0.0.1:18080")
    'http://127.0.0.1:18080/x'
    >>> accept_url("http://evil.example%2F@127.0.0.1:18080/", host="127.0.0.1:18080")
    Traceback (most recent call last):
    ...
    scrapy_fresh.urls.URLRefused: has user info (user@ or user:password@ before the host)

    Raises :class:`URLRefused` (``other_host`` set when only the host is wrong).
    """
    fetched = fetch_url(url)
    if host is not None and not _on_host(fetched, host):
        raise URLRefused(f"is on the host {fetched.authority}, not {host}", other_host=True)
    if site is not None and not same_site(fetched.url, site):
        raise URLRefused(
            f"is on the host {fetched.authority}, outside the site of {site}", other_host=True
        )
    return fetched.url


def _on_host(fetched: FetchURL, host: str) -> bool:
    name, port = parse_host(host)
    wanted = _DEFAULT_PORTS[fetched.scheme] if port is None else port
    return fetched.host == name and fetched.port == wanted


def _is_ip(host: str) -> bool:
    return ":" in host or host.rsplit(".", 1)[-1].isdigit()


def _site_host(url: str) -> str:
    try:
        return fetch_url(url).host
    except URLRefused:
        return ""


def same_site(url: str, document_url: str) -> bool:
    """Whether ``url`` belongs to the site that published ``document_url``.

    The hosts (as fetched) are equal once a leading ``www.`` is dropped, or one is a
    subdomain of the other's parent domain (``feeds.example.com`` speaks for
    ``www.example.com``). A document may only make claims about its own site (the
    sitemap protocol's rule; anything else would let one host steer the crawl of
    another).

    >>> same_site("https://www.example.com/a", "https://example.com/sitemap.xml")
    True
    >>> same_site("https://news.example.com/a", "https://feeds.example.com/rss")
    True
    >>> same_site("https://evil.test/a", "https://example.com/sitemap.xml")
    False
    """
    a, b = _site_host(url), _site_host(document_url)
    if not a or not b:
        return False
    if _is_ip(a) or _is_ip(b):
        return a == b
    a, b = a.removeprefix("www."), b.removeprefix("www.")
    if a == b or a.endswith("." + b) or b.endswith("." + a):
        return True
    parent_a, parent_b = a.split(".", 1)[-1], b.split(".", 1)[-1]
    return "." in parent_a and parent_a == parent_b
