"""Adversarial tests of the field scheme tags (scrapy_fresh.crawl.schemes.FieldSchemes):
a change of the item field rules must not flag every item page "changed", an edit made
in the same run must still be seen, and what is told of it (``fresh_changed_fields``,
``fresh_previous``, which the visit log shares) must be what the rules in force count.

Real parts: a crawler's spider middleware and runtime over a real SQLite store (a real
Redis one for the encoding), one crawler per "run", the clock moved so the page is due
again. Each run visits one product page whose callback yields the given items.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from scrapy import Spider
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler

from scrapy_fresh.crawl.middlewares import FreshSpiderMiddleware
from scrapy_fresh.crawl.schemes import FIELD_SCHEME_NAMESPACE, FieldSchemes
from scrapy_fresh.fingerprint import itemfields
from scrapy_fresh.fingerprint.itemfields import (
    FIELD_SCHEME_KEY,
    ItemRules,
    field_scheme_of,
    untagged,
)
from scrapy_fresh.keys import url_key
from scrapy_fresh.store.base import PageState
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.conftest import HARNESS_NOW, item_pipeline, items_passed, known_record
from tests.test_itemfields import _run

URL = "http://shop.example/catalog"
HTML = b"<html><body><h1>Catalog</h1><p>Mugs and cups</p></body></html>"
#: Between two runs: every page is due again.
RUN_GAP = 400 * 86400.0

MUG = {"sku": "m1", "name": "Mug", "price": "10.00 EUR", "description": "A blue mug."}
CUP = {"sku": "c1", "name": "Cup", "price": "4.00 EUR", "description": "A white cup."}
BOWL = {"sku": "b1", "name": "Bowl", "price": "7.00 EUR", "description": "A deep bowl."}


class ShopSpider(Spider):
    name = "shop_adv"

    def parse(self, response: Any) -> Any:
        return []

    def parse_page(self, response: Any) -> Any:
        return []


class Visit:
    def __init__(self, items: list[Any], kept: list[Any], request: Request, stats: Any) -> None:
        self.items = items
        self.kept = kept
        self.request = request
        self.stats = stats

    @property
    def outcome(self) -> str:
        return str(self.request.meta["fresh_outcome"])

    def changed(self) -> dict[str, list[str]]:
        return {i["sku"]: i["fresh_changed_fields"] for i in self.items if i["fresh_changed"]}

    def stat(self, name: str) -> int:
        return int(self.stats.get_value(name, 0))


class Runs:
    """Runs of a crawler over one store, each visiting the page once."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.n = 0
        self.last: PageState | None = None

    def visit(
        self,
        items: list[dict[str, Any]],
        settings: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Visit:
        from scrapy_fresh.crawl.runtime import FreshRuntime
        from scrapy_fresh.crawl.scheduler import FreshScheduler

        crawler = get_crawler(ShopSpider, {**self.settings, **(settings or {})})
        crawler.spider = ShopSpider.from_crawler(crawler)
        crawler.stats.open_spider()
        runtime = FreshRuntime.of(crawler)
        now = HARNESS_NOW + self.n * RUN_GAP
        runtime.clock = lambda: now
        if self.n == 0:
            runtime.store.put_many([known_record(URL, last_crawl=900_000.0, next_due=999_000.0)])
        self.n += 1
        scheduler = FreshScheduler.from_crawler(crawler)
        scheduler.open(crawler.spider)
        try:
            pipeline = item_pipeline(crawler)
            mw = FreshSpiderMiddleware.from_crawler(crawler)
            requests = []
            while (request := scheduler.next_request()) is not None:
                requests.append(request)
            (request,) = requests
            request.meta.update(meta or {})
            out = _run(mw, HtmlResponse(URL, body=HTML, request=request),
                          [dict(i) for i in items])  # fmt: skip
            kept = items_passed(pipeline, out)
            self.last = runtime.store.get(url_key(URL))
            return Visit(out, kept, request, crawler.stats)
        finally:
            scheduler.close("finished")

    def state(self) -> PageState:
        """The page's record as the last run left it."""
        assert self.last is not None
        return self.last


class SQLiteRuns(Runs):
    def __init__(self, path: Path, **settings: Any) -> None:
        super().__init__({"FRESH_STORE": "sqlite", "FRESH_SQLITE_PATH": str(path), **settings})
        self.path = path


@pytest.fixture
def runs(tmp_path: Path) -> Any:
    def make(**settings: Any) -> SQLiteRuns:
        return SQLiteRuns(tmp_path / "state.sqlite", **settings)

    return make


OLD = {"price": {"ignore": [r"(?i)\s*eur"]}}
NEW = {"price": {"ignore": [r"(?i)\s*eur"]}, "description": {"fuzzy_bits": 3}}


# -- the baseline the feature promises --------------------------------------------------


def test_holds_a_rules_change_alone_changes_nothing(runs: Any) -> None:
    r = runs(FRESH_ITEM_KEY_FIELD="sku")
    r.visit([MUG, CUP], {"FRESH_FIELD_RULES": OLD})
    v = r.visit([MUG, CUP], {"FRESH_FIELD_RULES": NEW})
    assert (v.outcome, v.changed()) == ("unchanged", {})
    assert v.stat("fresh/field_scheme_changed") == 1
    assert v.stat("fresh/field_scheme_unknown") == 0


LONG = (
    "A sturdy ceramic mug, glazed in deep blue, that holds a generous cup of coffee or "
    "tea. Each one is thrown by hand in our studio, so no two are quite alike."
) * 3
#: An edit of LONG whose simhash is 2 bits away: within fuzzy_bits 3, beyond 1 or exact.
LONG_EDITED = LONG.replace("deep blue", "deep green", 1)


def test_narrowing_the_fields_does_not_report_a_field_no_longer_counted(runs: Any) -> None:
    """Attack: FRESH_FINGERPRINT_FIELDS narrowed to the price while a name is edited in
    the same run. The old rules (every field) see the name change; the rules in force do
    not count it: nothing must be reported, nor told (``fresh_previous``)."""
    r = runs(FRESH_ITEM_KEY_FIELD="sku", FRESH_KEEP_ITEMS=True)
    r.visit([MUG, CUP])
    v = r.visit([{**MUG, "name": "Big mug"}, CUP], {"FRESH_FINGERPRINT_FIELDS": ["sku", "price"]})
    assert v.stat("fresh/field_scheme_changed") == 1
    assert (v.outcome, v.changed()) == ("unchanged", {})
    assert v.stat("fresh/field_changed/name") == 0
    assert all("fresh_previous" not in i for i in v.items)


def test_narrowing_the_fields_still_reports_an_edit_of_a_counted_one(runs: Any) -> None:
    r = runs(FRESH_ITEM_KEY_FIELD="sku", FRESH_KEEP_ITEMS=True)
    r.visit([MUG, CUP])
    now = [{**MUG, "name": "Big mug", "price": "11.00 EUR"}, CUP]
    v = r.visit(now, {"FRESH_FINGERPRINT_FIELDS": ["sku", "price"]})
    assert (v.outcome, v.changed()) == ("changed", {"m1": ["price"]})
    assert v.items[0]["fresh_previous"] == {"price": "10.00 EUR"}


def test_a_new_item_in_the_run_of_a_narrowing_names_the_fields_now_counted(runs: Any) -> None:
    """Attack: an item appears in the run the fields are narrowed: it is new, and its
    changed fields are the ones the rules in force count, as for any new item."""
    r = runs(FRESH_ITEM_KEY_FIELD="sku")
    r.visit([MUG, CUP])
    v = r.visit([MUG, CUP, BOWL], {"FRESH_FINGERPRINT_FIELDS": ["sku", "price"]})
    assert (v.outcome, v.changed()) == ("changed", {"b1": ["sku", "price"]})


def test_narrowing_to_fields_no_item_has_is_no_flood(runs: Any) -> None:
    """Attack: FRESH_FINGERPRINT_FIELDS narrowed to a field the page's items do not have
    (the page is judged by its content from then on). Its items did not change: the
    visit must not say "the items went away"."""
    r = runs()
    r.visit([MUG, CUP])
    v = r.visit([MUG, CUP], {"FRESH_FINGERPRINT_FIELDS": ["stock"]})
    assert v.outcome == "unchanged"
    assert v.stat("fresh/field_scheme_changed") == 1  # counted, as any rules change
    edited = r.visit([MUG, CUP], {"FRESH_FINGERPRINT_FIELDS": ["stock"]})
    assert edited.outcome == "unchanged"  # judged by its digest from then on


def test_narrowing_to_fields_no_item_has_still_sees_an_edit(runs: Any) -> None:
    r = runs()
    r.visit([MUG, CUP])
    v = r.visit([{**MUG, "price": "11.00 EUR"}, CUP], {"FRESH_FINGERPRINT_FIELDS": ["stock"]})
    assert v.outcome == "changed"


@pytest.mark.parametrize("new_bits", [None, 1])
def test_tightening_a_fuzzy_field_sees_an_edit_the_old_bits_tolerated(
    runs: Any, new_bits: int | None
) -> None:
    """Attack: description compared with fuzzy_bits 3, then exactly (or with 1 bit),
    and in that run an edit 2 bits away. The rules in force see it: it must be
    reported, not judged by the old tolerance."""
    r = runs()
    r.visit(
        [{**MUG, "description": LONG}], {"FRESH_FIELD_RULES": {"description": {"fuzzy_bits": 3}}}
    )
    rules = {} if new_bits is None else {"description": {"fuzzy_bits": new_bits}}
    v = r.visit([{**MUG, "description": LONG_EDITED}], {"FRESH_FIELD_RULES": rules})
    assert (v.outcome, v.changed()) == ("changed", {"m1": ["description"]})


def test_tightening_a_fuzzy_field_alone_changes_nothing(runs: Any) -> None:
    r = runs()
    r.visit(
        [{**MUG, "description": LONG}], {"FRESH_FIELD_RULES": {"description": {"fuzzy_bits": 3}}}
    )
    v = r.visit([{**MUG, "description": LONG}], {"FRESH_FIELD_RULES": {}})
    assert (v.outcome, v.changed()) == ("unchanged", {})


def test_holds_loosening_a_fuzzy_field_tolerates_the_old_bits(runs: Any) -> None:
    r = runs()
    r.visit(
        [{**MUG, "description": LONG}], {"FRESH_FIELD_RULES": {"description": {"fuzzy_bits": 1}}}
    )
    v = r.visit([{**MUG, "description": LONG_EDITED}],
                {"FRESH_FIELD_RULES": {"description": {"fuzzy_bits": 3}}})  # fmt: skip
    assert v.outcome == "changed"  # the old rules' 1 bit: a real edit, told once
    assert (
        r.visit(
            [{**MUG, "description": LONG}],
            {"FRESH_FIELD_RULES": {"description": {"fuzzy_bits": 3}}},
        ).outcome
        == "unchanged"
    )


def test_holds_a_key_field_whose_own_rule_changes_matches_items(runs: Any) -> None:
    """The key field gets an ignore pattern (a prefix dropped) while the items are
    reordered and one price is edited: matched by the old key hashes, exactly."""
    mug, cup = {**MUG, "sku": "SKU-m1"}, {**CUP, "sku": "SKU-c1"}
    r = runs(FRESH_ITEM_KEY_FIELD="sku", FRESH_KEEP_ITEMS=True)
    r.visit([mug, cup])
    new_rules = {"sku": {"ignore": [r"^SKU-"]}}
    v = r.visit([{**cup, "price": "5.00 EUR"}, mug], {"FRESH_FIELD_RULES": new_rules})
    assert (v.outcome, v.changed()) == ("changed", {"SKU-c1": ["price"]})
    assert v.items[0]["fresh_previous"] == {"price": "4.00 EUR"}
    after = r.visit([mug, {**cup, "price": "5.00 EUR"}], {"FRESH_FIELD_RULES": new_rules})
    assert (after.outcome, after.changed()) == ("unchanged", {})


def test_holds_items_coming_and_going_in_the_run_of_a_rules_change(runs: Any) -> None:
    r = runs(FRESH_ITEM_KEY_FIELD="sku", FRESH_KEEP_ITEMS=True)
    r.visit([MUG, CUP], {"FRESH_FIELD_RULES": OLD})
    v = r.visit([BOWL, MUG], {"FRESH_FIELD_RULES": NEW})  # the cup went, a bowl came
    assert v.outcome == "changed"
    assert v.changed() == {"b1": ["sku", "name", "price", "description"]}
    assert "fresh_previous" not in v.items[1]


def test_holds_dropping_unchanged_items_after_a_rules_change(runs: Any) -> None:
    r = runs(FRESH_ITEM_KEY_FIELD="sku", FRESH_DROP_UNCHANGED_ITEMS=True)
    r.visit([MUG, CUP], {"FRESH_FIELD_RULES": OLD})
    v = r.visit([MUG, {**CUP, "price": "4.50 eur"}], {"FRESH_FIELD_RULES": NEW})
    assert [i["sku"] for i in v.kept] == ["c1"]
    assert v.stat("fresh/items_dropped_unchanged") == 1


def test_holds_meta_rules_that_differ_between_runs(runs: Any) -> None:
    r = runs(FRESH_ITEM_KEY_FIELD="sku")
    r.visit([MUG, CUP], meta={"fresh_field_rules": OLD})
    v = r.visit(
        [MUG, CUP],
        meta={"fresh_field_rules": NEW, "fresh_fingerprint_fields": "sku, price, description"},
    )
    assert (v.outcome, v.changed()) == ("unchanged", {})
    v = r.visit([MUG, {**CUP, "price": "5 EUR"}], meta={"fresh_field_rules": OLD})
    assert (v.outcome, v.changed()) == ("changed", {"c1": ["price"]})


def test_holds_widening_the_fields_changes_nothing(runs: Any) -> None:
    r = runs(FRESH_ITEM_KEY_FIELD="sku")
    r.visit([MUG, CUP], {"FRESH_FINGERPRINT_FIELDS": ["sku", "price"]})
    v = r.visit([MUG, CUP])
    assert (v.outcome, v.changed()) == ("unchanged", {})
    v = r.visit([{**MUG, "name": "Big mug"}, CUP])
    assert (v.outcome, v.changed()) == ("changed", {"m1": ["name"]})


def test_the_order_of_the_fields_named_is_not_a_rules_change(runs: Any) -> None:
    """Attack: the same fields named in another order (or twice) hash nothing
    differently: it must be the same field scheme, not a "rules change"."""
    r = runs()
    r.visit([MUG], {"FRESH_FINGERPRINT_FIELDS": ["sku", "price"]})
    v = r.visit([MUG], {"FRESH_FINGERPRINT_FIELDS": "price, sku, price"})
    assert v.stat("fresh/field_scheme_changed") == 0


def test_holds_hashes_stored_before_tags_are_compared_as_they_are(runs: Any) -> None:
    r = runs(FRESH_ITEM_KEY_FIELD="sku")
    r.visit([MUG, CUP])
    with SQLiteStore(r.path) as store:  # as a store written before tags holds them
        state = store.get(url_key(URL))
        assert state is not None
        state.field_hashes, tag = untagged(state.field_hashes)
        assert tag is not None
        store.put(state)
    v = r.visit([MUG, CUP], {"FRESH_FIELD_RULES": OLD})
    assert v.stat("fresh/field_scheme_changed") == 0  # no tag: nothing to compare
    # as documented: compared as they are, that once (the new pattern's prices "change")
    assert v.changed() == {"m1": ["price"], "c1": ["price"]}
    assert untagged(r.state().field_hashes)[1] == field_scheme_of(
        ItemRules.of(None, itemfields.parse_field_rules(OLD, "x"))
    )


def test_holds_an_item_field_named_like_the_reserved_key_is_not_counted(runs: Any) -> None:
    r = runs()
    r.visit([{**MUG, FIELD_SCHEME_KEY: 7}])
    state = r.state()
    (hashes,) = state.field_hashes
    assert hashes[FIELD_SCHEME_KEY] == field_scheme_of(ItemRules.of(None, {}))
    v = r.visit([{**MUG, FIELD_SCHEME_KEY: "anything"}], {"FRESH_FIELD_RULES": NEW})
    assert (v.outcome, v.changed()) == ("unchanged", {})


def test_a_collision_of_two_rule_sets_tags_is_no_flood(
    runs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: two rule sets whose tags collide (forced). The stored tag is the page's
    own, yet other rules made the hashes; like the content digests, every rule set the
    store keeps for the tag must be tried."""
    from scrapy_fresh.crawl import middlewares, schemes

    def colliding(rules: ItemRules) -> int:
        return 7

    for module in (middlewares, schemes):
        monkeypatch.setattr(module, "field_scheme_of", colliding)
    r = runs(FRESH_ITEM_KEY_FIELD="sku")
    r.visit([MUG, CUP], {"FRESH_FIELD_RULES": OLD})
    v = r.visit([MUG, CUP], {"FRESH_FIELD_RULES": NEW})
    assert (v.outcome, v.changed()) == ("unchanged", {})
    v = r.visit([MUG, {**CUP, "description": "A red cup."}], {"FRESH_FIELD_RULES": NEW})
    assert (v.outcome, v.changed()) == ("changed", {"c1": ["description"]})


def test_holds_rules_of_a_tag_written_by_another_run_are_read_once(tmp_path: Path) -> None:
    rules = ItemRules.of(("sku", "price"), itemfields.parse_field_rules(OLD, "x"))
    with SQLiteStore(tmp_path / "s.sqlite") as store:
        errors: list[str] = []
        FieldSchemes(lambda: store, lambda a, e: errors.append(a)).remember(rules)
        key = f"{field_scheme_of(rules):08x}"
        assert store.get_meta(FIELD_SCHEME_NAMESPACE, key) is not None
        assert FieldSchemes(lambda: store, lambda a, e: errors.append(a)).candidates(
            field_scheme_of(rules)) == [rules]  # fmt: skip
        assert errors == []


def test_holds_a_rule_whose_pattern_has_flags_is_applied_again_as_it_was(runs: Any) -> None:
    """A pattern compiled with flags by the user (re.IGNORECASE | re.ASCII) and given as
    an object: kept with its flags, applied again by the next run."""
    pattern = re.compile(r"\s*eur", re.IGNORECASE | re.ASCII)
    r = runs(FRESH_ITEM_KEY_FIELD="sku")
    r.visit([MUG, CUP], {"FRESH_FIELD_RULES": {"price": {"ignore": [pattern]}}})
    v = r.visit([{**MUG, "price": "10.00 Eur"}, CUP], {"FRESH_FIELD_RULES": NEW})
    assert v.stat("fresh/field_scheme_unknown") == 0
    assert (v.outcome, v.changed()) == ("unchanged", {})


# -- Redis ------------------------------------------------------------------------------


def test_holds_the_reserved_key_survives_the_redis_encoding(prefix: str) -> None:
    from tests.redis_helpers import SHARED_URL

    r = Runs({"FRESH_STORE": "redis", "REDIS_URL": SHARED_URL, "FRESH_REDIS_KEY": prefix,
              "FRESH_ITEM_KEY_FIELD": "sku"})  # fmt: skip
    r.visit([MUG, CUP], {"FRESH_FIELD_RULES": OLD})
    assert untagged(r.state().field_hashes)[1] == field_scheme_of(
        ItemRules.of(None, itemfields.parse_field_rules(OLD, "x"))
    )
    v = r.visit([MUG, {**CUP, "price": "5 EUR"}], {"FRESH_FIELD_RULES": NEW})
    assert v.stat("fresh/field_scheme_unknown") == 0
    assert (v.outcome, v.changed()) == ("changed", {"c1": ["price"]})
