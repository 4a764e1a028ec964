"""Helpers shared by the sitemap and feed readers: URLs, hosts, numbers, dates."""

from __future__ import annotations

from urllib.parse import urljoin

from scrapy_fresh.dates import parse_rfc822, parse_w3c
from scrapy_fresh.providers.signals import ParseReport
from scrapy_fresh.urls import MAX_URL_LENGTH, accept_url, same_site

__all__ = ["FUTURE_TOLERANCE_SECS", "MAX_URL_LENGTH", "check_date", "clean_url", "same_site"]

#: Past-update dates later than ``now`` by more than this are skipped (``future_date``):
#: clocks differ a little, but a "last modified" next week is an error or a lie.
FUTURE_TOLERANCE_SECS = 3600.0


def clean_url(raw: str | None, base: str, report: ParseReport) -> str | None:
    """``raw`` resolved against ``base``, as Scrapy will fetch it, if it is a usable
    http(s) URL of the same site (:func:`~scrapy_fresh.urls.accept_url`).

    Counts ``bad_url`` (missing, too long, not http(s), malformed) or ``other_host``.
    """
    if not raw:
        report.skip("bad_url")
        return None
    try:
        return accept_url(urljoin(base, raw.strip()), site=base)
    except ValueError as exc:  # URLRefused, or urljoin's on a malformed address
        report.skip("other_host" if getattr(exc, "other_host", False) else "bad_url")
        return None


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
