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
    else vectorised with NumPy (:mod:`scrapy_fresh.fingerprint._vector`, imported on
    first use: with the extension, a crawl never loads NumPy) -- the same answers either
    way; many times faster than
    MD5, deterministic on every machine and in every process (it is not Python's
    randomised :func:`hash`), but not cryptographic. The default of
    :func:`fingerprint_html` and :func:`fingerprint_text` (:data:`PAGE_HASH_MODE`).

Fingerprints made with different modes, ``k``, digit handling or boilerplate tags
cannot be compared with each other.
"""

from __future__ import annotations

import codecs
import functools
import math
import numbers
import operator
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any, Final, Literal, TypeAlias, cast

from lxml import etree
from w3lib.encoding import html_body_declared_encoding, read_bom, resolve_encoding, to_unicode
from w3lib.html import remove_comments, remove_tags, remove_tags_with_content, replace_entities

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.fingerprint import _hashdef
from scrapy_fresh.fingerprint._hashdef import (
    _MASK64,
    _MD5,
    Number,
    _pieces,
)

try:  # the C version of the fast mode; the NumPy code (_vector) is the reference
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
EMPTY_FINGERPRINT: Final = _hashdef.EMPTY_FINGERPRINT
#: Bumped whenever a default above or the fast hash changes, so that stores can tell
#: fingerprints made by an older scheme from the current ones.
FINGERPRINT_VERSION: Final = 1
#: Elements whose content is never text: always dropped.
SKIPPED_TAGS: Final = ("script", "style", "noscript", "template")
#: HTML5 landmarks that hold site furniture rather than the page's own content;
#: :func:`html_to_text` drops them unless told otherwise.
BOILERPLATE_TAGS: Final = ("nav", "footer", "aside")

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


#: Private Use Area code points that stand for undecodable bytes (:func:`_keep_bytes`).
_BYTE_BASE: Final = 0xF700
_KEEP_BYTES: Final = "scrapy_fresh_keep_bytes"


def _keep_bytes(error: UnicodeError) -> tuple[str, int]:
    """Codec error handler: each byte the codec cannot decode becomes a character of its
    own (U+F780-U+F7FF, Private Use Area), not one U+FFFD for all, so that two pages
    that differ only in such bytes (Latin-1 under a UTF-8 declaration: M\xfcller ->
    M\xf6ller) keep their difference."""
    if not isinstance(error, UnicodeDecodeError):
        raise error
    bad = error.object[error.start : error.end]
    return "".join(chr(_BYTE_BASE + b) for b in bad), error.end


codecs.register_error(_KEEP_BYTES, _keep_bytes)


def _to_text(data: bytes, codec: str) -> str:
    """``data`` decoded by ``codec``, undecodable bytes kept (:func:`_keep_bytes`).
    GB 18030 goes through w3lib, whose own handler mends Python's decoder of it."""
    if "18030" in codec:
        return to_unicode(data, codec)
    return data.decode(codec, _KEEP_BYTES)


def _decode(html: str | bytes, encoding: str | None) -> str:
    """Return ``html`` as text: BOM, then ``encoding``, then the document's own
    declaration, then UTF-8; each undecodable byte becomes a character of its own
    (:func:`_keep_bytes`)."""
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
        return _to_text(html[len(bom) :], bom_encoding), bom_encoding
    name = _resolve(encoding) if encoding is not None else None
    if name is None or not _decodes(name):  # (a charset=base64 header: as if none)
        declared = html_body_declared_encoding(html)
        # A declaration readable as ASCII cannot be UTF-16/32 (WHATWG: use UTF-8 instead).
        name = "utf-8" if declared is None or declared.startswith("utf-16") else declared
        name = "utf-8" if name.startswith("utf-32") or not _decodes(name) else name
    return _to_text(html, name), name


@functools.lru_cache(maxsize=64)
def _decodes(name: str) -> bool:
    """Whether codec ``name`` turns any bytes into text with :func:`_keep_bytes`.
    ``base64``, ``rot13`` or ``zlib`` turn bytes into bytes, ``punycode`` and ``idna``
    take no error handler: a page or header that names one is decoded as if it named
    none, as a browser ignores a label that is not a text encoding (WHATWG Encoding,
    "get an encoding")."""
    try:
        bytes(range(256)).decode(name, _KEEP_BYTES)
    except (LookupError, UnicodeError, ValueError, TypeError):
        return False
    return True


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
        declaration, else UTF-8; each byte that does not decode becomes a character of
        its own (U+F780-U+F7FF), so binary garbage gives garbage text but never an
        error, and an edit of such bytes is still an edit.
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
    from scrapy_fresh.fingerprint import _vector  # NumPy: imported on first use

    for piece in _pieces(text):
        normal = _vector._decode_codes(_vector._normal_codes(piece, normalize_digits))
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
        from scrapy_fresh.fingerprint import _vector  # NumPy: imported on first use

        return _vector._fast_hash_any(feature)
    digest: bytes = _MD5(feature.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[8:], "big")


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ConfigError(f"mode ({mode!r}) must be 'md5' or 'fast'.")


_CHUNK: Final = 1 << 14  # features per batch


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
    from scrapy_fresh.fingerprint import _vector  # NumPy: imported on first use

    hasher = _vector._md5_hashes
    if mode == "fast":
        if _speedups is None:
            hasher = _vector._fast_hashes
        else:
            if type(features) in _C_FEATURES:
                # The whole vote in C; None for what it leaves to Python (weights of
                # other types, huge ints, float weights in more than one batch, errors).
                value = _speedups.simhash(cast("list[Any]", features))
                if value is not None:
                    return value
            hasher = functools.partial(_vector._c_fast_hashes, _speedups)
    tally = _vector._Tally()
    for names, joined, weights in _feature_batches(features):
        tally.add(hasher(names, joined), weights)
    return tally.value()


# ---------------------------------------------------------------------------------------
# Whole pipeline
# ---------------------------------------------------------------------------------------


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
    from scrapy_fresh.fingerprint import _vector  # NumPy: imported on first use

    return _vector._fast_text(text, k, normalize_digits)


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
    read; binary garbage is decoded with a character per invalid byte and fingerprinted
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
    # an int first: the ABC check (NumPy integers too) costs 20 times more, per verdict
    if type(value) is not int and (
        isinstance(value, bool) or not isinstance(value, numbers.Integral)
    ):
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
    if type(threshold) is not int and (
        isinstance(threshold, bool) or not isinstance(threshold, numbers.Integral)
    ):
        raise TypeError(f"threshold ({threshold!r}) must be an int number of bits.")
    if threshold < 0:
        raise ConfigError(f"threshold ({threshold!r}) must be 0 or more bits.")
    return hamming(old, new) > threshold
