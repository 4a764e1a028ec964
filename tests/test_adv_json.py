"""Attacks on JSON answers judged by their data (:func:`canonical_json`): different
data must never read the same, and the same data written another way must."""

from __future__ import annotations

import pytest

from scrapy_fresh.fingerprint.content import canonical_json, content_text


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ('{"qty": 1e400}', '{"qty": 2e400}'),  # past a float's range: both Infinity
        ('{"wei": 0.1}', '{"wei": 0.10000000000000000001}'),  # past a float's digits
        ('{"id": 9007199254740993.0}', '{"id": 9007199254740992.0}'),
        ('{"note": "\\ud83d"}', '{"note": "\\ud83c"}'),  # two different lone surrogates
    ],
)
def test_different_data_never_reads_the_same(before: str, after: str) -> None:
    assert content_text(before.encode(), data=True) != content_text(after.encode(), data=True)


@pytest.mark.parametrize(
    ("first", "again"),
    [
        ('{"price": 1}', '{"price": 1.0}'),  # one number (RFC 8259: no int/float)
        ('{"price": 100}', '{"price": 1e2}'),
        ('{"price": 100.0}', '{"price": 1E+2}'),
        ('{"delta": 0}', '{"delta": -0.0}'),
        ('{"rate": 0.5}', '{"rate": 5e-1}'),
        ('{"rate": 0.1}', '{"rate": 0.10}'),
    ],
)
def test_the_same_number_written_another_way_reads_the_same(first: str, again: str) -> None:
    assert canonical_json(first) == canonical_json(again)


def test_a_huge_exponent_is_read_as_text_not_expanded() -> None:
    body = '{"n": 1e999999999}'
    assert canonical_json(body) is None  # never a billion-digit integer
    assert content_text(body.encode(), data=True) != content_text(b'{"n": 1e999999998}', data=True)
