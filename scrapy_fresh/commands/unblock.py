"""``scrapy-fresh unblock``: let requests go to a blocked host again."""

from __future__ import annotations

import argparse

from scrapy_fresh.commands._control import add_target_store_arguments, host_of, open_stores

HELP = "Unblock hosts blocked with `scrapy-fresh block`; their due pages go out again."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", dest="hosts", action="append", required=True, metavar="HOST",
        help="the host to unblock",
    )  # fmt: skip
    add_target_store_arguments(parser)


def run(args: argparse.Namespace) -> int:
    hosts = [host_of(h) for h in args.hosts]
    touched = 0
    for where, store in open_stores(args):
        done = 0
        for host in hosts:
            if store.unblock_host(host):
                done += 1
                print(f"unblocked {host}")
            else:
                print(f"unblocked {host} already (it was not blocked)")
        store.flush()
        touched += done
        print(f"{done} hosts unblocked in {where}")
    return 0
