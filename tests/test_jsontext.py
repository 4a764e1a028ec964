"""compact_encoder gives the text json.JSONEncoder gives, and fails as it does."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapy_fresh.jsontext import compact_encoder

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
KEYS = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(KEYS, inner, max_size=5)
    ),
    max_leaves=20,
)
OPTIONS = st.fixed_dictionaries(
    {"ensure_ascii": st.booleans(), "allow_nan": st.booleans(), "sort_keys": st.booleans()}
)


def _outcome(encode: Any, value: Any) -> tuple[str, str]:
    try:
        return ("text", encode(value))
    except (TypeError, ValueError) as exc:
        return (type(exc).__name__, str(exc))


@given(VALUES, OPTIONS)
def test_the_same_text_or_the_same_error_as_the_standard_encoder(
    value: Any, options: dict[str, bool]
) -> None:
    reference = json.JSONEncoder(separators=(",", ":"), check_circular=False, **options).encode
    assert _outcome(compact_encoder(**options), value) == _outcome(reference, value)


def test_compact_text_of_a_record_column() -> None:
    encode = compact_encoder(ensure_ascii=False)
    assert encode({"url": "http://h/é", "n": [1, 2.5]}) == '{"url":"http://h/é","n":[1,2.5]}'
    assert compact_encoder()({"é": None}) == '{"\\u00e9":null}'


def test_not_a_number_is_refused_when_asked() -> None:
    with pytest.raises(ValueError, match="Out of range float"):
        compact_encoder(allow_nan=False)([math.nan])
    assert compact_encoder()([math.inf]) == "[Infinity]"


def test_a_value_json_cannot_encode_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        compact_encoder()({1, 2})
    with pytest.raises(TypeError, match="keys must be"):
        compact_encoder()({(1, 2): 3})
