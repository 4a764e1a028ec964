"""Argument checks shared by the policy modules (internal).

Every check names the argument, shows the bad value and says what is expected, in the
style of :mod:`scrapy_fresh.exceptions`: wrong types raise :class:`TypeError`, bad values
raise :class:`~scrapy_fresh.exceptions.ConfigError` (a :class:`ValueError`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

from scrapy_fresh.exceptions import ConfigError

__all__ = [
    "check_count",
    "check_finite",
    "check_non_negative",
    "check_positive",
    "check_probability",
    "check_times",
]


def check_finite(name: str, value: object) -> float:
    """Return ``value`` as a float; reject non-numbers (and bools), NaN and infinities."""
    if type(value) is float and value - value == 0.0:  # fast path: a finite float
        return value
    if type(value) is int:  # fast path: an int (a count), never a bool
        return float(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a real number (int or float), got {type(value).__name__}: {value!r}."
        )
    result = float(value)
    if not math.isfinite(result):
        raise ConfigError(f"{name} ({value!r}) must be a finite number.")
    return result


def check_non_negative(name: str, value: object) -> float:
    """Return ``value`` as a float >= 0."""
    if type(value) is float and 0.0 <= value < math.inf:  # fast path: called per visit
        return value
    if type(value) is int and value >= 0:  # a count (visits, changes): per visit too
        return float(value)
    result = check_finite(name, value)
    if result < 0:
        raise ConfigError(f"{name} ({value!r}) must be 0 or higher.")
    return result


def check_positive(name: str, value: object) -> float:
    """Return ``value`` as a float > 0."""
    if type(value) is float and 0.0 < value < math.inf:  # fast path
        return value
    result = check_finite(name, value)
    if result <= 0:
        raise ConfigError(f"{name} ({value!r}) must be higher than 0.")
    return result


def check_probability(name: str, value: object) -> float:
    """Return ``value`` as a float within [0, 1]."""
    if type(value) is float and 0.0 <= value <= 1.0:  # fast path
        return value
    result = check_finite(name, value)
    if not 0.0 <= result <= 1.0:
        raise ConfigError(f"{name} ({value!r}) must be within [0, 1].")
    return result


def check_count(name: str, value: object) -> float:
    """Return a (possibly fractional, e.g. decayed) count as a float >= 0."""
    if type(value) is float and 0.0 <= value < math.inf:  # fast path: called per visit
        return value
    if type(value) is int and value >= 0:
        return float(value)
    return check_non_negative(name, value)


def check_times(name: str, values: Iterable[object]) -> list[float]:
    """Return finite times as a sorted list of floats (the input may be in any order)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(
            f"{name} must be an iterable of numbers, got {type(values).__name__}: {values!r}."
        )
    result: list[float] = []
    for i, value in enumerate(values):
        if type(value) is float or type(value) is int:  # fast path, exact types only
            number = float(value)
            if number - number == 0.0:  # finite
                result.append(number)
                continue
        result.append(check_finite(f"{name}[{i}]", value))
    result.sort()
    return result
