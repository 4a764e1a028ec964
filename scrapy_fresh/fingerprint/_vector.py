"""The NumPy code of the fingerprints: the reference of the C extension
``scrapy_fresh._speedups`` and what runs without it (words, the fast hash of long texts,
the simhash vote). :mod:`scrapy_fresh.fingerprint.shingles` imports this module on first
use: with the C extension built, a crawl never loads NumPy (its objects would be walked
by every full garbage collection, and its import slows every start-up).
"""

from __future__ import annotations

import functools
import operator
import threading
from collections.abc import Sequence
from fractions import Fraction
from itertools import compress
from types import ModuleType
from typing import Any, Final, TypeAlias, cast

import numpy as np
import numpy.typing as npt

from scrapy_fresh.fingerprint._hashdef import (
    _DIGIT,
    _MASK64,
    _MD5,
    _MIX1,
    _MIX2,
    _P,
    _P_INV,
    _Q,
    _SPACE,
    _WORD,
    EMPTY_FINGERPRINT,
    Number,
    _char_class,
    _fast_hash,
    _mix,
    _pieces,
    _plus,
)

_Codes: TypeAlias = "npt.NDArray[np.uint8] | npt.NDArray[np.uint32]"
_U64: TypeAlias = "npt.NDArray[np.uint64]"
_INTP: TypeAlias = "npt.NDArray[np.intp]"

_ASCII_CLASS: Final = np.array([_char_class(chr(c)) for c in range(256)], np.uint8)
# The rest of Unicode is classified 256 code points at a time, when first met.
_unicode_class = np.zeros(0, np.uint8)
_unicode_blocks = np.zeros(0x1100, bool)
_unicode_lock = threading.Lock()


def _unicode_classes(codes: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint8]:
    blocks = np.flatnonzero(np.bincount(codes >> 8, minlength=0x1100))
    if len(_unicode_class) == 0 or not _unicode_blocks[blocks].all():
        with _unicode_lock:
            _classify_blocks(blocks)
    return _unicode_class[codes]


def _classify_blocks(blocks: npt.NDArray[np.intp]) -> None:
    global _unicode_class  # created on first use: 1.1 MB that ASCII-only crawls never need
    if len(_unicode_class) == 0:
        table = np.zeros(0x110000, np.uint8)
        table[:256] = _ASCII_CLASS
        _unicode_class = table
        _unicode_blocks[0] = True
    for block in blocks[~_unicode_blocks[blocks]].tolist():
        base = block << 8
        _unicode_class[base : base + 256] = [_char_class(chr(c)) for c in range(base, base + 256)]
        _unicode_blocks[block] = True  # only once the block is filled in


def _ascii_map(normalize_digits: bool) -> bytes:
    """For ASCII codes: lower-case, digits to "0" (if asked), other non-words to space."""
    table = bytearray([_SPACE]) * 256
    for code in range(128):
        char = chr(code).lower()
        if normalize_digits and char.isdecimal():
            table[code] = ord("0")
        elif _char_class(char):
            table[code] = ord(char)
    return bytes(table)


_ASCII_MAPS: Final = {True: _ascii_map(True), False: _ascii_map(False)}
_ASCII_RUNS: Final = {  # characters whose runs collapse into one: spaces (and zeros)
    True: np.isin(np.arange(256), (_SPACE, ord("0"))),
    False: np.arange(256) == _SPACE,
}


def _normal_codes(text: str, normalize_digits: bool) -> _Codes:
    r"""Code points of ``" ".join(words(text))``, computed with NumPy.

    The same as lower-casing, replacing each run of ``\d`` by "0" and joining the runs
    of ``\w`` with single spaces; ``tests/test_fingerprint.py`` checks it against those
    regular expressions.
    """
    if not text:
        return np.zeros(0, np.uint8)
    mapped: _Codes
    if text.isascii():
        ascii_text = text.encode("ascii").translate(_ASCII_MAPS[normalize_digits])
        mapped = np.frombuffer(ascii_text, np.uint8)
        runs = _ASCII_RUNS[normalize_digits][mapped]
    else:
        raw = text.lower().encode("utf-32-le", "surrogatepass")
        wide = np.frombuffer(raw, np.dtype("<u4")).astype(np.uint32)
        classes = _unicode_classes(wide)
        wide[classes == 0] = _SPACE
        if normalize_digits:
            wide[classes == _WORD | _DIGIT] = ord("0")
            runs = (wide == _SPACE) | (wide == ord("0"))
        else:
            runs = wide == _SPACE
        mapped = wide
    # Keep a character unless it repeats the one before and belongs to a run to collapse.
    keep = np.empty(len(mapped), bool)
    keep[0] = True
    np.not_equal(mapped[1:], mapped[:-1], out=keep[1:])
    keep |= ~runs
    out = mapped[keep]
    first = int(out[0] == _SPACE)
    last = len(out) - int(out[-1] == _SPACE)
    return out[first:last] if first < last else out[:0]


def _decode_codes(codes: _Codes) -> str:
    if codes.dtype == np.uint8:
        return codes.tobytes().decode("ascii")
    return codes.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")


# ---------------------------------------------------------------------------------------
# The fast hash
# ---------------------------------------------------------------------------------------


# Powers of P and of its inverse, and the length terms (j + 1) * Q, mod 2**64, for
# j < n; grown on demand up to _TABLE_CAP entries (3 MiB).
_TABLE_CAP: Final = 1 << 17
_tables: tuple[_U64, _U64, _U64] = (
    np.ones(1, np.uint64),
    np.ones(1, np.uint64),
    np.array([_Q], np.uint64),
)


def _power_tables(n: int) -> tuple[_U64, _U64, _U64]:
    """``(P**j, P**-j, (j + 1) * Q)`` mod 2**64 for ``j < n`` (``n <= _TABLE_CAP``)."""
    global _tables  # a cache, replaced whole: readers see the old or the new tables
    tables = _tables
    pw, pinv, lengths = tables
    if len(pw) >= n:
        return tables
    while len(pw) < n:
        size = len(pw)
        pw = np.concatenate((pw, pw * np.uint64(pow(_P, size, 1 << 64))))
        pinv = np.concatenate((pinv, pinv * np.uint64(pow(_P_INV, size, 1 << 64))))
        lengths = np.concatenate((lengths, lengths + np.uint64(size * _Q & _MASK64)))
    _tables = (pw, pinv, lengths)
    return _tables


def _code_points(text: str) -> _Codes:
    if text.isascii():
        return np.frombuffer(text.encode("ascii"), np.uint8)
    raw = text.encode("utf-32-le", "surrogatepass")
    return np.frombuffer(raw, np.dtype("<u4")).astype(np.uint32, copy=False)


def _fast_hash_any(feature: str) -> int:
    """:func:`_fast_hash`, with NumPy for long features (blocks of ``_TABLE_CAP / 2``)."""
    if len(feature) < 64:
        return _fast_hash(feature)
    block = _TABLE_CAP // 2
    pw = _power_tables(block)[0]
    codes = _code_points(feature)
    poly = 0
    for offset in range(0, len(codes), block):
        part = codes[offset : offset + block]
        part_sum = int(np.sum(part * pw[: len(part)], dtype=np.uint64))
        poly = (poly + pow(_P, offset, 1 << 64) * part_sum) & _MASK64
    return _mix((poly + (len(feature) + 1) * _Q) & _MASK64)


# Per-thread scratch arrays, reused from call to call: fresh arrays of a few hundred kB
# cost page faults each time.
_SCRATCH = threading.local()


def _scratch(name: str, size: int, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
    """A per-thread array of at least ``size`` items, valid until the next call."""
    array: npt.NDArray[Any] | None = getattr(_SCRATCH, name, None)
    if array is None or len(array) < size:
        array = np.empty(max(size, 1 << 12), dtype)
        if size <= _TABLE_CAP * 8:
            setattr(_SCRATCH, name, array)
    return array[:size]


def _terms(codes: _Codes) -> _U64:
    """``codes[j] * P**j`` for each j, and one 0 more (``len(codes) < _TABLE_CAP``).

    The result is scratch space: use it before the next call.
    """
    size = len(codes)
    pw = _power_tables(size + 1)[0]
    terms: _U64 = _scratch("terms", size + 1, np.uint64)
    head = terms[:size]
    head[...] = codes  # widening first, then one same-type product: twice as fast
    head *= pw[:size]
    terms[size] = 0
    return terms


def _finish(poly: _U64, starts: _INTP, lengths: _INTP) -> _U64:
    """Fast hashes from the polynomial sums of spans starting at ``starts`` (in place).

    The tables cover every start and length: callers made them for the whole text.
    """
    _, pinv, length_terms = _tables
    poly *= pinv[starts]
    poly += length_terms[lengths]
    poly ^= poly >> np.uint64(30)
    poly *= np.uint64(_MIX1)
    poly ^= poly >> np.uint64(27)
    poly *= np.uint64(_MIX2)
    poly ^= poly >> np.uint64(31)
    return poly


def _word_bounds(codes: _Codes) -> tuple[_INTP, _INTP]:
    spaces = np.flatnonzero(codes == _SPACE)
    starts = np.empty(len(spaces) + 1, np.intp)
    starts[0] = 0
    starts[1:] = spaces + 1
    ends = np.empty_like(starts)
    ends[:-1] = spaces
    ends[-1] = len(codes)
    return starts, ends


def _span_hashes(codes: _Codes, starts: _INTP, ends: _INTP, k: int) -> _U64:
    """Fast hashes of every run of ``k`` words of ``codes`` (words at starts/ends)."""
    count = len(starts) - k + 1
    last_ends = ends[k - 1 : k - 1 + count]
    if len(codes) >= _TABLE_CAP:  # only with huge words or a huge k
        text = _decode_codes(codes)
        spans = zip(starts[:count].tolist(), last_ends.tolist(), strict=True)
        return np.array([_fast_hash_any(text[a:b]) for a, b in spans], np.uint64)
    terms = _terms(codes)
    # Sum per word with its trailing space, k words at a time, minus the last space.
    word_sums = np.add.reduceat(terms, starts)
    cumulative = np.zeros(len(word_sums) + 1, np.uint64)
    np.cumsum(word_sums, out=cumulative[1:])
    poly = cumulative[k : k + count] - cumulative[:count]
    poly -= terms[last_ends]
    return _finish(poly, starts[:count], last_ends - starts[:count])


# ---------------------------------------------------------------------------------------
# The vote
# ---------------------------------------------------------------------------------------


_EXACT_FLOAT: Final = 1 << 53
_BYTE_OFFSETS: Final = np.arange(8, dtype=np.intp) * 256
_BYTE_BITS: Final = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(
    np.float64
)
_MINUS_ONE: Final = np.array([-1], np.intp)


class _Tally:
    """Per-bit sums, most significant bit first: unit weights and other weights."""

    __slots__ = ("counts", "n", "sums", "total")

    def __init__(self) -> None:
        self.counts: npt.NDArray[np.int64] | None = None
        self.n = 0
        self.sums: list[Number] | None = None
        self.total: Number = 0

    def add(self, hashes: npt.NDArray[np.uint8], weights: Sequence[Number] | None) -> None:
        """Add features: ``hashes`` is (n, 8), big-endian bytes of each feature's hash."""
        size = len(hashes)
        if size == 0:
            return
        if weights is None:
            # Count (byte position, byte value) pairs, then their bits: less memory
            # traffic than expanding every hash to 64 bits.
            index = np.add(hashes, _BYTE_OFFSETS, dtype=np.intp).ravel()
            pairs = np.bincount(index, minlength=2048).reshape(8, 256).astype(np.float64)
            counts = (pairs @ _BYTE_BITS).ravel().astype(np.int64)  # exact: below 2**53
            self.counts = counts if self.counts is None else self.counts + counts
            self.n += size
            return
        sums: list[Number]
        bits = np.unpackbits(hashes, axis=1)  # (n, 64), most significant bit first
        if all(type(w) is int for w in weights):
            ints = cast("Sequence[int]", weights)
            total: Number = sum(ints)
            if sum(map(abs, ints)) < _EXACT_FLOAT:  # every partial sum is exact in float64
                sums = [int(x) for x in np.asarray(ints, np.float64) @ bits.astype(np.float64)]
            else:
                sums = [sum(compress(ints, column)) for column in bits.T.tolist()]
        else:
            try:
                floats = [float(w) for w in weights]
                total = functools.reduce(operator.add, floats, 0.0)  # in order, like the package
                column = np.asarray(floats, np.float64)[:, None]
            except OverflowError:  # an int too large for a float among floats: exact sums
                exact = [Fraction(w) for w in weights]
                sums = [sum(compress(exact, c), Fraction(0)) for c in bits.T.tolist()]
                total = sum(exact, Fraction(0))
            else:
                # Feature after feature, like the package, so that float sums round alike.
                # Sums beyond 1.8e308 become inf (or nan), quietly, as in the C version.
                with np.errstate(over="ignore", invalid="ignore"):
                    sums = np.add.accumulate(bits * column, axis=0)[-1].tolist()
        if self.sums is None:
            self.sums = sums
        else:
            self.sums = [_plus(a, b) for a, b in zip(self.sums, sums, strict=True)]
        self.total = _plus(self.total, total)

    def value(self) -> int:
        if self.sums is None:
            if self.counts is None:
                return EMPTY_FINGERPRINT
            return int.from_bytes(np.packbits(2 * self.counts > self.n).tobytes(), "big")
        sums, total = self.sums, self.total
        if self.counts is not None:
            sums = [_plus(a, b) for a, b in zip(sums, self.counts.tolist(), strict=True)]
            total = _plus(total, self.n)
        value = 0
        if isinstance(total, int) and all(type(s) is int for s in sums):
            for s in sums:
                value = (value << 1) | (2 * s > total)
        else:
            half = total / 2
            for s in sums:
                value = (value << 1) | (s > half)
        return value


def _big_endian_bytes(hashes: _U64) -> npt.NDArray[np.uint8]:
    return hashes.astype(">u8").view(np.uint8).reshape(-1, 8)


def _md5_hashes(features: Sequence[str], joined: str) -> npt.NDArray[np.uint8]:
    encoded = joined.encode("utf-8", "surrogatepass").split(b"\x00")
    if len(encoded) != len(features):  # some feature holds a NUL
        encoded = [f.encode("utf-8", "surrogatepass") for f in features]
    md5 = _MD5
    digests = b"".join([md5(data).digest() for data in encoded])
    return np.frombuffer(digests, np.uint8).reshape(-1, 16)[:, 8:]


def _fast_hashes(features: Sequence[str], joined: str) -> npt.NDArray[np.uint8]:
    size = len(joined)
    if size < _TABLE_CAP:
        codes = _code_points(joined)
        bounds = np.flatnonzero(codes == 0)
        if len(bounds) == len(features) - 1:  # no feature holds a NUL
            bounds = np.concatenate((_MINUS_ONE, bounds, [size]))  # the NULs around each
            starts = bounds[:-1] + 1
            # NULs add 0 to the sums, so each span may run on to the next start.
            poly = np.add.reduceat(_terms(codes), starts)
            return _big_endian_bytes(_finish(poly, starts, bounds[1:] - starts))
    # Long or NUL-holding features: groups of at most _TABLE_CAP / 2 characters.
    lens = np.fromiter(map(len, features), np.intp, len(features))
    bounds = np.zeros(len(features) + 1, np.intp)
    np.cumsum(lens, out=bounds[1:])
    hashes = np.empty(len(features), np.uint64)
    i = 0
    while i < len(features):
        j = int(np.searchsorted(bounds, bounds[i] + _TABLE_CAP // 2, "right")) - 1
        if j <= i + 1:
            hashes[i] = _fast_hash_any(features[i])
            i += 1
            continue
        group = "".join(features[i:j])
        starts = bounds[i:j] - bounds[i]
        ends = bounds[i + 1 : j + 1] - bounds[i]
        terms = _terms(_code_points(group))
        cumulative = np.zeros(len(terms) + 1, np.uint64)
        np.cumsum(terms, out=cumulative[1:])
        hashes[i:j] = _finish(cumulative[ends] - cumulative[starts], starts, ends - starts)
        i = j
    return _big_endian_bytes(hashes)


def _c_fast_hashes(
    speedups: ModuleType, features: Sequence[str], joined: str
) -> npt.NDArray[np.uint8]:
    """:func:`_fast_hashes` computed by the C extension (``joined`` is not needed)."""
    hashes = speedups.fast_hashes(cast("list[str]", features))  # batches are lists
    return np.frombuffer(hashes, np.uint8).reshape(-1, 8)


# ---------------------------------------------------------------------------------------
# Whole pipeline
# ---------------------------------------------------------------------------------------


def _fast_text(text: str, k: int, normalize_digits: bool) -> int:
    """:func:`fingerprint_text` with the fast hash, piece by piece, without shingles."""
    tally = _Tally()
    carry: _Codes | None = None  # the last k - 1 words seen, for shingles across pieces
    carried = total_words = 0
    for piece in _pieces(text):
        codes = _normal_codes(piece, normalize_digits)
        if carry is not None and len(carry):
            dtype = np.promote_types(carry.dtype, codes.dtype)
            joined = np.empty(len(carry) + 1 + len(codes), dtype)
            joined[: len(carry)] = carry
            joined[len(carry)] = _SPACE
            joined[len(carry) + 1 :] = codes
            codes = joined if len(codes) else carry
        if len(codes) == 0:
            continue
        starts, ends = _word_bounds(codes)
        total_words += len(starts) - carried
        if len(starts) >= k:
            tally.add(_big_endian_bytes(_span_hashes(codes, starts, ends, k)), None)
        first = max(0, len(starts) - k + 1)
        carried = len(starts) - first
        carry = codes[starts[first] :] if carried else None
    if 0 < total_words < k and carry is not None:  # one shingle: all the (carried) words
        starts, ends = _word_bounds(carry)
        tally.add(_big_endian_bytes(_span_hashes(carry, starts, ends, len(starts))), None)
    return tally.value()
