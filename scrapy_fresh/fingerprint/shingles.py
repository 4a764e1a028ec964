"""Content fingerprints: text extraction, word shingles and 64-bit simhash.

A page's fingerprint is the 64-bit simhash (Charikar 2002; Manku et al., WWW 2007) of
the word shingles of its visible text. Two versions of a page count as *changed* when
their fingerprints differ in more than ``threshold`` bits, so that trivial edits do not
count as changes (WebFountain's "a page change is required to be non-trivial, as
determined by a shingle"; Edwards et al., WWW10 2001, section 1).

The pipeline, one function per step:

1. :func:`html_to_text`: decode, parse with lxml, drop scripts, styles, comments and
   (by default) navigation, footers and asides, keep the text of the rest.
2. :func:`words`: lower-case word tokens (runs of ``\\w``), every number made ``0``.
3. :func:`shingles`: every run of ``k`` consecutive words (default :data:`DEFAULT_K`).
4. :func:`simhash_features`: bit ``i`` of the fingerprint is set when the features whose
   64-bit hash has bit ``i`` set weigh more than half of all features.
5. :func:`hamming` and :func:`changed`: compare two fingerprints.

:func:`fingerprint_html` and :func:`fingerprint_text` run the whole pipeline in one
call, without building the shingle strings.

Two feature hashes (``mode``):

``"md5"``
    The last 8 bytes of the MD5 digest of the UTF-8 feature, big-endian: exactly what
    the ``simhash`` package (``simhash.Simhash(features).value``) does, so fingerprints
    are interchangeable with it. The default of :func:`simhash_features`.
``"fast"``
    :func:`hash_feature`'s own 64-bit polynomial hash of the feature's code points,
    finished with the SplitMix64 mixer. Computed by the optional C extension
    ``scrapy_fresh._speedups`` when it was built (``pip install`` with a C compiler),
    else vectorised with NumPy -- the same answers either way; many times faster than
    MD5, deterministic on every machine and in every process (it is not Python's
    randomised :func:`hash`), but not cryptographic. The default of
    :func:`fingerprint_html` and :func:`fingerprint_text` (:data:`PAGE_HASH_MODE`).

Fingerprints made with different modes, ``k``, digit handling or boilerplate tags
cannot be compared with each other.
"""

from __future__ import annotations

import functools
import hashlib
import math
import numbers
import operator
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from fractions import Fraction
from itertools import compress, islice
from typing import Any, Final, Literal, TypeAlias, cast

import numpy as np
import numpy.typing as npt
from lxml import etree
from w3lib.encoding import html_body_declared_encoding, read_bom, resolve_encoding, to_unicode
from w3lib.html import remove_comments, remove_tags, remove_tags_with_content, replace_entities

from scrapy_fresh.exceptions import ConfigError

try:  # the C version of the fast mode; the NumPy code below is the reference
    from scrapy_fresh import _speedups
except ImportError:  # pragma: no cover - installed without a C compiler
    _speedups = None  # type: ignore[assignment]

__all__ = [
    "BOILERPLATE_TAGS",
    "DEFAULT_K",
    "DEFAULT_THRESHOLD",
    "EMPTY_FINGERPRINT",
    "FINGERPRINT_VERSION",
    "PAGE_HASH_MODE",
    "SKIPPED_TAGS",
    "HashMode",
    "changed",
    "fingerprint_html",
    "fingerprint_text",
    "hamming",
    "hash_feature",
    "html_to_text",
    "shingles",
    "simhash_features",
    "words",
]

HashMode: TypeAlias = Literal["md5", "fast"]

#: Words per shingle. 2 tells a rewritten paragraph from a changed word best (see
#: ``docs/topics/fingerprint.rst``, "Choosing k and the threshold").
DEFAULT_K: Final = 2
#: :func:`changed` is true when the fingerprints differ in more than this many bits.
DEFAULT_THRESHOLD: Final = 3
#: Feature hash of :func:`fingerprint_html` and :func:`fingerprint_text`: the fingerprints
#: a crawl stores. (:func:`simhash_features` defaults to ``"md5"``, like the package.)
PAGE_HASH_MODE: Final[HashMode] = "fast"
#: Fingerprint of a text without words (empty, only markup, only punctuation): no
#: feature votes, so no bit is set.
EMPTY_FINGERPRINT: Final = 0
#: Bumped whenever a default above or the fast hash changes, so that stores can tell
#: fingerprints made by an older scheme from the current ones.
FINGERPRINT_VERSION: Final = 1
#: Elements whose content is never text: always dropped.
SKIPPED_TAGS: Final = ("script", "style", "noscript", "template")
#: HTML5 landmarks that hold site furniture rather than the page's own content;
#: :func:`html_to_text` drops them unless told otherwise.
BOILERPLATE_TAGS: Final = ("nav", "footer", "aside")

_MASK64: Final = (1 << 64) - 1
_MODES: Final = ("md5", "fast")

# ---------------------------------------------------------------------------------------
# Text extraction
# ---------------------------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")
_TAG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]*")
_PARSERS = threading.local()  # lxml parsers and XPath objects: one per thread


def _text_nodes(root: etree._Element) -> list[str]:
    find: etree.XPath | None = getattr(_PARSERS, "text_nodes", None)
    if find is None:
        find = _PARSERS.text_nodes = etree.XPath("//text()", smart_strings=False)
    return cast("list[str]", find(root))


def _parser() -> etree.HTMLParser:
    parser: etree.HTMLParser | None = getattr(_PARSERS, "parser", None)
    if parser is None:
        # The text is handed over as UTF-8 whatever the document declares; huge_tree
        # lifts libxml2's 10 MB text-node and depth limits (as parsel does).
        parser = etree.HTMLParser(
            encoding="utf-8",
            remove_comments=True,
            remove_pis=True,
            no_network=True,
            huge_tree=True,
            collect_ids=False,
            default_doctype=False,
        )
        _PARSERS.parser = parser
    return parser


def _decode(html: str | bytes, encoding: str | None) -> str:
    """Return ``html`` as text: BOM, then ``encoding``, then the document's own
    declaration, then UTF-8; undecodable bytes become U+FFFD."""
    return _decode_with_codec(html, encoding)[0]


def _decode_with_codec(html: str | bytes, encoding: str | None) -> tuple[str, str | None]:
    """:func:`_decode`, and the name of the codec that decoded ``html`` (None for str)."""
    if isinstance(html, str):
        return html, None
    if isinstance(html, (bytearray, memoryview)):
        html = bytes(html)
    elif not isinstance(html, bytes):
        raise TypeError(f"html ({type(html).__name__}) must be str or bytes.")
    bom_encoding, bom = read_bom(html)
    if bom_encoding is not None and bom is not None:
        return to_unicode(html[len(bom) :], bom_encoding), bom_encoding
    if encoding is not None:
        name = _resolve(encoding)
    else:
        declared = html_body_declared_encoding(html)
        # A declaration readable as ASCII cannot be UTF-16/32 (WHATWG: use UTF-8 instead).
        name = "utf-8" if declared is None or declared.startswith("utf-16") else declared
        name = "utf-8" if name.startswith("utf-32") else name
    return to_unicode(html, name), name


@functools.lru_cache(maxsize=64)
def _resolve(encoding: str) -> str:
    if not isinstance(encoding, str):
        raise TypeError(f"encoding ({encoding!r}) must be a str such as 'utf-8', or None.")
    name = resolve_encoding(encoding)
    if name is None:
        raise ConfigError(f"encoding ({encoding!r}) is not a text encoding Python knows.")
    return name


def _drop_tags(boilerplate_tags: Iterable[str]) -> tuple[str, ...]:
    if isinstance(boilerplate_tags, str):
        raise TypeError(
            f"boilerplate_tags ({boilerplate_tags!r}) must be a collection of tag names, "
            "not one str."
        )
    tags = tuple(boilerplate_tags)
    for tag in tags:
        if not isinstance(tag, str) or not _TAG_NAME.fullmatch(tag):
            raise ConfigError(f"boilerplate_tags contains {tag!r}; expected tag names like 'nav'.")
    return SKIPPED_TAGS + tuple(tag.lower() for tag in tags)


def _raw_text(html: str | bytes, encoding: str | None, boilerplate_tags: Iterable[str]) -> str:
    """The text nodes of ``html`` joined by spaces, whitespace not yet normalised."""
    drop = _drop_tags(boilerplate_tags)
    text = _decode(html, encoding)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: read them as U+FFFD
        text = _SURROGATE.sub("\ufffd", text)
        data = text.encode("utf-8")
    parser = _parser()
    try:
        root = etree.fromstring(data, parser)
    except etree.LxmlError:  # pragma: no cover - recover=True makes libxml2 repair
        return _regex_text(text, drop)
    if any(error.level_name == "FATAL" for error in parser.error_log):
        # libxml2 gave up (e.g. nesting deeper than 2048): fall back to regular expressions.
        return _regex_text(text, drop)
    if root is None:
        return ""
    etree.strip_elements(root, *drop, with_tail=False)
    return " ".join(_text_nodes(root))


def _regex_text(text: str, drop: tuple[str, ...]) -> str:
    text = remove_tags_with_content(remove_comments(text), which_ones=drop)
    return replace_entities(remove_tags(text.replace("<", " <")))


def html_to_text(
    html: str | bytes,
    encoding: str | None = None,
    *,
    boilerplate_tags: Iterable[str] = BOILERPLATE_TAGS,
) -> str:
    """Return the visible text of an HTML document, whitespace normalised.

    Scripts, styles, ``noscript`` and ``template`` elements (:data:`SKIPPED_TAGS`),
    comments, processing instructions and tags are removed, entities decoded, and the
    text of each element joined to the next by a space, so that ``<li>a</li><li>b</li>``
    gives two words. The elements named in ``boilerplate_tags`` (default
    :data:`BOILERPLATE_TAGS`: ``nav``, ``footer``, ``aside``) are dropped as well: they
    hold menus, footers with timestamps and ads, and related-article lists, which change
    without the page changing. Pass ``boilerplate_tags=()`` to keep them.

    :param html: the document, as ``str`` or ``bytes``. Bytes are decoded by their
        byte-order mark, else ``encoding``, else the document's ``<meta charset>`` or XML
        declaration, else UTF-8; bytes that do not decode become U+FFFD, so binary
        garbage gives garbage text but never an error.
    :param encoding: encoding of ``html`` when it is bytes, e.g. from the HTTP
        ``Content-Type`` header (a BOM still wins). Ignored for ``str``.
    :param boilerplate_tags: names of further elements whose content is dropped.

    Malformed HTML is repaired the way libxml2 does; documents libxml2 gives up on
    (nesting deeper than 2048) are read with regular expressions instead. Empty input
    gives ``""``.

    >>> html_to_text(b"<html><head><title>T</title><style>p {}</style></head>"
    ...              b"<body><nav>Home</nav><p>Hello&nbsp;<b>world</b></p><!-- x -->"
    ...              b"<script>var x;</script><footer>12:30</footer></body></html>")
    'T Hello world'
    >>> html_to_text("<p>caf\\xe9</p>", boilerplate_tags=())
    'café'
    """
    return " ".join(_raw_text(html, encoding, boilerplate_tags).split())


# ---------------------------------------------------------------------------------------
# Words and shingles
# ---------------------------------------------------------------------------------------

_Codes: TypeAlias = "npt.NDArray[np.uint8] | npt.NDArray[np.uint32]"
_U64: TypeAlias = "npt.NDArray[np.uint64]"
_INTP: TypeAlias = "npt.NDArray[np.intp]"

# Character classes by code point, as Python's ``re`` sees them: bit 0 a word character
# (``\w``: ``str.isalnum()`` or "_"), bit 1 a decimal digit (``\d``: ``str.isdecimal()``).
_WORD: Final = 1
_DIGIT: Final = 2
_SPACE: Final = 32


def _char_class(char: str) -> int:
    return (char.isalnum() or char == "_") | (char.isdecimal() << 1)


_ASCII_CLASS: Final = np.array([_char_class(chr(c)) for c in range(256)], np.uint8)
# The rest of Unicode is classified 256 code points at a time, when first met.
_unicode_class = np.zeros(0, np.uint8)
_unicode_blocks = np.zeros(0x1100, bool)
_unicode_lock = threading.Lock()
_TEXT_CHUNK: Final = 1 << 16


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


def _check_text(text: str) -> None:
    if not isinstance(text, str):
        raise TypeError(
            f"text ({type(text).__name__}) must be str; use fingerprint_html() for bytes."
        )


def _check_k(k: int) -> None:
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"k ({k!r}) must be an int, the number of words per shingle.")
    if k < 1:
        raise ConfigError(f"k ({k!r}) must be at least 1 (words per shingle).")


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


def words(text: str, *, normalize_digits: bool = True) -> list[str]:
    """Split text into lower-case words: maximal runs of ``\\w`` characters (letters,
    digits and underscore, in any script).

    With ``normalize_digits`` (the default) every run of digits becomes ``0``, so that
    clocks, dates, counters ("1,234 views") and prices do not change the words: a page
    whose only edit is a number does not change. Pass ``False`` to keep numbers.

    >>> words("Updated 12:30 -- 1,234 readers, Café!")
    ['updated', '0', '0', '0', '0', 'readers', 'café']
    >>> words("Updated 12:30", normalize_digits=False)
    ['updated', '12', '30']
    """
    _check_text(text)
    out: list[str] = []
    for piece in _pieces(text):
        normal = _decode_codes(_normal_codes(piece, normalize_digits))
        if normal:
            out += normal.split(" ")
    return out


def shingles(text_or_words: str | Sequence[str], k: int = DEFAULT_K) -> list[str]:
    """Return the word ``k``-shingles: every run of ``k`` consecutive words, joined by
    one space, in order and with repeats.

    A ``str`` is split by :func:`words` first; a sequence of words is used as it is.
    A text of fewer than ``k`` (but at least one) words gives one shingle, all its
    words; no words give ``[]``.

    >>> shingles("The cat sat on the mat", k=4)
    ['the cat sat on', 'cat sat on the', 'sat on the mat']
    >>> shingles(["just", "two"], k=4)
    ['just two']
    """
    _check_k(k)
    if isinstance(text_or_words, str):
        seq: Sequence[str] = words(text_or_words)
    else:
        seq = list(text_or_words)
        for i, word in enumerate(seq):
            if not isinstance(word, str):
                raise TypeError(f"text_or_words[{i}] ({word!r}) must be a str.")
    return _shingles(seq, k)


def _shingles(seq: Sequence[str], k: int) -> list[str]:
    if not seq:
        return []
    if len(seq) <= k:
        return [" ".join(seq)]
    if k == 1:
        return list(seq)
    return [" ".join(seq[i : i + k]) for i in range(len(seq) - k + 1)]


# ---------------------------------------------------------------------------------------
# Feature hashes
# ---------------------------------------------------------------------------------------


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


def hash_feature(feature: str, *, mode: HashMode = "md5") -> int:
    """Return the unsigned 64-bit hash whose bits a feature votes for.

    ``"md5"``: the last 8 bytes of ``md5(feature.encode("utf-8"))``, big-endian, as in
    the ``simhash`` package. ``"fast"``: ``mix(sum(ord(c_j) * P**j) + (len + 1) * Q)``
    modulo 2**64 over the feature's code points ``c_j``, with ``P =
    0x9E3779B97F4A7C15``, ``Q = 0xD6E8FEB86659FD93`` and ``mix`` the SplitMix64
    finaliser. Lone surrogates are hashed as their code points (MD5: UTF-8
    ``surrogatepass``).

    >>> hex(hash_feature("cat sat"))
    '0xcc617d9a9f065702'
    >>> hex(hash_feature("cat sat", mode="fast"))
    '0x7e785978560b86b'
    """
    _check_mode(mode)
    if not isinstance(feature, str):
        raise TypeError(f"feature ({feature!r}) must be a str.")
    if mode == "fast":
        if _speedups is not None:
            return _speedups.fast_hash(feature)
        return _fast_hash_any(feature)
    digest: bytes = _MD5(feature.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[8:], "big")


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ConfigError(f"mode ({mode!r}) must be 'md5' or 'fast'.")


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
_CHUNK: Final = 1 << 14  # features per batch
_BYTE_OFFSETS: Final = np.arange(8, dtype=np.intp) * 256
_BYTE_BITS: Final = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(
    np.float64
)
_MINUS_ONE: Final = np.array([-1], np.intp)

Number: TypeAlias = "int | float | Fraction"


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


def _plus(a: Number, b: Number) -> Number:
    try:
        return a + b
    except OverflowError:  # a Fraction too large for a float met a float: stay exact
        return Fraction(a) + Fraction(b)


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


def _c_fast_hashes(features: Sequence[str], joined: str) -> npt.NDArray[np.uint8]:
    """:func:`_fast_hashes` computed by the C extension (``joined`` is not needed)."""
    assert _speedups is not None
    hashes = _speedups.fast_hashes(cast("list[str]", features))  # batches are lists
    return np.frombuffer(hashes, np.uint8).reshape(-1, 8)


def _feature_batches(
    features: Iterable[Any] | Mapping[Any, Any],
) -> Iterator[tuple[list[str], str, list[Number] | None]]:
    """Validated batches: (feature strings, the same joined by NULs, weights or None)."""
    if isinstance(features, (str, bytes)):
        raise TypeError(
            f"features ({features[:40]!r}) must be an iterable of features, not one "
            f"{type(features).__name__}; use fingerprint_text() or shingles() for text."
        )
    batches: Iterable[list[Any]]
    if isinstance(features, list) and len(features) <= _CHUNK:
        batches = [features] if features else []  # one batch, not copied
    elif isinstance(features, (Mapping, Iterable)):
        items = iter(features.items() if isinstance(features, Mapping) else features)
        batches = iter(lambda: list(islice(items, _CHUNK)), [])
    else:
        raise TypeError(
            f"features ({features!r}) must be an iterable of str or (str, weight) pairs, "
            "or a dict of str to weight."
        )
    offset = 0
    for batch in batches:
        try:
            joined = "\x00".join(batch)
        except TypeError:
            names, weights = _weighted(batch, offset)
            yield names, "\x00".join(names), weights
        else:
            yield batch, joined, None
        offset += len(batch)


def _weighted(batch: list[Any], offset: int) -> tuple[list[str], list[Number]]:
    names: list[str] = []
    weights: list[Number] = []
    for i, item in enumerate(batch, offset):
        weight: Number
        if isinstance(item, str):
            name, weight = item, 1
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            name, raw = item
            weight = _weight(raw, i, name)
            if not isinstance(name, str):
                raise TypeError(f"feature #{i} ({item!r}): the feature must be a str.")
        else:
            raise TypeError(f"feature #{i} ({item!r}) must be a str or a (str, weight) pair.")
        names.append(name)
        weights.append(weight)
    return names, weights


def _weight(weight: Any, i: int, name: Any) -> Number:
    if isinstance(weight, int):
        return int(weight)  # bool -> 0/1
    if isinstance(weight, numbers.Integral):
        return operator.index(weight)
    if isinstance(weight, numbers.Real):
        value = float(weight)
        if not math.isfinite(value):
            raise ConfigError(
                f"feature #{i} ({name!r}) has weight {weight!r}; expected a finite number."
            )
        return value
    raise TypeError(f"feature #{i} ({name!r}) has weight {weight!r}; expected an int or a float.")


_C_FEATURES: Final = (list, tuple, dict)


def simhash_features(
    features: Iterable[str] | Iterable[tuple[str, float]] | Mapping[str, float],
    *,
    mode: HashMode = "md5",
) -> int:
    """Return the 64-bit simhash of ``features`` as an unsigned int.

    Bit ``i`` is set iff the features whose hash (:func:`hash_feature`) has bit ``i``
    set weigh more than half the total weight. With ``mode="md5"`` (the default) the
    result is ``simhash.Simhash(features).value`` of the ``simhash`` package for the
    same features, bit for bit, for a list of str, a list of ``(str, weight)`` pairs
    and a ``{str: weight}`` dict -- but without the package's ``OverflowError`` ("out
    of bounds for uint8") for integer weights above 255 under NumPy 2 (its issue #74).

    :param features: str features (weight 1), ``(str, weight)`` pairs, or a dict.
        Weights are ints (any size; summed exactly) or finite floats (summed in
        float64, in feature order, like the package). A weight of 0 makes the feature
        count for nothing. A negative weight votes against its feature's bits (the
        package drops a negative *int* weight from the bit sums but still subtracts
        it from the total; we do not copy that). In a list mixing bare str and
        pairs, a bare str weighs 1 (the package would reuse the previous weight).
    :param mode: ``"md5"`` (package-compatible) or ``"fast"`` (see the module doc).

    No features, or a total weight of 0, give :data:`EMPTY_FINGERPRINT` (0).

    >>> simhash_features(["the cat sat", "cat sat on", "sat on the", "on the mat"])
    9340831318870859017
    >>> simhash_features({"the cat sat": 300, "on the mat": 2})
    13662044202282555213
    """
    _check_mode(mode)
    hasher = _md5_hashes
    if mode == "fast":
        if _speedups is None:
            hasher = _fast_hashes
        else:
            if type(features) in _C_FEATURES:
                # The whole vote in C; None for what it leaves to Python (weights of
                # other types, huge ints, float weights in more than one batch, errors).
                value = _speedups.simhash(cast("list[Any]", features))
                if value is not None:
                    return value
            hasher = _c_fast_hashes
    tally = _Tally()
    for names, joined, weights in _feature_batches(features):
        tally.add(hasher(names, joined), weights)
    return tally.value()


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


def fingerprint_text(
    text: str,
    *,
    k: int = DEFAULT_K,
    mode: HashMode = PAGE_HASH_MODE,
    normalize_digits: bool = True,
) -> int:
    """Return the fingerprint of a text: the simhash of its word ``k``-shingles.

    Equal to ``simhash_features(shingles(words(text, normalize_digits=...), k),
    mode=mode)``, computed without building the shingles when ``mode="fast"``.
    A text without words gives :data:`EMPTY_FINGERPRINT` (0).

    >>> a = fingerprint_text("The quick brown fox jumps over the lazy dog.")
    >>> a == fingerprint_text("the QUICK brown fox -- jumps over the lazy dog")
    True
    >>> a == simhash_features(shingles("The quick brown fox jumps over the lazy dog"),
    ...                       mode="fast")
    True
    """
    _check_text(text)
    _check_k(k)
    _check_mode(mode)
    if mode == "md5":
        return simhash_features(_shingles(words(text, normalize_digits=normalize_digits), k))
    if _speedups is not None:
        return _speedups.fingerprint_text(text, k, normalize_digits)
    return _fast_text(text, k, normalize_digits)


def fingerprint_html(
    html: str | bytes,
    encoding: str | None = None,
    *,
    k: int = DEFAULT_K,
    mode: HashMode = PAGE_HASH_MODE,
    normalize_digits: bool = True,
    boilerplate_tags: Iterable[str] = BOILERPLATE_TAGS,
) -> int:
    """Return the fingerprint of an HTML page (str or bytes): what a crawl stores.

    ``fingerprint_text(html_to_text(html, encoding, boilerplate_tags=...), k=k,
    mode=mode, normalize_digits=...)``; see those functions. Never fails on the
    document itself: empty input, input without text and input libxml2 cannot parse
    give :data:`EMPTY_FINGERPRINT` (0) or the fingerprint of whatever text could be
    read; binary garbage is decoded with U+FFFD for invalid bytes and fingerprinted
    like any text, so the same bytes always give the same fingerprint.

    >>> page = "<html><body><article><p>%s</p></article><footer>%s</footer></body></html>"
    >>> text = "Ducks walk to the pond every morning and swim there until noon. " * 20
    >>> a = fingerprint_html(page % (text, "Rendered at 12:30:01"))
    >>> b = fingerprint_html((page % (text, "Rendered at 17:45:59")).encode())
    >>> a == b, changed(a, b)
    (True, False)
    >>> fingerprint_html(b""), fingerprint_html(b"<p>!!!</p>")
    (0, 0)
    """
    _check_k(k)
    _check_mode(mode)
    text = _raw_text(html, encoding, boilerplate_tags)
    return fingerprint_text(text, k=k, mode=mode, normalize_digits=normalize_digits)


# ---------------------------------------------------------------------------------------
# Comparing fingerprints
# ---------------------------------------------------------------------------------------


def _fingerprint_arg(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} ({value!r}) must be an int fingerprint.")
    number = int(value)
    if not 0 <= number <= _MASK64:
        raise ConfigError(f"{name} ({value!r}) must be an unsigned 64-bit int (0 <= x < 2**64).")
    return number


def hamming(a: int, b: int) -> int:
    """Return the number of bits in which two 64-bit fingerprints differ.

    >>> hamming(0b1011, 0b0110)
    3
    """
    return (_fingerprint_arg("a", a) ^ _fingerprint_arg("b", b)).bit_count()


def changed(old: int, new: int, threshold: int = DEFAULT_THRESHOLD) -> bool:
    """Return whether the page changed: ``hamming(old, new) > threshold``.

    :param old: the stored fingerprint.
    :param new: the fingerprint of the version just downloaded.
    :param threshold: bits that may differ without counting as a change (default
        :data:`DEFAULT_THRESHOLD`); 0 makes any difference a change.

    >>> changed(0b1011, 0b0110)
    False
    >>> changed(0b1011, 0b0110, threshold=2)
    True
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, np.integer)):
        raise TypeError(f"threshold ({threshold!r}) must be an int number of bits.")
    if threshold < 0:
        raise ConfigError(f"threshold ({threshold!r}) must be 0 or more bits.")
    return hamming(old, new) > threshold
