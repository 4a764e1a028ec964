"""A local demo site that changes like a small slice of the web and knows the truth.

``scrapy-fresh demo-site`` serves it on 127.0.0.1. Three sections, one per provider
level of Xu et al. (seed ``xu-content-provider-friendly-crawler``, Section 3):

* ``/news/``: a *super* provider. Stories change at announced slots (RSS 2.0 with
  ``sy:updatePeriod``/``sy:updateFrequency``/``sy:updateBase``, item ``pubDate``,
  ``<ttl>``), each slot with the story's own probability.
* ``/blog/``: a *smart* provider. Posts change as Poisson processes and say when they
  did (``/sitemap.xml`` ``<lastmod>``, Atom ``<updated>``, ``Last-Modified``).
* ``/docs/``: *normal* providers. Pages change rarely and say nothing: some have
  ``ETag``/``Last-Modified``, some no validators, some a footer that changes on every
  request (cosmetic churn); a few disappear (404/410) and a few are flaky (503 with
  ``Retry-After``).

Time runs on a :class:`~scrapy_fresh.demo.clock.DemoClock` that can be sped up (and
advanced by hand), so a demo shows days of change in a minute. The site records every
true change and every request it served; ``/_demo/truth`` returns them as JSON
(:mod:`scrapy_fresh.demo.truth` turns them into true freshness).
"""

from __future__ import annotations

from scrapy_fresh.demo.clock import DemoClock
from scrapy_fresh.demo.model import DemoSite, PageSpec

__all__ = ["DemoClock", "DemoSite", "PageSpec"]
