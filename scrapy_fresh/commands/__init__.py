"""The ``scrapy-fresh`` command line: one subcommand per module of this package.

Each subcommand module defines ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int`` (the exit status). Modules are imported only when their
subcommand runs, so ``scrapy-fresh simulate`` never imports Scrapy's reactor and
``scrapy-fresh --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from scrapy_fresh import __version__
from scrapy_fresh.exceptions import FreshError

#: subcommand name -> module under scrapy_fresh.commands
SUBCOMMANDS: dict[str, str] = {}


def register(name: str, module: str) -> None:
    """Add subcommand ``name`` implemented by ``scrapy_fresh.commands.<module>``."""
    SUBCOMMANDS[name] = module


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="scrapy-fresh",
        description="Inspect and drive scrapy_fresh state from the shell.",
    )
    parser.add_argument("--version", action="version", version=f"scrapy-fresh {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in SUBCOMMANDS.items():
        module = importlib.import_module(f"scrapy_fresh.commands.{module_name}")
        sub = subparsers.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``scrapy-fresh`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args._run(args))
    except FreshError as exc:  # includes ConfigError, StoreError
        print(f"scrapy-fresh {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


# Subcommands (one line each; the module holds the code):
register("demo-site", "demo_site")
register("status", "status")
register("report", "report")
register("changes", "changes")
register("simulate", "simulate")
register("simulate-experiments", "simulate_experiments")
register("notify", "notify")
register("notify-server", "notify_server")
register("due", "due")
register("forget", "forget")
register("block", "block")
register("unblock", "unblock")
