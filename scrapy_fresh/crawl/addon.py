"""The scrapy_fresh add-on: ``ADDONS = {"scrapy_fresh.Addon": 0}`` is the whole setup.

It is the same as setting, by hand::

    SCHEDULER = "scrapy_fresh.crawl.scheduler.FreshScheduler"
    DOWNLOADER_MIDDLEWARES = {
        "scrapy_fresh.crawl.middlewares.FreshDownloaderMiddleware": 540,
        "scrapy_fresh.crawl.provider_middleware.FreshProviderMiddleware": 535,
        "scrapy_fresh.crawl.middlewares.FreshReachabilityMiddleware": 555,
    }
    SPIDER_MIDDLEWARES = {
        "scrapy_fresh.crawl.middlewares.FreshSpiderMiddleware": 40,
    }
    ITEM_PIPELINES = {"scrapy_fresh.crawl.pipelines.FreshItemPipeline": 100}
    EXTENSIONS = {
        "scrapy_fresh.crawl.visitlog.VisitLog": 0,
        "scrapy_fresh.crawl.progress.FreshProgress": 0,
        "scrapy_fresh.crawl.prometheus.FreshPrometheus": 0,
        "scrapy_fresh.crawl.webhook.WebhookDelivery": 0,
    }
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import load_object

from scrapy_fresh.config import flag

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["COMPONENTS", "EXTRA_COMPONENTS", "SCHEDULER", "Addon"]

logger = logging.getLogger(__name__)

#: The scheduler the add-on installs.
SCHEDULER = "scrapy_fresh.crawl.scheduler.FreshScheduler"
#: Component setting -> (import path, order) that the add-on adds.
COMPONENTS = {
    # Below RetryMiddleware (550) and RedirectMiddleware (600): sees final answers only.
    "DOWNLOADER_MIDDLEWARES": ("scrapy_fresh.crawl.middlewares.FreshDownloaderMiddleware", 540),
    # Lowest order: sees the items of a callback after every other spider middleware,
    # and, below HttpErrorMiddleware (50), a gone page's output (its PageGone item).
    "SPIDER_MIDDLEWARES": ("scrapy_fresh.crawl.middlewares.FreshSpiderMiddleware", 40),
    # Early: items of unchanged pages are dropped before other pipelines work on them.
    "ITEM_PIPELINES": ("scrapy_fresh.crawl.pipelines.FreshItemPipeline", 100),
    # The visit log of scrapy-fresh report (off when FRESH_VISIT_LOG is "").
    "EXTENSIONS": ("scrapy_fresh.crawl.visitlog.VisitLog", 0),
}
#: More (component setting, import path, order) for settings COMPONENTS already names.
EXTRA_COMPONENTS = [
    # Provider signals: above the conditional check (540), so it sees each request
    # before it and each response after it (off when FRESH_PROVIDER_SIGNALS is False).
    (
        "DOWNLOADER_MIDDLEWARES",
        "scrapy_fresh.crawl.provider_middleware.FreshProviderMiddleware",
        535,
    ),
    # Hosts that give no answer: above RetryMiddleware (550), so that it sees every
    # attempt (off when FRESH_UNREACHABLE_ATTEMPTS is 0).
    (
        "DOWNLOADER_MIDDLEWARES",
        "scrapy_fresh.crawl.middlewares.FreshReachabilityMiddleware",
        555,
    ),
    # Progress log lines (off when FRESH_PROGRESS_SECS is 0).
    ("EXTENSIONS", "scrapy_fresh.crawl.progress.FreshProgress", 0),
    # The Prometheus endpoint of continuous mode (off when FRESH_PROMETHEUS_PORT is 0).
    ("EXTENSIONS", "scrapy_fresh.crawl.prometheus.FreshPrometheus", 0),
    # Webhook delivery of changes (off unless FRESH_WEBHOOK_URL is set).
    ("EXTENSIONS", "scrapy_fresh.crawl.webhook.WebhookDelivery", 0),
]


class Addon:
    """Install FreshScheduler, the middlewares and the pipeline at ``"addon"`` priority.

    Settings of a higher priority (a project's own ``SCHEDULER``, say) win, as with every
    add-on; the add-on logs a warning if ``SCHEDULER`` then is not a FreshScheduler.
    With :setting:`FRESH_ENABLED` False it installs nothing.
    """

    def update_settings(self, settings: BaseSettings) -> None:
        if not flag(settings, "FRESH_ENABLED"):
            raise NotConfigured("FRESH_ENABLED is False")
        settings.set("SCHEDULER", SCHEDULER, priority="addon")
        for name, (path, order) in COMPONENTS.items():
            settings.setdefault_in_component_priority_dict(name, load_object(path), order)
        for name, path, order in EXTRA_COMPONENTS:
            settings.setdefault_in_component_priority_dict(name, load_object(path), order)
        scheduler = settings["SCHEDULER"]
        from scrapy_fresh.crawl.scheduler import FreshScheduler

        scheduler_cls = load_object(scheduler) if isinstance(scheduler, str) else scheduler
        # Not issubclass(): BaseScheduler's metaclass makes every class with the three
        # scheduler methods a "subclass" of every scheduler class.
        if FreshScheduler not in getattr(scheduler_cls, "__mro__", ()):
            logger.warning(
                "SCHEDULER is %(scheduler)r, set at a higher priority than the scrapy_fresh "
                "add-on's; scrapy_fresh needs scrapy_fresh.crawl.scheduler.FreshScheduler (or a "
                "subclass) to work.",
                {"scheduler": scheduler},
            )
