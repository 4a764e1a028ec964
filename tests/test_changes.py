"""Change output, the pure parts: matching items, keeping them, previous values, diffs,
the verdict with a key field, and the settings (scrapy_fresh.changes.compare, issue 17)."""

from __future__ import annotations

import zlib

import pytest
from scrapy.settings import Settings

from scrapy_fresh.changes.compare import (
    ChangeConfig,
    describe_changes,
    match_items,
    pack_items,
    text_diff,
    unpack_items,
)
from scrapy_fresh.config import FreshConfig
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.fingerprint.itemfields import item_hashes
from scrapy_fresh.fingerprint.verdict import PageContent, judge
from scrapy_fresh.store.base import PageState

KEY = "0" * 40


def hashes(*items: dict[str, str]) -> list[dict[str, int]]:
    return [item_hashes(item, None, {}) for item in items]


def visited(items: list[dict[str, int]], kept: bytes | None = None) -> PageState:
    return PageState(KEY, "u", last_crawl=1.0, visits=1, fingerprint=0, field_hashes=items,
                     kept_items=kept)  # fmt: skip


A = {"sku": "a", "price": "1.00"}
B = {"sku": "b", "price": "2.00"}
C = {"sku": "c", "price": "3.00"}


def test_reordered_items_are_no_change_with_a_key_field() -> None:
    state = visited(hashes(A, B, C))
    content = PageContent(0, items=hashes(C, A, B), key_field="sku")
    verdict = judge(state, content, 3)
    assert (verdict.changed, verdict.matches) == (False, (2, 0, 1))


def test_reordered_items_are_a_change_by_position() -> None:
    verdict = judge(visited(hashes(A, B)), PageContent(0, items=hashes(B, A)), 3)
    assert verdict.changed
    assert verdict.item_changes == (("sku", "price"), ("sku", "price"))


def test_an_item_replaced_by_another_is_new_and_the_page_changed() -> None:
    verdict = judge(visited(hashes(A, B)), PageContent(0, items=hashes(A, C), key_field="sku"), 3)
    assert verdict.changed
    assert verdict.matches == (0, None)
    assert verdict.item_changes == ((), ("sku", "price"))


def test_an_item_gone_from_the_page_is_a_change_even_when_the_count_stays() -> None:
    # b went away, a second a came: same count, every new item matched or new
    verdict = judge(visited(hashes(A, B)), PageContent(0, items=hashes(A, A), key_field="sku"), 3)
    assert verdict.changed
    assert verdict.matches == (0, None)


def test_items_without_the_key_are_matched_by_their_position_among_themselves() -> None:
    assert match_items(hashes({"x": "1"}, A), hashes(A, {"x": "2"}), "sku") == [1, 0]


def test_pack_keeps_the_named_fields_and_refuses_more_than_the_cap() -> None:
    items = [{"price": "9.50", "name": "Mug", "when": object()}]
    blob = pack_items(items, [["price", "when"]], 10_000)
    assert blob is not None
    got = unpack_items(blob)
    assert list(got[0]) == ["price", "when"]
    assert got[0]["price"] == "9.50"
    assert got[0]["when"].startswith("<object")
    assert pack_items([{"t": "x" * 5000}], [["t"]], 20) is None
    assert unpack_items(b"not zlib") == []
    assert unpack_items(zlib.compress(b'{"a": 1}')) == []  # not a list of items


def test_describe_changes_gives_previous_values_and_diffs_of_long_text_only() -> None:
    long_before = "One. Two. Three. Four. Five."
    long_after = "One. Two. Three and a half. Four. Five."
    before = pack_items([{"price": "1.00", "text": long_before}], [["price", "text"]], 10_000)
    got = describe_changes(
        [("price", "text"), ("price",)], [0, None], before,
        [{"price": "1.50", "text": long_after}, {"price": "7.00"}], 10,
    )  # fmt: skip
    first, second = got
    assert second is None  # a new item: nothing to compare with
    assert first is not None
    assert first.previous == {"price": "1.00", "text": long_before}
    assert list(first.diff) == ["text"]  # "1.00" is shorter than 10 characters
    assert first.diff["text"].splitlines()[2:] == [
        "@@ -2,3 +2,3 @@",
        " Two.",
        "-Three.",
        "+Three and a half.",
        " Four.",
    ]


def test_text_diff_is_none_for_short_or_non_text_values() -> None:
    assert text_diff("t", "short", "shorter", 100) is None
    assert text_diff("t", ["a list"] * 50, "x" * 500, 10) is None
    assert text_diff("t", "x" * 500, "x" * 500, 10) is None  # nothing differs


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"FRESH_KEEP_ITEMS_MAX_BYTES": 0}, "FRESH_KEEP_ITEMS_MAX_BYTES"),
        ({"FRESH_DIFF_MIN_CHARS": "many"}, "FRESH_DIFF_MIN_CHARS"),
        ({"FRESH_ITEM_KEY_FIELD": ""}, "FRESH_ITEM_KEY_FIELD"),
        ({"FRESH_ITEM_KEY_FIELD": "fresh_changed"}, "scrapy_fresh's own"),
        (
            {"FRESH_ITEM_KEY_FIELD": "sku", "FRESH_FINGERPRINT_FIELDS": ["price"]},
            "must be one of FRESH_FINGERPRINT_FIELDS",
        ),
        (
            {"FRESH_ITEM_KEY_FIELD": "sku", "FRESH_FIELD_RULES": {"sku": {"fuzzy_bits": 2}}},
            "compared exactly",
        ),
        ({"FRESH_WEBHOOK_URL": "ftp://x"}, "FRESH_WEBHOOK_URL .* http:// or https://"),
        ({"FRESH_WEBHOOK_URL": "http://127.0.0.1:9/"}, "FRESH_WEBHOOK_SECRET must be set"),
        (
            {"FRESH_WEBHOOK_BACKOFF_SECS": 10, "FRESH_WEBHOOK_MAX_BACKOFF_SECS": 5},
            "FRESH_WEBHOOK_MAX_BACKOFF_SECS",
        ),
        ({"FRESH_WEBHOOK_OUTBOX": "out/%(name)s.sqlite"}, "FRESH_WEBHOOK_OUTBOX"),
    ],
)
def test_bad_change_settings_fail_at_start_up_naming_the_setting(
    settings: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        FreshConfig.from_settings(Settings(settings))


def test_change_settings_are_read() -> None:
    config = FreshConfig.from_settings(
        Settings(
            {
                "FRESH_KEEP_ITEMS": "true",
                "FRESH_ITEM_KEY_FIELD": " sku ",
                "FRESH_DIFF_MIN_CHARS": "40",
            }
        )
    ).changes
    assert config == ChangeConfig(keep_items=True, item_key_field="sku", diff_min_chars=40)
