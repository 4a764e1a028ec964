"""``scrapy-fresh block``: no requests to a host until it is unblocked."""

from __future__ import annotations

import argparse
import datetime as dt
import time

from scrapy_fresh.commands._control import add_target_store_arguments, host_of, open_stores
from scrapy_fresh.store.base import StateStore

HELP = "Block hosts: no request goes to them, in running crawls too, until unblocked."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", dest="hosts", action="append", default=[], metavar="HOST",
        help="the host to block (as `status` lists it); without one, list the blocked hosts",
    )  # fmt: skip
    add_target_store_arguments(parser)


def _when(since: float) -> str:
    return dt.datetime.fromtimestamp(since, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def run(args: argparse.Namespace) -> int:
    hosts = [host_of(h) for h in args.hosts]
    for where, store in open_stores(args):
        blocked = store.blocked_hosts()
        if not hosts:
            for host, since in sorted(blocked.items()):
                print(f"blocked   {host} since {_when(since)}")
            print(f"{len(blocked)} hosts blocked in {where}")
            continue
        pages = _pages_per_host(store, set(hosts))
        new = 0
        for host in hosts:
            if store.block_host(host, time.time()):
                new += 1
                print(f"blocked   {host} ({pages.get(host, 0)} pages known)")
            else:
                print(f"blocked   {host} already, since {_when(blocked[host])}")
        store.flush()
        print(f"{new} hosts blocked ({len(hosts) - new} were already) in {where}")
    return 0


def _pages_per_host(store: StateStore, hosts: set[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for state in store.iterate():
        if state.host in hosts:
            counts[state.host] = counts.get(state.host, 0) + 1
    return counts
