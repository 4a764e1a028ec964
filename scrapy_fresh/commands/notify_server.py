"""``scrapy-fresh notify-server``: accept change notifications over HTTP (IndexNow-style
submissions and WebSub content distribution), rate-limited."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import threading
from pathlib import Path

from scrapy_fresh.commands._project import add_store_arguments
from scrapy_fresh.commands.notify import open_target_store
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.notify.server import NotifyConfig, NotifyServer
from scrapy_fresh.notify.websub import Subscription, load_subscriptions

HELP = (
    "Serve /indexnow and /websub/<name>: authenticated change notifications (IndexNow, "
    "WebSub) into the store."
)


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
    parser.add_argument(
        "--websub-file",
        default=None,
        metavar="JSON",
        help='WebSub subscriptions {"NAME": {"topic": URL, "secret": S, "hub": URL}}; '
        "content for NAME is accepted at /websub/NAME, signed with its secret",
    )
    parser.add_argument(
        "--websub-callback-base",
        default=None,
        metavar="URL",
        help="the URL hubs reach this server at (e.g. https://crawler.example.com); given, "
        'the server subscribes at the "hub" of each subscription and renews the leases',
    )
    parser.add_argument(
        "--websub-lease-secs",
        type=int,
        default=864_000,
        metavar="SECS",
        help="lease asked of the hubs (default 864000, 10 days; the hub decides)",
    )
    parser.add_argument(
        "--rate-limit",
        type=int,
        default=120,
        metavar="N",
        help="requests one client address may make per --rate-window (0: no limit; default 120)",
    )
    parser.add_argument(
        "--host-rate-limit",
        type=int,
        default=120,
        metavar="N",
        help="accepted submissions about one host per --rate-window (0: no limit; default 120)",
    )
    parser.add_argument(
        "--rate-window",
        type=float,
        default=60.0,
        metavar="SECS",
        help="window of the rate limits, in seconds (default 60)",
    )
    parser.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDR",
        help="a reverse proxy's address or network (10.0.0.0/8), repeatable: its requests "
        "are rate-limited by the client its X-Forwarded-For names",
    )
    parser.add_argument(
        "--request-deadline",
        type=float,
        default=30.0,
        metavar="SECS",
        help="seconds a client has to send a whole request, headers and body; then the "
        "connection is closed (default 30)",
    )
    parser.add_argument(
        "--max-connections-per-client",
        type=int,
        default=16,
        metavar="N",
        help="open connections one client address may hold (trusted proxies excepted; "
        "0: no cap; default 16)",
    )
    add_store_arguments(parser)


def read_subscriptions(path: str | None) -> dict[str, Subscription]:
    """The WebSub subscriptions of ``--websub-file``."""
    if path is None:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--websub-file {path!r} cannot be read as JSON: {exc}") from None
    try:
        return load_subscriptions(data, f"--websub-file {path!r}")
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None


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
    subscriptions = read_subscriptions(args.websub_file)
    if not keys and not args.verify_key_files and not subscriptions:
        raise ConfigError(
            "no way to authenticate a notification: give --key HOST=KEY, --keys-file, "
            "--verify-key-files or --websub-file (unauthenticated writes are never accepted)."
        )
    for name in ("max_body_bytes", "max_urls"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be 1 or more.")
    for name in ("rate_limit", "host_rate_limit"):
        if getattr(args, name) < 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be 0 (no limit) or more.")
    if not 0 < args.rate_window < float("inf"):
        raise ConfigError(f"--rate-window ({args.rate_window!r}) must be a number above 0.")
    try:
        config = NotifyConfig(
            keys=keys,
            verify_key_files=args.verify_key_files,
            key_file_scheme=args.key_file_scheme,
            key_file_timeout=args.key_file_timeout,
            max_body_bytes=args.max_body_bytes,
            max_urls=args.max_urls,
            add_unknown=not args.known_only,
            websub=subscriptions,
            rate_limit=args.rate_limit,
            host_rate_limit=args.host_rate_limit,
            rate_window=args.rate_window,
            callback_base=args.websub_callback_base,
            lease_seconds=args.websub_lease_secs,
            trusted_proxies=tuple(args.trusted_proxy),
            request_deadline=args.request_deadline,
            max_connections_per_client=args.max_connections_per_client,
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if args.websub_callback_base and not any(s.hub for s in subscriptions.values()):
        raise ConfigError(
            "--websub-callback-base is given but no subscription of --websub-file names its "
            '"hub": there is nothing to subscribe at.'
        )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    store, where = open_target_store(args)
    try:
        with NotifyServer(store, config, (args.bind, args.port)) as server:
            print(f"notify-server: {server.url} -> {where}", flush=True)
            for name, sub in sorted(subscriptions.items()):
                print(f"notify-server: {server.websub_url(name)} <- {sub.topic}", flush=True)
            stop = threading.Event()
            if config.callback_base is not None:
                threading.Thread(target=server.run_subscriber, args=(stop,), daemon=True).start()
            try:
                with contextlib.suppress(KeyboardInterrupt):
                    server.serve_forever(poll_interval=0.2)
            finally:
                stop.set()
    finally:
        store.close()
    return 0
