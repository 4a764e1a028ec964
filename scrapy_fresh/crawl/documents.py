"""The spider's own sitemaps (``runtime.documents``).

A spider that reads a site's sitemaps learns from them which pages changed: a run that
skipped them as "not due" would see no change at all, however often it runs (a stock
:class:`~scrapy.spiders.SitemapSpider` run every few hours made no request). So a page
the provider middleware has parsed as a sitemap for the spider is remembered (meta
records ``document`` / ``<page key>``: ``{"kind": ...}``), and it is checked every run,
with its conditional check: a 304 when nothing changed. Feeds are not among them: they
say when to read them again (``sy:`` schedules, ``ttl``), and the provider signals
follow that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_fresh.exceptions import StoreError

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy_fresh.store.base import StateStore

__all__ = ["DOCUMENT_KINDS", "DOCUMENT_NAMESPACE", "KnownDocuments"]

#: Meta namespace of the pages known to be the spider's sitemaps.
DOCUMENT_NAMESPACE = "document"
#: The parsed kinds that make a page such a document (``ParseReport.kind``).
DOCUMENT_KINDS = frozenset({"sitemap", "sitemapindex"})


class KnownDocuments:
    """The keys of the pages known to be the spider's sitemaps: read from the store
    once, on first use, and added to as the crawl parses more."""

    def __init__(
        self, store: Callable[[], StateStore], error: Callable[[str, Exception], None]
    ) -> None:
        self._store = store
        self._error = error
        self._keys: set[str] | None = None

    def _known(self) -> set[str]:
        if self._keys is None:
            try:
                self._keys = {key for key, _ in self._store().meta(DOCUMENT_NAMESPACE)}
            except StoreError as exc:
                self._error("read the known sitemaps from", exc)
                self._keys = set()  # nothing forced this run; the records stay as they are
        return self._keys

    def __contains__(self, key: object) -> bool:
        return key in self._known()

    def add(self, key: str, kind: str) -> None:
        """Remember that the page ``key`` is a document of ``kind`` (written once; other
        kinds than :data:`DOCUMENT_KINDS` are left out)."""
        known = self._known()
        if kind not in DOCUMENT_KINDS or key in known:
            return
        try:
            self._store().put_meta(DOCUMENT_NAMESPACE, key, {"kind": kind})
        except StoreError as exc:
            self._error("note a sitemap in", exc)
            return
        known.add(key)
