"""Ordering of due pages: per-host politeness, priority, and the discovery/refresh mix.

The same code orders fetches in a real crawl (:mod:`scrapy_fresh.crawl.scheduler`) and in
the simulator, with the clock passed in as ``now``.
"""

from __future__ import annotations

from scrapy_fresh.frontier.frontier import Frontier, Stream
from scrapy_fresh.frontier.politeness import Politeness

__all__ = ["Frontier", "Politeness", "Stream"]
