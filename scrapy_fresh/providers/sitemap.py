"""Sitemaps (``<urlset>``) and sitemap indexes (``<sitemapindex>``), gzip or not.

Signals (see ../shared/DESIGN.md, provider table):

* ``<lastmod>`` of a ``<url>`` -> :class:`~scrapy_fresh.providers.signals.PastUpdate`
  (signal ``sitemap``): a past update time, the smart level of Xu et al. (eq. 4).
* ``<changefreq>`` -> one :class:`~scrapy_fresh.providers.signals.AnnouncedUpdate`
  (signal ``changefreq``) at the next multiple of the period after the last
  modification, with the low probability :data:`CHANGEFREQ_PROBABILITY`: the protocol
  calls it "a hint and not a command", so it is a weak prior, not a schedule.
* ``<lastmod>`` of a ``<sitemap>`` in an index -> a past update of that child sitemap;
  its URL goes to :attr:`~scrapy_fresh.providers.signals.Signals.sitemaps`.

:func:`robots_sitemaps` reads the ``Sitemap:`` lines of a robots.txt.
"""

from __future__ import annotations

from urllib.parse import urljoin

from lxml import etree

from scrapy_fresh.providers._common import check_date, clean_url, count_entry
from scrapy_fresh.providers.safexml import Limits, child_text, local_name
from scrapy_fresh.providers.signals import AnnouncedUpdate, PastUpdate, Signals
from scrapy_fresh.urls import accept_url

__all__ = [
    "CHANGEFREQ_PROBABILITY",
    "CHANGEFREQ_SECS",
    "SitemapReader",
    "next_period_instant",
    "robots_sitemaps",
]

#: Seconds per ``<changefreq>`` value; ``always`` and ``never`` announce nothing.
CHANGEFREQ_SECS = {
    "hourly": 3600.0,
    "daily": 86400.0,
    "weekly": 7 * 86400.0,
    "monthly": 30 * 86400.0,
    "yearly": 365 * 86400.0,
}
#: Probability given to the update a ``<changefreq>`` suggests (a weak prior).
CHANGEFREQ_PROBABILITY = 0.3


def next_period_instant(base: float, period: float, now: float) -> float:
    """The first ``base + k * period`` (k >= 1 integer) strictly after ``now``.

    >>> next_period_instant(0.0, 10.0, 25.0)
    30.0
    >>> next_period_instant(100.0, 10.0, 25.0)
    110.0
    """
    if base >= now:
        return base + period
    k = int((now - base) // period) + 1
    return base + k * period


class SitemapReader:
    """Turn the elements of a ``<urlset>`` or ``<sitemapindex>`` into signals."""

    def __init__(self, kind: str, url: str, now: float, limits: Limits, signals: Signals) -> None:
        self.kind = kind  # "sitemap" or "sitemapindex"
        self.url = url
        self.now = now
        self.limits = limits
        self.signals = signals
        self.entry = "url" if kind == "sitemap" else "sitemap"

    def handle(self, event: str, element: etree._Element) -> None:
        if event != "end" or local_name(element.tag) != self.entry:
            return
        try:
            if not count_entry(self.signals.report, self.limits.max_entries):
                return
            self._entry(element)
        finally:
            _forget(element)

    def _entry(self, element: etree._Element) -> None:
        report = self.signals.report
        loc = clean_url(child_text(element, "loc", report), self.url, report)
        if loc is None:
            return
        lastmod = check_date(child_text(element, "lastmod", report), self.now, report)
        if self.kind == "sitemapindex":
            self.signals.sitemaps.append(loc)
        if lastmod is not None:
            self.signals.past.append(PastUpdate(loc, lastmod, "sitemap"))
        if self.kind != "sitemap":
            return
        freq = child_text(element, "changefreq", report)
        if freq is None:
            return
        freq = freq.strip().lower()
        if freq in ("always", "never"):
            return
        period = CHANGEFREQ_SECS.get(freq)
        if period is None:
            report.skip("bad_changefreq")
            return
        base = lastmod if lastmod is not None else self.now
        when = next_period_instant(base, period, self.now)
        self.signals.announced.append(
            AnnouncedUpdate(loc, when, CHANGEFREQ_PROBABILITY, "changefreq")
        )

    def finish(self) -> None:
        """Nothing is pending at the end of a sitemap."""


def _forget(element: etree._Element) -> None:
    """Free an entry once read: its content, and the siblings read before it."""
    element.clear(keep_tail=False)
    parent = element.getparent()
    if parent is not None:
        while element.getprevious() is not None:
            del parent[0]


def robots_sitemaps(text: str, robots_url: str) -> list[str]:
    """The URLs of the ``Sitemap:`` lines of a robots.txt (absolute http(s) only).

    Unlike sitemap entries these may point to other hosts (the protocol's
    cross-submission), so no same-site check is made here.

    >>> robots_sitemaps("User-agent: *\\nSitemap: https://a.test/s.xml\\nsitemap: /x.xml\\n"
    ...                 "Sitemap: ftp://a.test/y", "https://a.test/robots.txt")
    ['https://a.test/s.xml', 'https://a.test/x.xml']
    """
    found: list[str] = []
    for line in text.splitlines()[:100_000]:
        name, sep, value = line.partition(":")
        if not sep or name.strip().lower() != "sitemap":
            continue
        value = value.split("#", 1)[0].strip()
        try:
            url = accept_url(urljoin(robots_url, value)) if value else None
        except ValueError:  # URLRefused, or urljoin's on a malformed address
            continue
        if url is not None and url not in found:
            found.append(url)
    return found
