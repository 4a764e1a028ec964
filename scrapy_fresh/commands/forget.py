"""``scrapy-fresh forget``: delete page records from the store."""

from __future__ import annotations

import argparse

from scrapy_fresh.commands._control import Selection, add_selection_arguments, open_stores

HELP = "Delete the records of pages (by URL, --host or --match); found again, they are new."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_selection_arguments(parser)


def run(args: argparse.Namespace) -> int:
    selection = Selection.from_args(args)
    found = 0
    for where, store in open_stores(args):
        picked, missing = selection.pick(store)
        found += len(picked)
        deleted = 0
        for state in picked:
            if store.delete(state.key):
                deleted += 1
                print(f"forgot    {state.url}")
        store.flush()
        for url in missing:
            print(f"unknown   {url}")
        print(f"{deleted} pages forgotten in {where}")
    return 0 if found else 1
