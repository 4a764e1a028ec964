"""JSON answers are judged by their data (:func:`canonical_json`): layout and the order
of an object's members are not content; every value is."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy.http import TextResponse

from scrapy_fresh.crawl.middlewares import page_content
from scrapy_fresh.fingerprint.content import canonical_json, content_text, digest, is_json

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _shuffled(value: object, rng: random.Random) -> object:
    """``value`` with every object's members in another order."""
    if isinstance(value, dict):
        items = [(k, _shuffled(v, rng)) for k, v in value.items()]
        rng.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


def answer(body: bytes, content_type: bytes = b"application/json") -> TextResponse:
    return TextResponse(
        "http://shop.test/api/1", body=body, headers={"Content-Type": content_type}
    )


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("application/json", True),
        ("application/json; charset=utf-8", True),
        ("TEXT/JSON", True),
        ("application/ld+json", True),
        ("application/vnd.api+json", True),
        ("application/problem+json", True),
        ("application/jsonp", False),
        ("application/javascript", False),
        ("text/html", False),
        ("json", False),
        ("", False),
        (None, False),
    ],
)
def test_is_json(content_type: str | None, expected: bool) -> None:
    assert is_json(content_type) is expected


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES, st.randoms(use_true_random=False), st.sampled_from([None, 0, 2]))
def test_the_same_data_in_any_order_and_layout_reads_the_same(
    value: object, rng: random.Random, indent: int | None
) -> None:
    again = json.dumps(_shuffled(value, rng), indent=indent, ensure_ascii=rng.random() < 0.5)
    assert canonical_json(again) == canonical_json(json.dumps(value))
    assert digest(again.encode(), "utf-8", data=True) == digest(json.dumps(value), data=True)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({"sku": "W-1", "price": 10.99, "stock": 5}, {"sku": "W-1", "price": 12.49, "stock": 5}),
        ({"sku": "W-1", "stock": 5}, {"sku": "W-1", "stock": 0}),
        ({"sku": "W-1", "in_stock": True}, {"sku": "W-1", "in_stock": False}),
        ({"sku": "W-1", "price": 1}, {"sku": "W-1", "price": "1"}),
        ({"sku": "W-1", "tags": ["a", "b"]}, {"sku": "W-1", "tags": ["b", "a"]}),
        ({"sku": "W-1"}, {"sku": "W-1", "sale": None}),
        ({"html": "<p>Only 3 left</p>"}, {"html": "<p>Only 2 left</p>"}),
        ({"name": "Widget"}, {"name": "Wîdget"}),
    ],
)
def test_a_changed_value_is_a_change(before: object, after: object) -> None:
    first = page_content(answer(json.dumps(before).encode()))
    second = page_content(answer(json.dumps(after, indent=2).encode()))
    assert first.digest != second.digest


def test_noise_in_json_is_noise_as_in_a_page() -> None:
    before = {"price": 9.5, "generated": "2025-01-01T10:00:00Z"}
    after = {"generated": "2025-01-02T11:30:00Z", "price": 9.5}
    assert (
        page_content(answer(json.dumps(before).encode())).digest
        == page_content(answer(json.dumps(after).encode())).digest
    )


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,  # past the interpreter's nesting limit
        b'{"n": ' + b"9" * 5000 + b"}",  # past int's digit limit
        b'{"price": 9.5',  # cut short
        b"\xff\xfe not json at all",
        b"<html><body><p>An error page served as JSON</p></body></html>",
        b"",
    ],
)
def test_a_body_that_is_not_json_is_judged_as_text(body: bytes) -> None:
    content = page_content(answer(body))
    assert content.digest is not None
    edited = page_content(answer(body + b" 7"))
    assert edited.digest != content.digest  # its text still decides


def test_markup_in_a_body_said_to_be_json_is_text_not_a_page() -> None:
    """Read as text: a tag in it is no tag, nothing is dropped as page furniture."""
    body = b'<nav>Stock: 4</nav><p>{"price": 9.5'
    assert "Stock: 4" in content_text(body, data=True)


def test_a_json_byte_order_mark_is_not_content() -> None:
    assert canonical_json('\ufeff{"a": 1}') == canonical_json('{"a":1}') == '{"a":1}'
