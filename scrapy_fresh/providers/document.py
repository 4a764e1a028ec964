"""Read any provider document: sniff its kind from the root element, then stream it.

:func:`parse_document` is the one entry point the glue uses: it accepts a sitemap, a
sitemap index, an RSS 2.0 / RSS 1.0 / Atom feed, gzip-compressed or not, and returns
:class:`~scrapy_fresh.providers.signals.Signals` whose report says what happened.
:func:`looks_like_document` decides cheaply whether a response is worth parsing.
"""

from __future__ import annotations

import re

from scrapy_fresh.providers.feed import FeedReader
from scrapy_fresh.providers.safexml import (
    DEFAULT_LIMITS,
    Limits,
    is_gzip,
    iter_xml,
    local_name,
)
from scrapy_fresh.providers.signals import ParseReport, Signals
from scrapy_fresh.providers.sitemap import SitemapReader

__all__ = ["DOCUMENT_KINDS", "looks_like_document", "parse_document"]

#: Root element -> document kind.
DOCUMENT_KINDS = {
    "urlset": "sitemap",
    "sitemapindex": "sitemapindex",
    "rss": "rss",
    "RDF": "rdf",
    "feed": "atom",
}
_ROOTS = re.compile(rb"<(?:[A-Za-z0-9_.-]+:)?(urlset|sitemapindex|rss|RDF|feed)[\s>/]")
_XML_TYPES = ("xml", "rss", "atom", "gzip", "x-gzip")


def looks_like_document(body: bytes, content_type: str | None = None) -> bool:
    """Whether ``body`` is probably a sitemap or feed (gzip counts when typed so).

    >>> looks_like_document(b'<?xml version="1.0"?>\\n<urlset xmlns="...">')
    True
    >>> looks_like_document(b"<!DOCTYPE html><html><body>feed</body></html>", "text/html")
    False
    """
    ctype = (content_type or "").lower()
    if is_gzip(body):
        return any(t in ctype for t in ("gzip", "xml", "octet-stream")) or not ctype
    if "html" in ctype:
        return False
    return _ROOTS.search(body[:2048]) is not None


def parse_document(body: bytes, url: str, now: float, limits: Limits = DEFAULT_LIMITS) -> Signals:
    """Return the signals in ``body`` (fetched from ``url`` at ``now``), safely.

    Never raises for bad input: the report's ``outcome`` and ``skipped`` say what was
    wrong. On ``too_large`` and ``entities_refused`` nothing is kept; on ``malformed``
    and ``truncated`` what came before the problem is kept.
    """
    signals = Signals(report=ParseReport())
    report = signals.report
    reader: SitemapReader | FeedReader | None = None
    depth = 0
    for event, element in iter_xml(body, limits, report):
        if event == "start":
            depth += 1
            if depth == 1:
                kind = DOCUMENT_KINDS.get(local_name(element.tag))
                report.kind = kind or "unknown"
                if kind in ("sitemap", "sitemapindex"):
                    reader = SitemapReader(kind, url, now, limits, signals)
                elif kind is not None:
                    reader = FeedReader(kind, url, now, limits, signals)
                else:
                    report.fail(
                        "unknown_document",
                        f"the root element <{local_name(element.tag)}> is not a sitemap "
                        "(urlset, sitemapindex) or a feed (rss, RDF, feed).",
                    )
                    break
            continue
        depth -= 1
        if reader is not None:
            reader.handle(event, element)
    if reader is not None:
        reader.finish()
    if report.outcome in ("too_large", "entities_refused"):
        return Signals(report=report)
    return signals
