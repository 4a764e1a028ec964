"""``scrapy-fresh forget``: delete page records from the store."""

from __future__ import annotations

import argparse

from scrapy_fresh.changes.feed import GONE_NAMESPACE
from scrapy_fresh.commands._control import Selection, add_selection_arguments, open_stores
from scrapy_fresh.crawl.documents import DOCUMENT_NAMESPACE
from scrapy_fresh.providers.ledger import QUIET_NAMESPACE

HELP = "Delete the records of pages (by URL, --host or --match); found again, they are new."

#: Meta namespaces keyed by a page's record key: forgotten with the page.
PAGE_META = (QUIET_NAMESPACE, GONE_NAMESPACE, DOCUMENT_NAMESPACE)


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
                for namespace in PAGE_META:
                    store.delete_meta(namespace, state.key)
                deleted += 1
                print(f"forgot    {state.url}")
        store.flush()
        for url in missing:
            print(f"unknown   {url}")
        print(f"{deleted} pages forgotten in {where}")
    return 0 if found else 1
