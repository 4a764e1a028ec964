"""``scrapy-fresh due``: make pages due now, whatever their refresh time says."""

from __future__ import annotations

import argparse
import time

from scrapy_fresh.commands._control import Selection, add_selection_arguments, open_stores
from scrapy_fresh.store.base import Status

HELP = "Make pages due now (by URL, --host or --match); a running crawl fetches them next."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_selection_arguments(parser)


def run(args: argparse.Namespace) -> int:
    selection = Selection.from_args(args)
    found = 0
    for where, store in open_stores(args):
        now = time.time()
        picked, missing = selection.pick(store)
        found += len(picked)
        made = set(store.make_due([s.key for s in picked], now))
        store.flush()
        for state in picked:
            if state.key in made:
                print(f"due now   {state.url}")
            elif state.status in (Status.IN_FLIGHT, Status.GONE):
                print(f"left      {state.url} ({state.status.value})")
            else:
                print(f"left      {state.url} (due already)")
        for url in missing:
            print(f"unknown   {url}")
        print(f"{len(made)} of {len(picked)} pages made due in {where}")
    return 0 if found else 1
