"""The policy checks' fast paths (exact floats in range) answer as their full checks do."""

from __future__ import annotations

import math
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy._validate import (
    check_count,
    check_finite,
    check_non_negative,
    check_positive,
    check_probability,
)

VALUES = st.floats() | st.integers() | st.booleans() | st.just(math.inf) | st.just(-0.0)


def _full(low: float, high: float, *, low_open: bool = False) -> Callable[[str, object], float]:
    def check(name: str, value: object) -> float:
        result = check_finite(name, value)
        if result < low or (low_open and result == low) or result > high:
            raise ConfigError(name)
        return result

    return check


CHECKS = [
    (check_non_negative, _full(0.0, math.inf)),
    (check_count, _full(0.0, math.inf)),
    (check_positive, _full(0.0, math.inf, low_open=True)),
    (check_probability, _full(0.0, 1.0)),
]


def _answer(check: Callable[[str, object], float], value: object) -> object:
    try:
        return check("x", value)
    except (TypeError, ConfigError) as exc:
        return type(exc)


@given(value=VALUES)
def test_each_check_answers_as_its_full_check(value: object) -> None:
    for check, full in CHECKS:
        got, expected = _answer(check, value), _answer(full, value)
        assert got == expected, (check.__name__, value)
        if isinstance(got, float):
            assert type(got) is float
