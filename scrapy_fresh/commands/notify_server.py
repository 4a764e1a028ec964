"""``scrapy-fresh notify-server``: accept IndexNow-style change notifications over HTTP."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
from pathlib import Path

from scrapy_fresh.commands._project import add_store_arguments
from scrapy_fresh.commands.notify import open_target_store
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.notify_server import NotifyConfig, NotifyServer

HELP = "Serve /indexnow: authenticated change notifications (IndexNow POST/GET) into the store."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="port (0: any free one)")
    parser.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="HOST=KEY",
        help="allow KEY for HOST's URLs; repeat for more",
    )
    parser.add_argument(
        "--keys-file",
        default=None,
        metavar="JSON",
        help='a JSON file {"host": ["key", ...], ...} of allowed keys',
    )
    parser.add_argument(
        "--verify-key-files",
        action="store_true",
        help="also accept keys the host publishes at https://HOST/KEY.txt "
        "(or keyLocation), as the IndexNow protocol does",
    )
    parser.add_argument(
        "--key-file-scheme", default="https", choices=("https", "http"), help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--key-file-timeout",
        type=float,
        default=5.0,
        metavar="SECS",
        help="timeout of a key file fetch (default 5)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=1024 * 1024,
        help="largest POST body accepted (default 1 MiB)",
    )
    parser.add_argument(
        "--max-urls", type=int, default=10_000, help="most URLs in one request (default 10000)"
    )
    parser.add_argument(
        "--known-only", action="store_true", help="ignore URLs the store does not know"
    )
    add_store_arguments(parser)


def read_keys(pairs: list[str], path: str | None) -> dict[str, frozenset[str]]:
    """The allow-list from ``--key HOST=KEY`` and ``--keys-file``."""
    keys: dict[str, set[str]] = {}
    for pair in pairs:
        host, sep, key = pair.partition("=")
        if not sep or not host or not key:
            raise ConfigError(f"--key {pair!r}: expected HOST=KEY.")
        keys.setdefault(host.strip().lower(), set()).add(key.strip())
    if path is not None:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--keys-file {path!r} cannot be read as JSON: {exc}") from None
        if not isinstance(data, dict) or not all(
            isinstance(h, str) and isinstance(v, list) and all(isinstance(k, str) for k in v)
            for h, v in data.items()
        ):
            raise ConfigError(f'--keys-file {path!r} must hold {{"host": ["key", ...], ...}}.')
        for host, values in data.items():
            keys.setdefault(host.strip().lower(), set()).update(values)
    return {h: frozenset(k) for h, k in keys.items()}


def run(args: argparse.Namespace) -> int:
    keys = read_keys(args.key, args.keys_file)
    if not keys and not args.verify_key_files:
        raise ConfigError(
            "no way to authenticate a notification: give --key HOST=KEY, --keys-file or "
            "--verify-key-files (unauthenticated writes are never accepted)."
        )
    for name in ("max_body_bytes", "max_urls"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be 1 or more.")
    try:
        config = NotifyConfig(
            keys=keys,
            verify_key_files=args.verify_key_files,
            key_file_scheme=args.key_file_scheme,
            key_file_timeout=args.key_file_timeout,
            max_body_bytes=args.max_body_bytes,
            max_urls=args.max_urls,
            add_unknown=not args.known_only,
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    store, where = open_target_store(args)
    try:
        with NotifyServer(store, config, (args.bind, args.port)) as server:
            print(f"notify-server: {server.url} -> {where}", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                server.serve_forever(poll_interval=0.2)
    finally:
        store.close()
    return 0
