"""``scrapy-fresh changes``: the change feed (new, changed, gone pages) from the visit log."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy_fresh.exceptions import ConfigError

if TYPE_CHECKING:
    from scrapy_fresh.changes.feed import Change

HELP = "Print the changes (new, changed, gone pages) since a time or a cursor."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--since", default=None, help="Unix seconds or an ISO 8601 time")
    start.add_argument(
        "--cursor",
        default=None,
        help="the 'cursor' of the last change read: print what came after",
    )
    parser.add_argument(
        "--format", choices=("jsonl", "csv", "atom"), default="jsonl", help="default: jsonl"
    )
    parser.add_argument(
        "--kind", dest="kinds", action="append", choices=("new", "changed", "gone"),
        default=None, help="only this kind of change; repeat for several (default: all)",
    )  # fmt: skip
    parser.add_argument(
        "--follow", action="store_true",
        help="keep printing changes as crawls log them (jsonl and csv; Ctrl-C ends)",
    )  # fmt: skip
    parser.add_argument(
        "--poll-secs", type=float, default=1.0, help="how often --follow reads the log"
    )
    parser.add_argument(
        "--visit-log", default=None, help="the visit log (default: the project's FRESH_VISIT_LOG)"
    )
    parser.add_argument(
        "-s", "--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
        help="override a setting, as scrapy's -s",
    )  # fmt: skip


def _log_path(args: argparse.Namespace) -> Path:
    from scrapy_fresh.commands._project import project_config, resolve_path

    if args.visit_log:
        path = Path(args.visit_log)
    else:
        config, _ = project_config(args.overrides)
        if not config.visit_log:
            raise ConfigError("FRESH_VISIT_LOG is empty: no visit log, so no change feed.")
        path = resolve_path(config.visit_log)
    if not path.is_file():
        raise ConfigError(
            f"No visit log at {str(path)!r}: run a crawl first (FRESH_VISIT_LOG is on by "
            "default), run the command inside the Scrapy project, or give --visit-log."
        )
    return path


def run(args: argparse.Namespace) -> int:
    from scrapy_fresh.changes.feed import (
        KINDS,
        atom,
        csv_text,
        jsonl,
        parse_cursor,
        parse_since,
        read_changes,
    )  # fmt: skip

    if args.follow and args.format == "atom":
        raise ConfigError("--follow prints jsonl or csv; an Atom feed is one document.")
    if args.poll_secs <= 0:
        raise ConfigError(f"--poll-secs ({args.poll_secs!r}) must be more than 0.")
    path = _log_path(args)
    since = parse_since(args.since) if args.since is not None else None
    cursor = parse_cursor(args.cursor) if args.cursor is not None else 0
    kinds = tuple(args.kinds or KINDS)
    out = sys.stdout

    def batch(after: int) -> tuple[list[Change], int]:
        found = list(read_changes(path, since=since, cursor=after, kinds=kinds))
        return found, int(found[-1].cursor) if found else after

    changes, cursor = batch(cursor)
    if args.format == "atom":
        out.write(atom(changes, f"urn:scrapy-fresh:{path.resolve()}"))
        return 0
    lines = jsonl(changes) if args.format == "jsonl" else csv_text(changes)
    for line in lines:
        out.write(line + "\n")
    out.flush()
    while args.follow:
        time.sleep(args.poll_secs)
        size = path.stat().st_size if path.exists() else 0
        if size < cursor:  # a new log: read it from its start
            cursor = 0
        # Only the offset matters: changes with nothing after them move it on too.
        changes, cursor = batch(cursor)
        more = jsonl(changes) if args.format == "jsonl" else csv_text(changes, header=False)
        for line in more:
            out.write(line + "\n")
        out.flush()
    return 0
