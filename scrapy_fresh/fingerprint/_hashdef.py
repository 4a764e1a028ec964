"""The definitions the pure-Python and the NumPy fingerprint code share: word
characters, text pieces and the fast feature hash (:func:`_fast_hash`, its reference
definition; see :mod:`scrapy_fresh.fingerprint.shingles`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any, Final, TypeAlias, cast

#: Fingerprint of a text without words: no feature votes, so no bit is set.
EMPTY_FINGERPRINT: Final = 0
_MASK64: Final = (1 << 64) - 1

# Character classes by code point, as Python's ``re`` sees them: bit 0 a word character
# (``\w``: ``str.isalnum()`` or "_"), bit 1 a decimal digit (``\d``: ``str.isdecimal()``).
_WORD: Final = 1
_DIGIT: Final = 2
_SPACE: Final = 32


def _char_class(char: str) -> int:
    return (char.isalnum() or char == "_") | (char.isdecimal() << 1)


_TEXT_CHUNK: Final = 1 << 16


def _pieces(text: str) -> Iterator[str]:
    """``text`` cut at spaces or newlines into pieces of about ``_TEXT_CHUNK`` characters.

    Cutting there splits no word and changes no lower-casing (not even a final sigma).
    """
    start = 0
    while len(text) - start > _TEXT_CHUNK:
        cuts = [
            i
            for i in (text.find(" ", start + _TEXT_CHUNK), text.find("\n", start + _TEXT_CHUNK))
            if i != -1
        ]
        if not cuts:
            break
        cut = min(cuts)
        yield text[start:cut]
        start = cut + 1
    yield text[start:]


def _md5_constructor() -> Callable[[bytes], Any]:
    # CPython's own MD5 (``_md5``) skips OpenSSL's per-call set-up and is 2-3 times
    # faster on short strings; both give the same digest.
    try:
        import _md5
    except ImportError:  # pragma: no cover - CPython built without its own MD5
        return hashlib.md5
    return cast("Callable[[bytes], Any]", _md5.md5)


_MD5: Final = _md5_constructor()

# The fast hash: h(s) = mix(sum(c_j * P**j) + (len(s) + 1) * Q) over the code points c_j
# of s, modulo 2**64; mix is the SplitMix64 finaliser (a bijection).
_P: Final = 0x9E3779B97F4A7C15
_P_INV: Final = pow(_P, -1, 1 << 64)
_Q: Final = 0xD6E8FEB86659FD93
_MIX1: Final = 0xBF58476D1CE4E5B9
_MIX2: Final = 0x94D049BB133111EB


def _mix(x: int) -> int:
    x ^= x >> 30
    x = (x * _MIX1) & _MASK64
    x ^= x >> 27
    x = (x * _MIX2) & _MASK64
    return x ^ (x >> 31)


def _fast_hash(feature: str) -> int:
    """The fast hash of one feature, in plain Python (the reference definition)."""
    poly = 0
    power = 1
    for char in feature:
        poly = (poly + ord(char) * power) & _MASK64
        power = (power * _P) & _MASK64
    return _mix((poly + (len(feature) + 1) * _Q) & _MASK64)


Number: TypeAlias = "int | float | Fraction"


def _plus(a: Number, b: Number) -> Number:
    try:
        return a + b
    except OverflowError:  # a Fraction too large for a float met a float: stay exact
        return Fraction(a) + Fraction(b)
