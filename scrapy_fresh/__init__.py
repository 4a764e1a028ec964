"""scrapy_fresh: keep a Scrapy-crawled collection fresh.

``ADDONS = {"scrapy_fresh.Addon": 0}`` installs it. The names users import are listed in
``__all__`` and importable from here; every other module is an implementation detail.
The package is layered (see ``docs/topics/architecture.rst``), lowest first:

* pure layers, no Scrapy: :mod:`~scrapy_fresh.policy` (maths, standard library only),
  :mod:`~scrapy_fresh.fingerprint.shingles` and :mod:`~scrapy_fresh.fingerprint.content` (judging a page),
  :mod:`~scrapy_fresh.store` (records behind one protocol: memory, SQLite),
  :mod:`~scrapy_fresh.frontier` (ordering due pages), :mod:`~scrapy_fresh.providers`
  (what a site says about its changes), :mod:`~scrapy_fresh.simulator`;
* :mod:`~scrapy_fresh.distributed` (the Redis backend) and :mod:`~scrapy_fresh.notify`
  (pushed notifications);
* :mod:`~scrapy_fresh.crawl`, the Scrapy glue (add-on, scheduler, middlewares, pipeline).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it (imported on first use, so that
#: ``import scrapy_fresh.policy`` stays free of Scrapy)
_PUBLIC = {
    "Addon": "scrapy_fresh.crawl.addon",
    "FreshScheduler": "scrapy_fresh.crawl.scheduler",
    "FreshDownloaderMiddleware": "scrapy_fresh.crawl.middlewares",
    "FreshSpiderMiddleware": "scrapy_fresh.crawl.middlewares",
    "FreshProviderMiddleware": "scrapy_fresh.crawl.provider_middleware",
    "FreshItemPipeline": "scrapy_fresh.crawl.pipelines",
    "NotModified": "scrapy_fresh.crawl.middlewares",
    "PageGone": "scrapy_fresh.crawl.items",
    "FreshConfig": "scrapy_fresh.config",
    "Outcome": "scrapy_fresh.outcome",
    "PageState": "scrapy_fresh.store.base",
    "SiteState": "scrapy_fresh.store.base",
    "StateStore": "scrapy_fresh.store.base",
    "Status": "scrapy_fresh.store.base",
    "Provider": "scrapy_fresh.store.base",
    "FreshError": "scrapy_fresh.exceptions",
    "ConfigError": "scrapy_fresh.exceptions",
    "StoreError": "scrapy_fresh.exceptions",
    "SchemaVersionError": "scrapy_fresh.exceptions",
}

__all__ = [
    "Addon",
    "ConfigError",
    "FreshConfig",
    "FreshDownloaderMiddleware",
    "FreshError",
    "FreshItemPipeline",
    "FreshProviderMiddleware",
    "FreshScheduler",
    "FreshSpiderMiddleware",
    "NotModified",
    "Outcome",
    "PageGone",
    "PageState",
    "Provider",
    "SchemaVersionError",
    "SiteState",
    "StateStore",
    "Status",
    "StoreError",
    "__version__",
]

if TYPE_CHECKING:
    from scrapy_fresh.config import FreshConfig
    from scrapy_fresh.crawl.addon import Addon
    from scrapy_fresh.crawl.items import PageGone
    from scrapy_fresh.crawl.middlewares import (
        FreshDownloaderMiddleware,
        FreshSpiderMiddleware,
        NotModified,
    )
    from scrapy_fresh.crawl.pipelines import FreshItemPipeline
    from scrapy_fresh.crawl.provider_middleware import FreshProviderMiddleware
    from scrapy_fresh.crawl.scheduler import FreshScheduler
    from scrapy_fresh.exceptions import ConfigError, FreshError, SchemaVersionError, StoreError
    from scrapy_fresh.outcome import Outcome
    from scrapy_fresh.store.base import PageState, Provider, SiteState, StateStore, Status


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'scrapy_fresh' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
