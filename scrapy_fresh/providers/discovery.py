"""Sitemap discovery: which sitemaps a crawl fetches on its own, and in which order.

A site tells crawlers where its sitemaps are in the ``Sitemap:`` lines of its robots.txt,
and a sitemap index lists more sitemaps (sitemaps.org protocol). Their ``<lastmod>``
values are past update times, the input of :math:`S_{past}^{known}` (Xu et al., seed
``xu-content-provider-friendly-crawler``, eq. 4), so the crawl follows them itself
(:setting:`FRESH_PROVIDER_SITEMAPS`). This module only decides *what* to follow; the
Scrapy glue (:class:`~scrapy_fresh.crawl.provider_middleware.FreshProviderMiddleware`) makes
the requests. No Scrapy, no clock, no network.

Limits, per run:

* **depth**: a robots.txt ``Sitemap:`` line (or a sitemap the spider fetched) is at
  depth 0, a sitemap listed by an index at depth ``d`` is at ``d + 1``; nothing deeper
  than :attr:`DiscoveryLimits.max_depth` is followed (``too_deep``). The protocol allows
  no nested indexes; the default of 2 tolerates one level of them.
* **count**: at most :attr:`DiscoveryLimits.max_per_host` sitemaps per host
  (``over_limit``); an index with more children gives the ones with the latest
  ``<lastmod>`` first (they are the ones that can hold updates not seen yet), then the
  others in document order.
* **site**: a ``Sitemap:`` line pointing to another site is not followed
  (``other_host``): its entries could only speak for the site that published them
  (:func:`~scrapy_fresh.providers._common.same_site`). Index entries are already
  checked by the sitemap reader.
* a sitemap already taken in this run is not taken again (``repeated``: an index that
  lists itself, robots.txt and an index naming the same file).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from scrapy_fresh.keys import url_host
from scrapy_fresh.providers._common import same_site
from scrapy_fresh.providers.sitemap import robots_sitemaps

__all__ = ["ROBOTS_MAX_BYTES", "DiscoveryLimits", "SitemapDiscovery", "robots_url_of"]

#: Bytes of a robots.txt read for ``Sitemap:`` lines; the rest is ignored, as the
#: Robots Exclusion Protocol (RFC 9309, section 2.5) allows parsers to do past 500 KiB.
ROBOTS_MAX_BYTES = 500 * 1024


@dataclass(frozen=True)
class DiscoveryLimits:
    """How far and how wide sitemap discovery goes in one run.

    :param max_depth: deepest sitemap followed (0: robots.txt lines only, no index
        children) (:setting:`FRESH_PROVIDER_MAX_SITEMAP_DEPTH`).
    :param max_per_host: most sitemaps taken per host in one run
        (:setting:`FRESH_PROVIDER_MAX_SITEMAPS`).
    """

    max_depth: int = 2
    max_per_host: int = 50

    def __post_init__(self) -> None:
        for name, low in (("max_depth", 0), ("max_per_host", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} ({value!r}) must be a whole number of {low} or more.")


def robots_url_of(url: str) -> str | None:
    """The robots.txt URL of ``url``'s origin (None if ``url`` is not http(s)).

    >>> robots_url_of("https://Example.com:8443/a/b?c")
    'https://example.com:8443/robots.txt'
    >>> robots_url_of("data:,x") is None
    True
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    netloc = parts.hostname.lower()
    if ":" in netloc:
        netloc = f"[{netloc}]"  # an IPv6 address
    if port is not None:
        netloc = f"{netloc}:{port}"
    return f"{parts.scheme}://{netloc}/robots.txt"


class SitemapDiscovery:
    """The sitemaps one run has taken, per host, and why it left others (see the module).

    >>> d = SitemapDiscovery(DiscoveryLimits(max_depth=1, max_per_host=2))
    >>> d.from_robots("Sitemap: /index.xml\\nSitemap: https://other.test/s.xml",
    ...               "https://a.test/robots.txt")
    [('https://a.test/index.xml', 0)]
    >>> d.from_index(0, ["https://a.test/old.xml", "https://a.test/new.xml",
    ...                  "https://a.test/index.xml"],
    ...              {"https://a.test/new.xml": 200.0, "https://a.test/old.xml": 100.0})
    [('https://a.test/new.xml', 1)]
    >>> d.from_index(1, ["https://a.test/deeper.xml"], {})
    []
    >>> sorted(d.skipped.items())
    [('other_host', 1), ('over_limit', 1), ('repeated', 1), ('too_deep', 1)]
    """

    def __init__(self, limits: DiscoveryLimits | None = None) -> None:
        self.limits = limits if limits is not None else DiscoveryLimits()
        #: Why sitemaps were left, by reason (this run).
        self.skipped: Counter[str] = Counter()
        self._taken: dict[str, set[str]] = {}
        self._origins: set[str] = set()

    def first_visit(self, url: str) -> str | None:
        """The robots.txt URL of ``url``'s origin the first time this run asks; else None."""
        robots = robots_url_of(url)
        if robots is None or robots in self._origins:
            return None
        self._origins.add(robots)
        return robots

    def seen_origin(self, robots_url: str) -> None:
        """Note that ``robots_url`` was read (by Scrapy) in this run."""
        self._origins.add(robots_url)

    def from_robots(self, text: str, robots_url: str) -> list[tuple[str, int]]:
        """The ``Sitemap:`` lines of ``text`` to follow, as ``(url, depth 0)``."""
        self._origins.add(robots_url)
        found: list[tuple[str, int]] = []
        for url in robots_sitemaps(text, robots_url):
            if not same_site(url, robots_url):
                self.skipped["other_host"] += 1
            elif self._take(url):
                found.append((url, 0))
        return found

    def from_index(
        self, depth: int, children: Sequence[str], lastmods: Mapping[str, float]
    ) -> list[tuple[str, int]]:
        """Which ``children`` of an index at ``depth`` to follow, as ``(url, depth + 1)``.

        ``lastmods`` holds the children's ``<lastmod>`` (newest first is the order).
        """
        child_depth = depth + 1
        unique = list(dict.fromkeys(children))
        if child_depth > self.limits.max_depth:
            self.skipped["too_deep"] += len(unique)
            return []
        order = sorted(range(len(unique)), key=lambda i: (-lastmods.get(unique[i], -math.inf), i))
        return [(unique[i], child_depth) for i in order if self._take(unique[i])]

    def taken(self, host: str) -> int:
        """How many sitemaps of ``host`` this run took."""
        return len(self._taken.get(host, ()))

    def _take(self, url: str) -> bool:
        host = url_host(url)
        taken = self._taken.setdefault(host, set())
        if url in taken:
            self.skipped["repeated"] += 1
            return False
        if len(taken) >= self.limits.max_per_host:
            self.skipped["over_limit"] += 1
            return False
        taken.add(url)
        return True
