"""Helpers shared by the sitemap and feed readers: URLs, hosts, numbers, dates."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

from scrapy_fresh.providers.dates import parse_rfc822, parse_w3c
from scrapy_fresh.providers.signals import ParseReport

__all__ = ["FUTURE_TOLERANCE_SECS", "MAX_URL_LENGTH", "check_date", "clean_url", "same_site"]

#: Longest URL accepted (the sitemap protocol's limit).
MAX_URL_LENGTH = 2048
#: Past-update dates later than ``now`` by more than this are skipped (``future_date``):
#: clocks differ a little, but a "last modified" next week is an error or a lie.
FUTURE_TOLERANCE_SECS = 3600.0


def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def same_site(url: str, document_url: str) -> bool:
    """Whether ``url`` belongs to the site that published ``document_url``.

    The hosts are equal once a leading ``www.`` is dropped, or one is a subdomain of
    the other's parent domain (``feeds.example.com`` speaks for ``www.example.com``).
    A document may only make claims about its own site (the sitemap protocol's rule;
    anything else would let one host steer the crawl of another).

    >>> same_site("https://www.example.com/a", "https://example.com/sitemap.xml")
    True
    >>> same_site("https://news.example.com/a", "https://feeds.example.com/rss")
    True
    >>> same_site("https://evil.test/a", "https://example.com/sitemap.xml")
    False
    """
    a, b = _host(url), _host(document_url)
    if not a or not b:
        return False
    a, b = a.removeprefix("www."), b.removeprefix("www.")
    if a == b or a.endswith("." + b) or b.endswith("." + a):
        return True
    parent_a, parent_b = a.split(".", 1)[-1], b.split(".", 1)[-1]
    return "." in parent_a and parent_a == parent_b


def clean_url(raw: str | None, base: str, report: ParseReport) -> str | None:
    """``raw`` resolved against ``base`` if it is a usable http(s) URL of the same site.

    Counts ``bad_url`` (missing, too long, not http(s)) or ``other_host``.
    """
    if not raw:
        report.skip("bad_url")
        return None
    raw = raw.strip()
    if len(raw) > MAX_URL_LENGTH or any(c in raw for c in "\r\n\t\x00"):
        report.skip("bad_url")
        return None
    try:
        url = urljoin(base, raw)
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError on a bad port
    except ValueError:
        report.skip("bad_url")
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        report.skip("bad_url")
        return None
    if not same_site(url, base):
        report.skip("other_host")
        return None
    return url


def check_date(
    raw: str | None, now: float, report: ParseReport, *, rfc822: bool = False
) -> float | None:
    """Parse a date (W3C, or RFC 822 with ``rfc822``; the other format as a fallback).

    Counts ``bad_date`` or ``future_date``; a missing value is not counted.
    """
    if raw is None:
        return None
    first, second = (parse_rfc822, parse_w3c) if rfc822 else (parse_w3c, parse_rfc822)
    value = first(raw)
    if value is None:
        value = second(raw)
    if value is None:
        report.skip("bad_date")
        return None
    if value > now + FUTURE_TOLERANCE_SECS:
        report.skip("future_date")
        return None
    return value


def count_entry(report: ParseReport, max_entries: int) -> bool:
    """Count one more entry of a document; False (and the document marked truncated, the
    entry skipped) once there are more than ``max_entries``: the first ones are kept."""
    report.entries += 1
    if report.entries <= max_entries:
        return True
    report.skip("over_limit")
    if report.outcome == "ok":
        report.fail(
            "truncated", f"more than {max_entries} entries; the first {max_entries} are kept."
        )
    return False
