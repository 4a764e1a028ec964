"""Opening the store :setting:`FRESH_STORE` names, in a crawl and in the commands.

``FRESH_STORE`` is an import path; ``"sqlite"``, ``"memory"`` and ``"redis"`` are
aliases of the openers below (:data:`STORE_ALIASES`). An opener is called with the
validated :class:`~scrapy_fresh.config.FreshConfig` and the crawler; any other path names a
:class:`~scrapy_fresh.store.base.StateStore` class, built like a Scrapy component
(``from_crawler`` when it has one). Nothing here knows what a store is inside.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.project import data_path

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.store.base import StateStore

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_fresh.config import FreshConfig

__all__ = [
    "STORE_ALIASES",
    "check_store_choice",
    "open_memory",
    "open_sqlite",
    "open_store",
    "resolve_sqlite_path",
    "spider_path",
]

#: Short names of :setting:`FRESH_STORE` -> the import path of their opener.
STORE_ALIASES = {
    "memory": "scrapy_fresh.crawl.stores.open_memory",
    "sqlite": "scrapy_fresh.crawl.stores.open_sqlite",
    "redis": "scrapy_fresh.distributed.shared.open_shared_store",
}

_MISSING = {
    "redis": (
        "FRESH_STORE ('redis') needs the redis and scrapy-redis packages ({exc}); install "
        "scrapy_fresh with its 'redis' extra, or use 'sqlite' (one machine)."
    ),
}
_NOT_IMPORTABLE = (
    "FRESH_STORE ({store!r}) cannot be imported: {exc}. Expected 'sqlite', 'memory', "
    "'redis' or the import path of a StateStore class."
)


def resolve_sqlite_path(path: str) -> str:
    """Return :setting:`FRESH_SQLITE_PATH` resolved like ``HTTPCACHE_DIR``: a relative path
    lives under the project's ``.scrapy`` data directory (created if missing)."""
    target = Path(path)
    if target.is_absolute():
        return str(target)
    directory = data_path(str(target.parent), createdir=True)
    return str(Path(directory) / target.name)


def spider_path(path: str, crawler: Crawler) -> str:
    """:setting:`FRESH_SQLITE_PATH` with ``%(spider)s`` replaced by the spider's name."""
    return path % {"spider": getattr(crawler.spidercls, "name", None) or "spider"}


#: With :setting:`FRESH_COMMIT_SECS`, the SQLite store also writes once this many
#: records and sites wait, whatever the time.
COMMIT_BATCH = 10_000


def open_memory(config: FreshConfig, crawler: Crawler) -> StateStore:
    """``"memory"``: records that last as long as the crawl."""
    from scrapy_fresh.store.memory import MemoryStore

    return MemoryStore()


def open_sqlite(config: FreshConfig, crawler: Crawler) -> StateStore:
    """``"sqlite"``: the embedded default, one file per :setting:`FRESH_SQLITE_PATH`."""
    from scrapy_fresh.store.sqlite import SQLiteStore

    secs = config.commit_secs
    return SQLiteStore(
        resolve_sqlite_path(spider_path(config.sqlite_path, crawler)),
        batch_size=COMMIT_BATCH if secs else 1,
        commit_secs=secs,
    )


def _load(config: FreshConfig) -> Any:
    path = STORE_ALIASES.get(config.store, config.store)
    try:
        return load_object(path)
    except (ImportError, AttributeError, NameError, ValueError) as exc:
        message = _MISSING.get(config.store, _NOT_IMPORTABLE)
        if isinstance(exc, ImportError) and config.store in _MISSING:
            raise ConfigError(message.format(exc=exc)) from exc
        raise ConfigError(_NOT_IMPORTABLE.format(store=config.store, exc=exc)) from exc


def check_store_choice(config: FreshConfig) -> None:
    """Fail at start-up on a store that can never be built (before anything is opened)."""
    _load(config)


def open_store(config: FreshConfig, crawler: Crawler) -> StateStore:
    """Open the store :setting:`FRESH_STORE` names."""
    factory = _load(config)
    if config.store in STORE_ALIASES:
        store = factory(config, crawler)
    elif isinstance(factory, type):
        store = build_from_crawler(factory, crawler)
    else:
        store = factory()
    if not isinstance(store, StateStore):
        raise ConfigError(
            f"FRESH_STORE ({config.store!r}) built a {type(store).__name__}, which does not "
            "implement the StateStore protocol (scrapy_fresh.store.base.StateStore)."
        )
    return store
