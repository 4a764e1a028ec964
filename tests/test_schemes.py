"""The content rules of each digest scheme tag, and the item field rules of each field
scheme tag, kept in the store (scrapy_fresh.crawl.schemes): a page whose rules changed
is digested (its items hashed) again by the old ones, so its verdict stays exact."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.crawl.schemes import (
    FIELD_SCHEME_NAMESPACE,
    SCHEME_NAMESPACE,
    ContentSchemes,
    FieldSchemes,
)
from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.fingerprint.content import CONTENT_VERSION, ContentRules, digest, digest_scheme
from scrapy_fresh.fingerprint.itemfields import (
    ITEM_HASH_VERSION,
    ItemRules,
    describe_field_rules,
    field_scheme_of,
    item_hashes,
    parse_field_rules,
    tag_hashes,
)
from scrapy_fresh.fingerprint.verdict import Hashed, PageContent, judge
from scrapy_fresh.store.base import PageState
from scrapy_fresh.store.memory import MemoryStore
from scrapy_fresh.store.sqlite import SQLiteStore

PAGE = (
    "<html><body><main><h1>Kettle</h1><p>Price 24.90 EUR</p>"
    + "".join(f"<p>Paragraph {n} about kettles and their many uses.</p>" for n in range(30))
    + "<div class='reviews'>4 reviews</div></main></body></html>"
)
OLD = ContentRules.build()
NEW = ContentRules.build(exclude=[".reviews"])


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    made = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "s.sqlite")
    yield made
    made.close()


def _errors() -> tuple[list[str], Any]:
    seen: list[str] = []
    return seen, lambda action, exc: seen.append(f"{action}: {exc}")


def test_rules_written_in_one_run_are_read_in_the_next(store: Any) -> None:
    seen, error = _errors()
    ContentSchemes(lambda: store, error).remember(OLD)
    later = ContentSchemes(lambda: store, error)
    assert later.candidates(OLD.scheme) == [OLD]
    assert later.candidates(NEW.scheme) == []  # never written
    assert later.candidates(OLD.scheme) == [OLD]  # (read once)
    later.remember(OLD)  # already there: nothing written twice
    assert len(store.get_meta(SCHEME_NAMESPACE, f"{OLD.scheme:04x}")["sets"]) == 1
    assert seen == []


def test_rules_of_another_version_or_damaged_or_of_another_tag_are_left_out(store: Any) -> None:
    seen, error = _errors()
    key = f"{OLD.scheme:04x}"
    sets = [
        {"version": 1, "include": [], "exclude": []},  # another CONTENT_VERSION
        {"version": CONTENT_VERSION, "exclude": ["div[["]},  # damaged
        {"version": CONTENT_VERSION, "exclude": [".x"], "noise": []},  # makes another tag
        "not a dict",
    ]
    store.put_meta(SCHEME_NAMESPACE, key, {"sets": sets})
    assert ContentSchemes(lambda: store, error).candidates(OLD.scheme) == []
    ContentSchemes(lambda: store, error).remember(OLD)  # added beside them
    assert ContentSchemes(lambda: store, error).candidates(OLD.scheme) == [OLD]
    store.put_meta(SCHEME_NAMESPACE, key, {"something": "else"})
    assert ContentSchemes(lambda: store, error).candidates(OLD.scheme) == []
    assert seen == []


def test_a_store_failure_is_reported_and_asked_again() -> None:
    class Failing(MemoryStore):
        fail = False

        def get_meta(self, namespace: str, key: str) -> dict[str, Any] | None:
            if self.fail:
                raise StoreError("gone")
            return super().get_meta(namespace, key)

    failing = Failing()
    ContentSchemes(lambda: failing, lambda a, e: None).remember(OLD)
    failing.fail = True
    seen, error = _errors()
    schemes = ContentSchemes(lambda: failing, error)
    assert schemes.candidates(OLD.scheme) == []
    assert seen == ["read the content rules from: gone"]
    failing.fail = False
    assert schemes.candidates(OLD.scheme) == [OLD]  # not cached as unknown


def _judged(stored: PageState, page: str, schemes: ContentSchemes | None) -> tuple[bool, str]:
    found = digest(page, rules=NEW)

    def redigest(tag: int) -> tuple[int, ...] | None:
        others = schemes.candidates(tag) if schemes is not None else []
        return tuple(digest(page, rules=old).exact for old in others if old != NEW) or None

    verdict = judge(stored, PageContent(found.simhash, digest=found.exact, redigest=redigest), 3)
    return verdict.changed, verdict.basis


def test_a_page_whose_rules_changed_is_judged_exactly_by_the_old_ones(store: Any) -> None:
    before = digest(PAGE, rules=OLD)
    stored = PageState(
        "0" * 40, "http://shop.test/k", last_crawl=1.0, fingerprint=before.simhash,
        content_hash=before.exact,
    )  # fmt: skip
    assert digest_scheme(before.exact) != NEW.scheme
    ContentSchemes(lambda: store, lambda a, e: None).remember(OLD)
    schemes = ContentSchemes(lambda: store, lambda a, e: None)
    assert _judged(stored, PAGE, schemes) == (False, "digest")
    edited = PAGE.replace("24.90", "24.99")  # a digit: the simhash (digits as 0) is blind
    assert _judged(stored, edited, schemes) == (True, "digest")
    assert _judged(stored, edited, None) == (False, "simhash")  # what it would miss


# -- item field rules (FieldSchemes) ----------------------------------------------------


def _item_rules(rules: dict[str, Any] | None = None, fields: Any = None) -> ItemRules:
    return ItemRules.of(fields, parse_field_rules(rules or {}, "FRESH_FIELD_RULES"))


def test_field_rules_written_in_one_run_are_read_in_the_next(store: Any) -> None:
    seen, error = _errors()
    old = _item_rules({"price": {"ignore": [r"(?i)eur"]}}, ("name", "price"))
    new = _item_rules({"description": {"fuzzy_bits": 3}})
    FieldSchemes(lambda: store, error).remember(old)
    later = FieldSchemes(lambda: store, error)
    assert later.candidates(field_scheme_of(old)) == [old]  # patterns and flags kept
    assert later.candidates(field_scheme_of(new)) == []
    assert store.get_meta(FIELD_SCHEME_NAMESPACE, f"{field_scheme_of(old):08x}") is not None
    assert seen == []


def test_field_rules_of_another_version_or_damaged_are_left_out(store: Any) -> None:
    seen, error = _errors()
    good = _item_rules({"price": {"skip": True}})
    tag = field_scheme_of(good)
    sets = [
        {**describe_field_rules(good), "version": ITEM_HASH_VERSION + 1},  # another hashing
        {"version": ITEM_HASH_VERSION, "rules": {"price": {"ignore": [["[", 0]]}}},  # damaged
        {"version": ITEM_HASH_VERSION, "fields": ["x"], "rules": {}},  # makes another tag
        "not a dict",
        describe_field_rules(good),
    ]
    store.put_meta(FIELD_SCHEME_NAMESPACE, f"{tag:08x}", {"sets": sets})
    assert FieldSchemes(lambda: store, error).candidates(tag) == [good]
    assert seen == []


def _page(items: list[dict[str, Any]], rules: ItemRules) -> tuple[list[dict[str, int]], int]:
    hashes = [item_hashes(i, rules.fields, rules.as_dict()) for i in items]
    return hashes, field_scheme_of(rules)


MUG = {"sku": "m1", "name": "Mug", "price": "10.00 EUR", "description": "A blue mug."}


@pytest.mark.parametrize(
    ("now", "changed", "names"),
    [
        (MUG, False, ()),  # the rules changed, the item did not
        ({**MUG, "price": "10.50 EUR"}, True, (("price",),)),  # a real edit, same visit
        ({**MUG, "price": "10.00 eur"}, False, ()),  # what the old rules ignored too
    ],
)
def test_items_hashed_by_old_rules_are_judged_by_them(
    now: dict[str, Any], changed: bool, names: tuple[tuple[str, ...], ...]
) -> None:
    """Stored hashes carry the tag of their rules; after a rules change the items are
    hashed again by the old rules, so the verdict is exact: no flood, no miss."""
    old = _item_rules({"price": {"ignore": [r"(?i)eur"]}})
    new = _item_rules({"price": {"ignore": [r"(?i)eur"]}, "description": {"fuzzy_bits": 2}})
    stored, old_tag = _page([MUG], old)
    record = PageState(
        "0" * 40, "u", last_crawl=1.0, fingerprint=1, field_hashes=tag_hashes(stored, old_tag)
    )
    hashes, tag = _page([now], new)

    def rehash(asked: int) -> list[Hashed]:
        assert asked == old_tag
        again, _ = _page([now], old)
        return [(again, old.fields, old.as_dict())]

    content = PageContent(1, items=hashes, rules=new.as_dict(), field_scheme=tag, rehash=rehash)
    verdict = judge(record, content, 3)
    assert (verdict.changed, verdict.item_changes if changed else ()) == (changed, names)
    flood = judge(record, replace(content, rehash=lambda asked: []), 3)  # old rules unknown
    assert flood.changed  # the description's hash is a simhash now: the flood, once


def test_hashes_stored_before_tags_are_compared_as_they_are() -> None:
    rules = _item_rules()
    stored, tag = _page([MUG], rules)
    record = PageState("0" * 40, "u", last_crawl=1.0, fingerprint=1, field_hashes=stored)
    content = PageContent(1, items=stored, field_scheme=tag, rehash=lambda asked: [])
    assert not judge(record, content, 3).changed
