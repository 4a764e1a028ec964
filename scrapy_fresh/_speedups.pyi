"""Type stub of the optional C extension ``scrapy_fresh._speedups`` (_speedups.c).

The "fast" hash mode of :mod:`scrapy_fresh.fingerprint` in C; fingerprint.py uses it
when it is importable and gives the same answers with NumPy when it is not.
"""

from typing import Any

def fast_hash(feature: str, /) -> int:
    """The fast hash of one str, as an unsigned 64-bit int."""

def fast_hashes(features: list[str] | tuple[str, ...], /) -> bytes:
    """The fast hashes of a list or tuple of str: 8 bytes each, big-endian."""

def simhash(features: list[Any] | tuple[Any, ...] | dict[Any, Any], /) -> int | None:
    """The fast-hash simhash of str features, ``(str, weight)`` pairs or a dict of
    weights, or None when the caller must compute it in Python."""

def fingerprint_text(text: str, k: int, normalize_digits: bool, /) -> int:
    """The fast-hash simhash of the word k-shingles of ``text``."""
