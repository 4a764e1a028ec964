"""Changing the item field rules on a real site: no flood, nothing missed.

A price watcher (tests/realsite_runner.py's ``prices`` spider) over a small shop served
by nginx. Cycle 1 crawls it with the default field rules. Before cycle 2 every page is
written again (a 200 for each, so every item is judged, none skipped by a 304) and one
price is edited; cycle 2 runs with new rules: the description compared fuzzily and a
currency sign ignored in prices. Only the edited product and the catalog row that shows
its price are "changed": the other items are judged by the rules their stored hashes
were made with (meta records ``field_scheme``). Cycle 3, with the new rules, sees a
description edit: the hashes stored in cycle 2 carry the new rules' tag.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.nginx_support import Nginx
from tests.realsite.test_realsite_changes import PRODUCTS, write_shop
from tests.realsite_support import ALL_DUE_OFFSET, run_crawl

pytestmark = [pytest.mark.realsite, pytest.mark.usefixtures("nginx_available")]

NEW_RULES = {"description": {"fuzzy_bits": 3}, "price": {"ignore": ["€"]}}


@pytest.fixture(scope="module")
def cycles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("field-rules")
    root = work / "site"
    write_shop(root, PRODUCTS, [1, 2, 3, 4])
    out: dict[str, Any] = {}
    with Nginx(root, work / "nginx") as server:

        def cycle(n: int, rules: dict[str, Any] | None) -> None:
            settings = {
                "ADDONS": {"scrapy_fresh.Addon": 0},
                "FRESH_SQLITE_PATH": str(work / "state.sqlite"),
                "FRESH_ITEM_KEY_FIELD": "sku",
                "FEEDS": {str(work / f"c{n}.jsonl"): {"format": "jsonlines"}},
            }
            if rules is not None:
                settings["FRESH_FIELD_RULES"] = rules
            config = {"spider": "prices", "start": [server.url("/catalog.html")],
                      "clock_offset": (n - 1) * ALL_DUE_OFFSET, "settings": settings}  # fmt: skip
            crawl = run_crawl(config, work / f"c{n}")
            crawl.check()
            lines = (work / f"c{n}.jsonl").read_text().splitlines()
            out[f"c{n}"] = [json.loads(line) for line in lines]
            out[f"stats{n}"] = crawl.stats

        cycle(1, None)
        edited = dict(PRODUCTS)
        edited[1] = ("Blue mug", "12.50", PRODUCTS[1][2])
        write_shop(root, edited, [1, 2, 3, 4])  # every page written: a 200 for each
        cycle(2, NEW_RULES)
        edited[2] = ("Teapot", "35.00", "A teapot. It is not made any more.")
        write_shop(root, edited, [1, 2, 3, 4])
        cycle(3, NEW_RULES)
    out["work"] = work
    return out


def _changed(items: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {
        f"{i['page']}:{i['sku']}": i["fresh_changed_fields"]
        for i in items
        if i.get("fresh_changed")
    }


def test_new_field_rules_report_only_the_real_edit(cycles: dict[str, Any]) -> None:
    assert len(cycles["c2"]) == 8  # four catalog rows, four products: all downloaded
    assert _changed(cycles["c2"]) == {"product:sku-1": ["price"], "catalog:sku-1": ["price"]}
    stats = cycles["stats2"]
    assert stats.get("fresh/field_scheme_changed") == 5  # the catalog and four products
    assert "fresh/field_scheme_unknown" not in stats


def test_the_new_rules_hold_from_the_next_visit(cycles: dict[str, Any]) -> None:
    assert _changed(cycles["c3"]) == {"product:sku-2": ["description"]}
    assert "fresh/field_scheme_changed" not in cycles["stats3"]


def test_the_first_cycle_tags_its_hashes(cycles: dict[str, Any]) -> None:
    from scrapy_fresh.crawl.schemes import FIELD_SCHEME_NAMESPACE
    from scrapy_fresh.store.sqlite import SQLiteStore

    with SQLiteStore(Path(cycles["work"]) / "state.sqlite") as store:
        tags = {key for key, _ in store.meta(FIELD_SCHEME_NAMESPACE)}
    assert len(tags) == 2  # the default rules and the new ones
