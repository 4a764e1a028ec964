"""What content providers publish about their updates, read safely (no Scrapy here).

* :func:`~scrapy_fresh.providers.document.parse_document`: sitemaps, sitemap indexes,
  RSS and Atom feeds (gzip or not) -> :class:`~scrapy_fresh.providers.signals.Signals`.
* :func:`~scrapy_fresh.providers.http.header_signals`: Last-Modified, Cache-Control
  max-age, Expires.
* :func:`~scrapy_fresh.providers.sitemap.robots_sitemaps`: ``Sitemap:`` lines.

See :doc:`/topics/providers`.
"""

from __future__ import annotations

from scrapy_fresh.providers.document import looks_like_document, parse_document
from scrapy_fresh.providers.http import header_signals
from scrapy_fresh.providers.safexml import DEFAULT_LIMITS, Limits
from scrapy_fresh.providers.signals import (
    SIGNAL_KINDS,
    AnnouncedUpdate,
    NotBefore,
    ParseReport,
    PastUpdate,
    QuietWindow,
    Signals,
)
from scrapy_fresh.providers.sitemap import robots_sitemaps

__all__ = [
    "DEFAULT_LIMITS",
    "SIGNAL_KINDS",
    "AnnouncedUpdate",
    "Limits",
    "NotBefore",
    "ParseReport",
    "PastUpdate",
    "QuietWindow",
    "Signals",
    "header_signals",
    "looks_like_document",
    "parse_document",
    "robots_sitemaps",
]
