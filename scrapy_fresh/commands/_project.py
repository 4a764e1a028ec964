"""What the commands share: the project's settings and its SQLite store files.

Inside a Scrapy project (a ``scrapy.cfg`` in the working directory or above) the
project's settings are read, so the commands find the store and the visit log the
crawls use; elsewhere the ``FRESH_*`` defaults apply. ``--sqlite-path`` and
``--visit-log`` override them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy_fresh.config import FreshConfig
from scrapy_fresh.exceptions import ConfigError, StoreError
from scrapy_fresh.store.base import StateStore

if TYPE_CHECKING:
    from scrapy.settings import Settings

__all__ = [
    "add_store_arguments",
    "open_store",
    "project_config",
    "project_settings",
    "resolve_path",
    "store_paths",
]


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sqlite-path",
        "--store",
        dest="sqlite_paths",
        action="append",
        default=[],
        metavar="PATH",
        help="a SQLite store file; repeat for several (default: the "
        "project's FRESH_SQLITE_PATH and its spiders' own)",
    )
    parser.add_argument(
        "-s",
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a setting, as scrapy's -s",
    )


def project_settings(overrides: list[str] | None = None) -> tuple[Settings, bool]:
    """The Scrapy settings of the project around the working directory (the defaults
    outside one) with the ``-s NAME=VALUE`` overrides, and whether there is a project."""
    from scrapy.settings import Settings
    from scrapy.utils.project import get_project_settings, inside_project

    inside = inside_project()
    settings = get_project_settings() if inside else Settings()
    for item in overrides or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ConfigError(f"-s {item!r}: expected NAME=VALUE.")
        settings.set(name, value, priority="cmdline")
    return settings, inside


def project_config(overrides: list[str] | None = None) -> tuple[FreshConfig, list[str]]:
    """The validated settings of the project around the working directory (or the
    defaults outside one), and the store path of each of its spiders: the project's
    :setting:`FRESH_SQLITE_PATH` or the spider's own ``custom_settings`` one, with
    ``%(spider)s`` replaced by the spider's name."""
    settings, inside = project_settings(overrides)
    config = FreshConfig.from_settings(settings)
    spider_paths: list[str] = []
    if inside:
        from scrapy.spiderloader import get_spider_loader

        loader = get_spider_loader(settings)
        given = settings.getpriority("FRESH_SQLITE_PATH") == 40  # with -s: for every spider
        for name in loader.list():
            custom = getattr(loader.load(name), "custom_settings", None) or {}
            path = custom.get("FRESH_SQLITE_PATH")
            if given or not isinstance(path, str):
                path = config.sqlite_path
            path = path % {"spider": name}
            if path not in spider_paths:
                spider_paths.append(path)
    return config, spider_paths


def resolve_path(path: str) -> Path:
    """A store or log path as the crawl resolves it: relative paths under ``.scrapy/``."""
    from scrapy.utils.project import data_path

    target = Path(path)
    if target.is_absolute():
        return target
    return Path(data_path(str(target.parent), createdir=False)) / target.name


def open_store(path: Path) -> StateStore:
    """Open the SQLite store at ``path`` to read. Never creates a store."""
    if not path.is_file():
        raise StoreError(
            f"No scrapy_fresh store at {str(path)!r}; run a crawl first, run the command "
            "inside the Scrapy project, or give the file with --sqlite-path."
        )
    from scrapy_fresh.store.sqlite import SQLiteStore

    return SQLiteStore(path)


def store_paths(
    args: argparse.Namespace, config: FreshConfig, spider_paths: list[str]
) -> list[Path]:
    """The SQLite store files the arguments (``--sqlite-path``) or the project name."""
    if args.sqlite_paths:
        return [Path(p) for p in args.sqlite_paths]
    if config.store != "sqlite":
        raise ConfigError(
            f"FRESH_STORE is {config.store!r}: the commands read SQLite and Redis stores "
            "only; give the store with --sqlite-path or --redis-key."
        )
    if not spider_paths and "%(spider)s" in config.sqlite_path:
        raise ConfigError(
            f"FRESH_SQLITE_PATH ({config.sqlite_path!r}) names one store per spider; run "
            "the command inside the Scrapy project, or give the store file with "
            "--sqlite-path."
        )
    candidates = [resolve_path(p) for p in spider_paths or [config.sqlite_path % {}]]
    return [p for p in candidates if p.is_file()] or candidates[:1]
