"""What the commands share: the stores they read (``status``, ``report``) and write to
(``due``, ``forget``, ``block``, ``unblock``), SQLite or Redis, and the pages they pick.

They write to the project's store (SQLite in WAL mode, or Redis) while no crawl or a
crawl runs: every change is one store call that leaves a visit committed meanwhile as
the crawl wrote it. Pages are picked by URL, by host (as ``scrapy-fresh status`` lists
hosts: with the port unless it is 80 or 443) or by a regular expression searched in
their URL.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scrapy_fresh.commands._project import (
    add_store_arguments,
    open_store,
    project_config,
    project_settings,
    store_paths,
)
from scrapy_fresh.config import FreshConfig
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.keys import url_host, url_key
from scrapy_fresh.store.base import PageState, SiteState, StateStore

if TYPE_CHECKING:
    from scrapy_fresh.providers.ledger import HostTrust

__all__ = [
    "Selection",
    "StoreContents",
    "add_selection_arguments",
    "add_target_store_arguments",
    "host_of",
    "open_stores",
    "read_stores",
]


def add_target_store_arguments(parser: argparse.ArgumentParser) -> None:
    """``--sqlite-path``, ``-s`` and ``--redis-key``."""
    add_store_arguments(parser)
    parser.add_argument(
        "--redis-key",
        action="append",
        default=[],
        metavar="PREFIX",
        help="a Redis store's key prefix (FRESH_REDIS_KEY with the spider's name); "
        "default: the project's, when FRESH_STORE is 'redis'",
    )


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    """The page selectors: URLs, ``--host`` and ``--match``."""
    parser.add_argument("urls", nargs="*", metavar="URL", help="a page's URL")
    parser.add_argument(
        "--host", dest="hosts", action="append", default=[], metavar="HOST",
        help="every page of HOST (as `status` lists it: example.com, 127.0.0.1:8080)",
    )  # fmt: skip
    parser.add_argument(
        "--match", dest="patterns", action="append", default=[], metavar="REGEX",
        help="every page whose URL the regular expression matches (re.search)",
    )  # fmt: skip
    add_target_store_arguments(parser)


@dataclass(frozen=True)
class Selection:
    """The pages named on the command line."""

    urls: tuple[str, ...]
    hosts: frozenset[str]
    patterns: tuple[re.Pattern[str], ...]

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Selection:
        patterns = [_pattern(text) for text in args.patterns]
        hosts = frozenset(host_of(h) for h in args.hosts)
        if not (args.urls or hosts or patterns):
            raise ConfigError("name the pages: one or more URLs, --host HOST or --match REGEX.")
        return cls(tuple(args.urls), hosts, tuple(patterns))

    def pick(self, store: StateStore) -> tuple[list[PageState], list[str]]:
        """The records selected in ``store``, and the URLs given that it does not have."""
        by_key = {url_key(url): url for url in self.urls}
        found = store.get_many(by_key) if by_key else {}
        missing = [url for key, url in by_key.items() if key not in found]
        picked = dict(found)
        if self.hosts or self.patterns:
            for state in store.iterate():
                if state.key not in picked and self._wants(state):
                    picked[state.key] = state
        return list(picked.values()), missing

    def _wants(self, state: PageState) -> bool:
        if state.host in self.hosts:
            return True
        return any(p.search(state.url) for p in self.patterns)


def _pattern(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise ConfigError(f"--match {text!r} is not a regular expression: {exc}.") from None


def open_stores(args: argparse.Namespace) -> Iterator[tuple[str, StateStore]]:
    """Open each store the arguments (or the project) name, with its description; each is
    closed when the caller moves on to the next."""
    settings, inside = project_settings(args.overrides)
    config = FreshConfig.from_settings(settings)
    prefixes = list(args.redis_key)
    if not prefixes and config.store == "redis" and not args.sqlite_paths:
        prefixes = _redis_prefixes(config, settings, inside)
    if prefixes:
        from scrapy_fresh.config import score_params
        from scrapy_fresh.distributed.frontier import open_redis_store

        for prefix in prefixes:
            redis_store = open_redis_store(settings, prefix, score_params(config))
            with redis_store:
                yield f"{prefix} ({redis_store.where}, redis)", redis_store
        return
    _, spider_paths = project_config(args.overrides)
    for path in store_paths(args, config, spider_paths):
        sqlite_store = open_store(path)
        try:
            yield f"{path} (sqlite)", sqlite_store
        finally:
            sqlite_store.close()


@dataclass
class StoreContents:
    """Everything ``status`` and ``report`` read from the stores the arguments name."""

    config: FreshConfig
    states: list[PageState] = field(default_factory=list)
    sites: list[SiteState] = field(default_factory=list)
    trust: list[HostTrust] = field(default_factory=list)
    blocked: dict[str, float] = field(default_factory=dict)
    description: str = ""


def read_stores(args: argparse.Namespace) -> StoreContents:
    """Read every record, site, trust record and blocked host of the stores the
    arguments (or the project) name, SQLite or Redis (:func:`open_stores`).

    Sites of one host found in several stores are merged (visits and changes added,
    p_c and refresh time averaged with the visits as weights).
    """
    from scrapy_fresh.providers.ledger import iter_trust

    config, _ = project_config(args.overrides)
    out = StoreContents(config)
    states: dict[str, PageState] = {}
    sites: dict[str, SiteState] = {}
    where = []
    for description, store in open_stores(args):
        where.append(description)
        for state in store.iterate():
            states.setdefault(state.key, state)
        for site in store.sites():
            sites[site.host] = _merge_site(sites[site.host], site) if site.host in sites else site
        out.trust.extend(iter_trust(store))
        out.blocked.update(store.blocked_hosts())
    out.states, out.sites = list(states.values()), list(sites.values())
    out.description = ", ".join(where)
    return out


def _merge_site(a: SiteState, b: SiteState) -> SiteState:
    visits = a.visits + b.visits

    def mean(x: float | None, y: float | None) -> float | None:
        if x is None or y is None:
            return x if y is None else y
        return (x * a.visits + y * b.visits) / visits if visits else (x + y) / 2

    return SiteState(
        a.host,
        visits,
        a.changes + b.changes,
        mean(a.p_c, b.p_c) or 0.0,
        mean(a.refresh_secs, b.refresh_secs),
        max(a.updated_at, b.updated_at),
    )


def _redis_prefixes(config: FreshConfig, settings: object, inside: bool) -> list[str]:
    if "%(spider)s" not in config.redis_key:
        return [config.redis_key]
    if not inside:
        raise ConfigError(
            f"FRESH_REDIS_KEY ({config.redis_key!r}) names one store per spider; run the "
            "command inside the Scrapy project, or give the prefix with --redis-key."
        )
    from scrapy.spiderloader import get_spider_loader

    names = get_spider_loader(settings).list()  # type: ignore[arg-type]
    return [config.redis_key % {"spider": name} for name in names]


def host_of(text: str) -> str:
    """A host as the store keeps it; a URL given instead counts as its host.

    >>> host_of("Example.com"), host_of("http://127.0.0.1:8080/x")
    ('example.com', '127.0.0.1:8080')
    """
    text = text.strip()
    if "://" in text:
        return url_host(text)
    if not text or " " in text or "/" in text:
        raise ConfigError(f"--host {text!r} is not a host name such as example.com.")
    return text.lower()
