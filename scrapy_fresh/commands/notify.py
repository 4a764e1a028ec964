"""``scrapy-fresh notify URL [URL ...]``: record that pages changed; the next crawl fetches them."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from scrapy_fresh.commands._project import add_store_arguments, open_store, project_config
from scrapy_fresh.commands._project import resolve_path as _resolve
from scrapy_fresh.dates import parse_w3c
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.notify.record import record_changes
from scrapy_fresh.store.base import StateStore

HELP = "Record that URLs changed (now or --at a time): they become due at once, as smart pages."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("urls", nargs="+", metavar="URL", help="absolute http(s) URLs")
    parser.add_argument(
        "--at",
        default=None,
        metavar="TIME",
        help="when they changed: Unix seconds or a W3C date (default: now)",
    )
    parser.add_argument(
        "--known-only",
        action="store_true",
        help="skip URLs the store does not know (default: add them as new)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_store_arguments(parser)


def parse_time(text: str | None) -> float | None:
    """``--at``: Unix seconds or a W3C date; None for now."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    value = parse_w3c(text)
    if value is None:
        raise ConfigError(
            f"--at ({text!r}) is not a time; expected Unix seconds or a W3C date such as "
            "2024-05-01T12:00:00Z."
        )
    return value


def open_target_store(args: argparse.Namespace) -> tuple[StateStore, str]:
    """The one SQLite store a writing command works on (``--sqlite-path`` or the project's)."""
    if len(args.sqlite_paths) > 1:
        raise ConfigError("give one --sqlite-path: notifications go into one store.")
    if args.sqlite_paths:
        path = Path(args.sqlite_paths[0])
    else:
        config, _ = project_config(args.overrides)
        if config.store != "sqlite":
            raise ConfigError(
                f"FRESH_STORE is {config.store!r}: give the SQLite store with --sqlite-path "
                "or use scrapy_fresh.notify.record.record_changes() with your store."
            )
        path = _resolve(config.sqlite_path)
    return open_store(path), str(path)


def run(args: argparse.Namespace) -> int:
    when = parse_time(args.at)
    store, where = open_target_store(args)
    try:
        result = record_changes(
            store, args.urls, when, now=time.time(), add_unknown=not args.known_only
        )
        store.flush()
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    finally:
        store.close()
    if args.json:
        print(
            json.dumps(
                {
                    "store": where,
                    "updated": result.updated,
                    "added": result.added,
                    "rejected": result.rejected,
                },
                indent=2,
            )
        )
    else:
        print(
            f"{where}: {len(result.updated)} updated, {len(result.added)} added, "
            f"{len(result.rejected)} rejected"
        )
        for url, reason in result.rejected.items():
            print(f"  rejected {url}: {reason}")
    return 1 if result.rejected else 0
