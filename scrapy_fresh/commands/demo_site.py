"""``scrapy-fresh demo-site``: serve the demo site (:mod:`scrapy_fresh.demo`) until Ctrl-C."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

HELP = "Serve the demo site: news, blog and docs that change on a sped-up clock."

DEFAULT_PORT = 8069


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a number higher than 0")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    parser.add_argument(
        "--speed",
        type=_positive,
        default=60.0,
        help="simulated seconds per real second (default 60)",
    )
    parser.add_argument("--seed", type=int, default=1, help="one seed, one history")
    parser.add_argument(
        "--start", type=float, default=None, help="simulated Unix time at start (default: now)"
    )
    parser.add_argument(
        "--crawl-delay",
        type=float,
        default=0.05,
        help="robots.txt Crawl-delay in seconds (default 0.05; 0: none)",
    )
    parser.add_argument(
        "--retry-after",
        type=int,
        default=120,
        help="Retry-After of the flaky pages' 503 answers (seconds)",
    )
    parser.add_argument(
        "--ready-file",
        type=Path,
        default=None,
        help='write {"url": ..., "pid": ...} here once listening',
    )


def run(args: argparse.Namespace) -> int:
    import os

    from scrapy_fresh.demo import DemoClock, DemoSite
    from scrapy_fresh.demo.server import DemoServer

    clock = DemoClock(speed=args.speed, start=args.start)
    site = DemoSite(
        clock, seed=args.seed, crawl_delay=args.crawl_delay or None, retry_after=args.retry_after
    )
    try:
        server = DemoServer(site, args.host, args.port)
    except OSError as exc:
        print(
            f"scrapy-fresh demo-site: cannot listen on {args.host}:{args.port}: {exc}; "
            "choose another --port (0 picks a free one).",
            file=sys.stderr,
        )
        return 2
    if args.ready_file is not None:
        tmp = args.ready_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"url": server.base_url, "pid": os.getpid()}))
        tmp.replace(args.ready_file)
    print(
        f"Demo site on {server.base_url}/ ({len(site.pages)} pages, speed {clock.speed:g}x, "
        f"seed {site.seed}); truth at {server.base_url}/_demo/truth. Ctrl-C stops it.",
        flush=True,
    )
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
