"""Demo only: make scrapy_fresh read the demo site's simulated clock.

The demo site (``scrapy-fresh demo-site --speed 3600``) lives days in minutes. For the
refresh times scrapy_fresh learns to mean anything there, the crawl must read the same
clock: this extension asks the site for its time (``/_demo/clock``) once, at start-up,
and runs from there at the site's speed. A real project does not need it (remove it
from EXTENSIONS).
"""

from __future__ import annotations

import json
import logging
import time
import urllib.request
from typing import Any

from scrapy.exceptions import NotConfigured

from scrapy_fresh.crawl.runtime import FreshRuntime

logger = logging.getLogger(__name__)


class DemoClock:
    """Extension: scrapy_fresh's clock = the demo site's clock (setting DEMO_SITE_URL)."""

    def __init__(self, now: float, speed: float) -> None:
        self.sim0 = now
        self.speed = speed
        self.real0 = time.time()

    def now(self) -> float:
        return self.sim0 + (time.time() - self.real0) * self.speed

    @classmethod
    def from_crawler(cls, crawler: Any) -> DemoClock:
        base = crawler.settings.get("DEMO_SITE_URL")
        if not base:
            raise NotConfigured("DEMO_SITE_URL is not set.")
        url = base.rstrip("/") + "/_demo/clock"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                clock = json.load(response)
        except OSError as exc:
            raise NotConfigured(
                f"The demo site does not answer at {url} ({exc}); start it with "
                "`scrapy-fresh demo-site` or set DEMO_SITE_URL."
            ) from exc
        extension = cls(float(clock["now"]), float(clock["speed"]))
        FreshRuntime.of(crawler).clock = extension.now
        logger.info(
            "scrapy_fresh reads the demo site's clock: %(speed)gx real time",
            {"speed": extension.speed},
        )
        return extension
