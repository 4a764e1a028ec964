"""Item fields judged exactly, field by field, with the rules users set (issue 15)."""

from __future__ import annotations

import re
from typing import Any, ClassVar

import pytest
from scrapy import Spider
from scrapy.http import HtmlResponse, Response
from scrapy.settings import Settings

from scrapy_fresh.config import FreshConfig
from scrapy_fresh.crawl.middlewares import FreshSpiderMiddleware
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.fingerprint.itemfields import (
    FieldRule,
    changed_fields,
    field_scheme,
    item_hashes,
    normalise_value,
    parse_field_rules,
    untagged,
)
from scrapy_fresh.fingerprint.shingles import fingerprint_html, fingerprint_text
from scrapy_fresh.fingerprint.verdict import PageContent, judge
from scrapy_fresh.store.base import PageState
from scrapy_fresh.validators import Check
from tests.conftest import item_pipeline, items_passed

URL = "http://shop.example/p/1"
HTML = b"<html><body><h1>Mug</h1><aside>rendered in 12 ms</aside></body></html>"
DESCRIPTION = (
    "A sturdy ceramic mug, glazed in deep blue, that holds a generous cup of coffee or tea. "
    "Each one is thrown by hand in our studio, so no two are quite alike. "
) * 6
MUG = {"name": "Mug", "price": "51.77", "stock": "19 available", "description": DESCRIPTION}


# -- normalising and hashing --------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("51.77", "52.77"),  # same number of digits
        ("19 available", "18 available"),
        ("1,299.00", "1,199.00"),
        ("Mug", "mug"),  # case is kept
        ("in stock", "in stock!"),
        (51.77, 52.77),
        (["S", "M"], ["S", "M", "L"]),
        ({"w": 10, "h": 12}, {"w": 10, "h": 13}),
    ],
)
def test_every_real_edit_of_a_value_changes_its_hash(old: Any, new: Any) -> None:
    before = item_hashes({"f": old}, None, {})
    after = item_hashes({"f": new}, None, {})
    assert changed_fields(before, after, None, {}) == ["f"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("19 available", "  19\tavailable\n"),
        ("51.77", "51.77"),
        ({"h": 12, "w": 10}, {"w": 10, "h": 12}),  # dict order is not content
        ("Mug", "Mug  "),
    ],
)
def test_whitespace_and_key_order_are_not_content(old: Any, new: Any) -> None:
    assert item_hashes({"f": old}, None, {}) == item_hashes({"f": new}, None, {})


def test_none_and_fresh_fields_are_not_counted() -> None:
    hashes = item_hashes(
        {"name": "Mug", "gone": None, "fresh_changed": True, "fresh_changed_fields": []},
        None,
        {},
    )
    assert list(hashes) == ["name"]


def test_counted_fields_and_skip_rules() -> None:
    item = {"name": "Mug", "price": "51.77", "views": "1,204 views"}
    assert list(item_hashes(item, ("name", "price"), {})) == ["name", "price"]
    assert list(item_hashes(item, None, {"views": FieldRule(skip=True)})) == ["name", "price"]


def test_ignore_patterns_take_out_what_is_not_content() -> None:
    rules = parse_field_rules(
        {"sidebar": {"ignore": [r"rendered in \d+ ms", re.compile(r"session=\w+")]}}, "X"
    )
    old = item_hashes({"sidebar": "Cart (2) rendered in 12 ms session=ab12"}, None, rules)
    new = item_hashes({"sidebar": "Cart (2)   rendered in 873 ms session=zz99"}, None, rules)
    assert changed_fields(old, new, None, rules) == []
    other = item_hashes({"sidebar": "Cart (3) rendered in 12 ms session=ab12"}, None, rules)
    assert changed_fields(old, other, None, rules) == ["sidebar"]  # the rest still counts
    assert normalise_value(["a rendered in 3 ms", "b"], rules["sidebar"]) == '["a","b"]'


def test_a_fuzzy_field_tolerates_its_bits_and_an_exact_one_nothing() -> None:
    edited = DESCRIPTION.replace("generous", "large", 1)
    rules = {"description": FieldRule(fuzzy_bits=3)}
    old = item_hashes({"description": DESCRIPTION}, None, rules)
    new = item_hashes({"description": edited}, None, rules)
    assert old["description"] == fingerprint_text(DESCRIPTION, normalize_digits=False)
    distance = (old["description"] ^ new["description"]).bit_count()
    assert changed_fields(old, new, None, rules) == ([] if distance <= 3 else ["description"])
    assert changed_fields(old, new, None, {"description": FieldRule(fuzzy_bits=0)}) == (
        ["description"] if distance else []
    )
    exact_old = item_hashes({"description": DESCRIPTION}, None, {})
    exact_new = item_hashes({"description": edited}, None, {})
    assert changed_fields(exact_old, exact_new, None, {}) == ["description"]
    rewritten = item_hashes({"description": "Out of production."}, None, rules)
    assert changed_fields(old, rewritten, None, rules) == ["description"]


def test_fields_that_appear_or_go_away_changed_unless_no_longer_counted() -> None:
    old = item_hashes({"name": "Mug", "price": "51.77", "old": "x"}, None, {})
    new = item_hashes({"name": "Mug", "price": "51.77", "sale": "yes"}, None, {})
    assert changed_fields(old, new, None, {}) == ["sale", "old"]
    narrowed = item_hashes({"name": "Mug", "price": "51.77"}, ("name", "price"), {})
    assert changed_fields(old, narrowed, ("name", "price"), {}) == []


# -- the rules, validated -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ([("price", {})], r"FRESH_FIELD_RULES \(\[.*must be a dict of field name -> rule"),
        ({"price": "exact"}, r"FRESH_FIELD_RULES\['price'\] \('exact'\) must be a dict"),
        ({"price": {"fuzzy": 3}}, r"FRESH_FIELD_RULES\['price'\] has unknown key\(s\) 'fuzzy'"),
        ({"d": {"fuzzy_bits": 64}}, r"FRESH_FIELD_RULES\['d'\]\['fuzzy_bits'\] \(64\) must be"),
        ({"d": {"fuzzy_bits": True}}, r"\['fuzzy_bits'\] \(True\) must be None"),
        ({"d": {"fuzzy_bits": 2.5}}, r"\['fuzzy_bits'\] \(2.5\) must be None"),
        ({"s": {"ignore": "(unclosed"}}, r"\['s'\]\['ignore'\] holds '\(unclosed', not a valid"),
        ({"s": {"ignore": [""]}}, r"\['s'\]\['ignore'\] holds ''; expected a non-empty"),
        ({"s": {"ignore": 3}}, r"\['s'\]\['ignore'\] \(3\) must be a regular expression"),
        ({"s": {"skip": "yes"}}, r"\['s'\]\['skip'\] \('yes'\) must be True or False"),
        ({3: {"skip": True}}, r"FRESH_FIELD_RULES has a bad field name 3"),
    ],
)
def test_bad_field_rules_stop_the_crawl_naming_the_setting(rules: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        FreshConfig.from_settings(Settings({"FRESH_FIELD_RULES": rules}))


def test_good_field_rules_are_read_once() -> None:
    config = FreshConfig.from_settings(
        Settings(
            {
                "FRESH_FIELD_RULES": {
                    "description": {"fuzzy_bits": 3},
                    "sidebar": {"ignore": r"rendered in \d+ ms"},
                    "views": {"skip": True},
                }
            }
        )
    )
    rules = config.field_rules
    assert rules["description"] == FieldRule(fuzzy_bits=3)
    assert [p.pattern for p in rules["sidebar"].ignore] == [r"rendered in \d+ ms"]
    assert rules["views"].skip
    assert FreshConfig.from_settings(Settings()).field_rules == {}


@pytest.mark.parametrize("value", [[], "", " , ", 3, ["a", 1]])
def test_bad_fingerprint_fields_name_the_setting(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"FRESH_FINGERPRINT_FIELDS \("):
        FreshConfig.from_settings(Settings({"FRESH_FINGERPRINT_FIELDS": value}))


class RulesSpider(Spider):
    name = "rules"
    fresh_field_rules: ClassVar[Any] = {"sidebar": {"ignore": "(unclosed"}}


class FieldsSpider(Spider):
    name = "fields"
    fresh_fingerprint_fields: ClassVar[Any] = ()


@pytest.mark.parametrize(
    ("spider", "message"),
    [
        (RulesSpider, r"RulesSpider.fresh_field_rules\['sidebar'\]\['ignore'\] holds"),
        (FieldsSpider, r"FieldsSpider.fresh_fingerprint_fields \(\(\)\) names no field"),
    ],
)
def test_bad_spider_attributes_stop_the_crawl_at_start_up(
    harness: Any, spider: type[Spider], message: str
) -> None:
    h = harness(spider=spider)
    with pytest.raises(ConfigError, match=message):
        FreshSpiderMiddleware.from_crawler(h.crawler)


# -- the verdict -------------------------------------------------------------------------


def _state(**fields: Any) -> PageState:
    return PageState("0" * 40, URL, last_crawl=10.0, fingerprint=fields.pop("fingerprint", 5),
                     visits=1, **fields)  # fmt: skip


def test_a_new_page_reports_every_counted_field() -> None:
    items = [item_hashes(MUG, None, {}), item_hashes({"name": "Cup"}, None, {})]
    verdict = judge(PageState("0" * 40, URL), PageContent(1, items=items), 3)
    assert (verdict.new, verdict.changed, verdict.basis) == (True, True, "new")
    assert verdict.item_changes == (("name", "price", "stock", "description"), ("name",))


def test_items_are_compared_by_field_and_position() -> None:
    old = [item_hashes(MUG, None, {}), item_hashes({"name": "Cup", "price": "9.00"}, None, {})]
    new = [item_hashes({**MUG, "stock": "18 available"}, None, {}), old[1]]
    verdict = judge(_state(field_hashes=old), PageContent(5, items=new), 3)
    assert (verdict.changed, verdict.basis, verdict.magnitude) == (True, "items", 0)
    assert verdict.item_changes == (("stock",), ())
    same = judge(_state(field_hashes=old), PageContent(1 << 40, items=old), 3)
    assert (same.changed, same.item_changes) == (False, ((), ()))  # the simhash moved: no matter


def test_items_that_appear_or_go_away_change_the_page() -> None:
    one = [item_hashes(MUG, None, {})]
    more = judge(_state(field_hashes=one), PageContent(5, items=[*one, one[0]]), 3)
    assert (more.changed, more.item_changes) == (
        True,
        ((), ("name", "price", "stock", "description")),
    )
    fewer = judge(_state(field_hashes=[*one, one[0]]), PageContent(5, items=one), 3)
    assert (fewer.changed, fewer.item_changes) == (True, ((),))
    none = judge(_state(field_hashes=one), PageContent(5), 3)
    assert (none.changed, none.basis) == (True, "items")


def test_a_record_from_before_field_hashes_is_judged_by_its_simhash_once() -> None:
    items = [item_hashes(MUG, None, {})]
    near = judge(_state(fingerprint=0b111), PageContent(0b100, items=items), 3)
    assert (near.changed, near.basis, near.item_changes) == (False, "simhash", ())
    far = judge(_state(fingerprint=0), PageContent(0xFFFF, items=items), 3)
    assert (far.changed, far.item_changes) == (True, (("name", "price", "stock", "description"),))


def test_the_page_digest_decides_for_pages_without_items_when_both_visits_have_one() -> None:
    assert judge(_state(content_hash=7), PageContent(5, digest=8), 3).changed
    same = judge(_state(content_hash=7), PageContent(1 << 40, digest=7), 3)
    assert (same.changed, same.basis, same.magnitude) == (False, "digest", 3)
    before = judge(_state(), PageContent(5, digest=8), 3)  # no stored digest: simhash
    assert (before.changed, before.basis) == (False, "simhash")


# -- the spider middleware ------------------------------------------------------------------


def _run(mw: FreshSpiderMiddleware, response: Response, items: list[dict[str, Any]]) -> list[Any]:
    """Run the spider middleware over a callback that yields ``items``."""

    async def output() -> Any:
        for item in items:
            yield item

    agen = mw.process_spider_output(response, output())
    out = []
    while True:
        try:
            agen.__anext__().send(None)  # type: ignore[attr-defined]
        except StopIteration as done:  # noqa: PERF203
            out.append(done.value)
        except StopAsyncIteration:
            return out


@pytest.fixture
def visit(harness: Any, known: Any) -> Any:
    """``visit(items_before, items_now, settings, meta)``: one visit of a known page whose
    previous visit yielded ``items_before``; returns (harness, items, request)."""

    def make(
        before: list[dict[str, Any]],
        now: list[dict[str, Any]],
        settings: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        rules: Any = None,
    ) -> Any:
        config = FreshConfig.from_settings(Settings(settings or {}))
        field_rules = config.field_rules if rules is None else rules
        record = known(
            URL,
            last_crawl=900_000.0,
            next_due=999_000.0,
            fingerprint=fingerprint_html(HTML),
            field_hashes=[item_hashes(i, config.fingerprint_fields, field_rules) for i in before],
        )
        h = harness(settings, records=[record])
        pipeline = item_pipeline(h.crawler)
        mw = FreshSpiderMiddleware.from_crawler(h.crawler)
        (request,) = h.drain()
        request.meta.update(meta or {})
        items = _run(mw, HtmlResponse(URL, body=HTML, request=request), [dict(i) for i in now])
        return h, items, items_passed(pipeline, items), request

    return make


def test_a_changed_price_is_reported_on_the_item_and_counted(visit: Any) -> None:
    h, (item,), _, request = visit([MUG], [{**MUG, "price": "52.77"}])
    assert request.meta["fresh_outcome"] == "changed"
    assert (item["fresh_changed"], item["fresh_changed_fields"]) == (True, ["price"])
    assert h.stat("fresh/changed") == 1
    assert h.stat("fresh/items_changed") == 1
    assert h.stat("fresh/field_changed/price") == 1
    stored, tag = untagged(h.state(URL).field_hashes)
    assert stored == [item_hashes({**MUG, "price": "52.77"}, None, {})]
    assert tag == field_scheme(None, {})  # the rules that made them, kept with them


def test_an_unchanged_item_says_so_whatever_the_page_around_it(visit: Any) -> None:
    h, (item,), _, request = visit([MUG], [dict(MUG)])
    assert request.meta["fresh_outcome"] == "unchanged"
    assert (item["fresh_changed"], item["fresh_changed_fields"]) == (False, [])
    assert h.stat("fresh/items_changed") == 0


def test_spider_attribute_rules_and_meta_rules_apply_field_by_field(visit: Any) -> None:
    before = {**MUG, "sidebar": "rendered in 12 ms"}
    now = {**MUG, "sidebar": "rendered in 873 ms", "price": "52.77"}
    rules = {"sidebar": FieldRule(ignore=(re.compile(r"rendered in \d+ ms"),))}
    settings = {"FRESH_FIELD_RULES": {"sidebar": {"ignore": [r"rendered in \d+ ms"]}}}
    _, (item,), _, _ = visit([before], [now], settings, rules=rules)
    assert item["fresh_changed_fields"] == ["price"]
    meta = {"fresh_field_rules": {"price": {"skip": True}}}  # on top of the setting's
    _, (item,), _, request = visit([before], [now], settings, meta, rules=rules)
    assert (item["fresh_changed"], item["fresh_changed_fields"]) == (False, [])
    assert request.meta["fresh_outcome"] == "unchanged"
    meta = {"fresh_fingerprint_fields": ["name", "stock"]}
    _, (item,), _, _ = visit([before], [now], settings, meta, rules=rules)
    assert item["fresh_changed_fields"] == []


def test_bad_meta_rules_are_counted_and_ignored(visit: Any, caplog: Any) -> None:
    meta = {"fresh_field_rules": {"price": {"fuzzy_bits": -1}}}
    h, (item,), _, _ = visit([MUG], [{**MUG, "price": "52.77"}], meta=meta)
    assert item["fresh_changed_fields"] == ["price"]
    assert h.stat("fresh/bad_meta") == 1
    assert "meta['fresh_field_rules']['price']['fuzzy_bits'] (-1)" in caplog.text


def test_dropping_unchanged_items_keeps_the_changed_ones_of_a_page(visit: Any) -> None:
    cup = {"name": "Cup", "price": "9.00"}
    h, items, kept, _ = visit(
        [MUG, cup], [dict(MUG), {**cup, "price": "9.50"}], {"FRESH_DROP_UNCHANGED_ITEMS": True}
    )
    assert [i["fresh_changed"] for i in items] == [False, True]
    assert [i["name"] for i in kept] == ["Cup"]
    assert h.stat("fresh/items_dropped_unchanged") == 1


def test_items_without_a_counted_field_follow_their_page(visit: Any) -> None:
    _, (item,), _, request = visit([], [{"views": None}])
    assert request.meta["fresh_outcome"] == "unchanged"  # the page's simhash: the same
    assert (item["fresh_changed"], item["fresh_changed_fields"]) == (False, [])


# -- length probes are opt-in ------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "plan"), [({}, Check.NONE), ({"FRESH_LENGTH_PROBE": True}, Check.HEAD)]
)
def test_a_content_length_alone_is_no_check_unless_opted_into(
    harness: Any, settings: dict[str, Any], plan: Check
) -> None:
    h = harness(settings)
    got, _, _ = h.runtime.checks.check_plan("0" * 40, "a.example", None, None, 10_000, 1)
    assert got is plan
    head, _, _ = h.runtime.checks.check_plan("0" * 40, "a.example", '"e"', None, 10_000, 1)
    assert head is Check.CONDITIONAL  # validators: a conditional GET, as before


CODE_BEFORE = {"text": "for x in xs:\n    check(x)\n    count += 1"}
CODE_AFTER = {"text": "for x in xs:\n    check(x)\ncount += 1"}  # a line left the loop


def test_a_field_marked_as_code_keeps_the_indentation_of_its_lines() -> None:
    code = parse_field_rules({"text": {"code": True}}, "FRESH_FIELD_RULES")
    assert item_hashes(CODE_BEFORE, None, code) != item_hashes(CODE_AFTER, None, code)
    # trailing spaces, blank lines and the line ends' kind are still layout
    relaid = {"text": "for x in xs:\r\n    check(x)   \r\n\r\n    count += 1\n"}
    assert item_hashes(CODE_BEFORE, None, code) == item_hashes(relaid, None, code)


def test_by_default_a_fields_indentation_is_layout() -> None:
    """Without the rule a value's whitespace is the template's (a field taken from
    indented markup): a changed indentation is no change. Documented (FRESH_FIELD_RULES,
    ``code``); the rule is opt-in."""
    assert item_hashes(CODE_BEFORE, None, {}) == item_hashes(CODE_AFTER, None, {})


def test_the_code_rule_is_checked_and_kept_with_the_rules_description() -> None:
    from scrapy_fresh.fingerprint.itemfields import (
        ItemRules,
        describe_field_rules,
        field_scheme_of,
        rebuild_field_rules,
    )

    with pytest.raises(ConfigError, match=r"FRESH_FIELD_RULES\['text'\]\['code'\]"):
        parse_field_rules({"text": {"code": "yes"}}, "FRESH_FIELD_RULES")
    code = ItemRules.of(None, parse_field_rules({"text": {"code": True}}, "R"))
    plain = ItemRules.of(None, parse_field_rules({"text": {"ignore": "x"}}, "R"))
    assert rebuild_field_rules(describe_field_rules(code)) == code
    assert field_scheme_of(code) != field_scheme_of(plain)
    # rules without it are described as before it existed: their stored tags still hold
    assert "code" not in describe_field_rules(plain)["rules"]["text"]
