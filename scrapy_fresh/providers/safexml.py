"""Safe, bounded, streaming XML for documents written by strangers (sitemaps, feeds).

* Entities are never expanded (``resolve_entities=False``): a billion-laughs document
  parses in constant memory; an element whose text was an entity reference has no text
  (counted as ``unresolved_entity`` by the parsers).
* No network access (``no_network=True``), no DTD loading, no validation, libxml2's
  ``huge_tree`` protections on.
* Gzip (by its magic bytes, whatever the headers said) is inflated as a stream with a
  cap on the inflated bytes (:func:`gunzip_capped`): a gzip bomb stops at the cap.
* The parser is fed chunk by chunk and the caller clears each element once read, so
  memory stays bounded by one entry, not by the document.

Limits default to the sitemap protocol's (50,000 URLs, 50 MB uncompressed).
"""

from __future__ import annotations

import codecs
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from scrapy_fresh.providers.signals import ParseReport

__all__ = [
    "DEFAULT_LIMITS",
    "Limits",
    "TooLarge",
    "child_text",
    "gunzip_capped",
    "is_gzip",
    "iter_xml",
    "local_name",
    "own_text",
]

_CHUNK = 64 * 1024
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Limits:
    """Size limits on one provider document.

    :param max_compressed_bytes: largest body accepted as downloaded (gzip or not).
    :param max_decompressed_bytes: largest XML text accepted (after gunzip).
    :param max_entries: entries (``<url>``, ``<sitemap>``, ``<item>``, ``<entry>``) kept;
        later ones are counted as ``over_limit``.
    """

    max_compressed_bytes: int = 50 * 1024 * 1024
    max_decompressed_bytes: int = 50 * 1024 * 1024
    max_entries: int = 50_000

    def __post_init__(self) -> None:
        for name in ("max_compressed_bytes", "max_decompressed_bytes", "max_entries"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} ({value!r}) must be a whole number of 1 or more.")


DEFAULT_LIMITS = Limits()


class TooLarge(ValueError):
    """A document is larger than a :class:`Limits` allows."""


class EntitiesRefused(ValueError):
    """A document declares XML entities (see :func:`iter_xml`)."""


def is_gzip(body: bytes) -> bool:
    """Whether ``body`` starts with the gzip magic bytes."""
    return body[:2] == _GZIP_MAGIC


def gunzip_capped(body: bytes, max_bytes: int) -> Iterator[bytes]:
    """Inflate gzip ``body`` chunk by chunk; raise :class:`TooLarge` past ``max_bytes``.

    Concatenated gzip members are inflated one after the other. Never holds more than
    one chunk of output, whatever the compression ratio.

    >>> import gzip
    >>> b"".join(gunzip_capped(gzip.compress(b"abc" * 10), 100))
    b'abcabcabcabcabcabcabcabcabcabc'
    >>> b"".join(gunzip_capped(gzip.compress(b"0" * 1000), 100))
    Traceback (most recent call last):
    ...
    scrapy_fresh.providers.safexml.TooLarge: gzip data inflates to more than 100 bytes.
    """
    total = 0
    pos = 0
    while pos < len(body):
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while not inflater.eof:
            if inflater.unconsumed_tail:
                chunk = inflater.decompress(inflater.unconsumed_tail, _CHUNK)
            elif pos < len(body):
                piece = body[pos : pos + _CHUNK]
                pos += len(piece)
                chunk = inflater.decompress(piece, _CHUNK)
            else:
                raise zlib.error("gzip data is truncated.")
            total += len(chunk)
            if total > max_bytes:
                raise TooLarge(f"gzip data inflates to more than {max_bytes} bytes.")
            if chunk:
                yield chunk
        pos -= len(inflater.unused_data)
        while pos < len(body) and body[pos] == 0:  # padding between members
            pos += 1
        if not is_gzip(body[pos : pos + 2]):
            return  # trailing bytes after the last member are ignored


def local_name(tag: object) -> str:
    """The tag name without its namespace (``{ns}url`` -> ``url``); '' for non-elements.

    >>> local_name("{http://www.sitemaps.org/schemas/sitemap/0.9}url")
    'url'
    """
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def own_text(element: etree._Element, report: ParseReport) -> str | None:
    """Stripped text of ``element`` (None if empty).

    An element whose content was an unexpanded entity reference counts as
    ``unresolved_entity`` and gives None.
    """
    if any(isinstance(node, etree._Entity) for node in element):
        report.skip("unresolved_entity")
        return None
    text = "".join(element.itertext()).strip()
    return text or None


def child_text(element: etree._Element, name: str, report: ParseReport) -> str | None:
    """:func:`own_text` of ``element``'s first child named ``name`` (any namespace)."""
    for child in element:
        if local_name(child.tag) == name:
            return own_text(child, report)
    return None


def _parser() -> etree.XMLPullParser:
    return etree.XMLPullParser(
        events=("start", "end"),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        recover=False,
    )


def _chunks(body: bytes, limits: Limits, report: ParseReport) -> Iterator[bytes]:
    report.compressed_bytes = len(body)
    if len(body) > limits.max_compressed_bytes:
        raise TooLarge(
            f"the document has {len(body)} bytes, more than the limit of "
            f"{limits.max_compressed_bytes}."
        )
    if is_gzip(body):
        for chunk in gunzip_capped(body, limits.max_decompressed_bytes):
            report.decompressed_bytes += len(chunk)
            yield chunk
        return
    if len(body) > limits.max_decompressed_bytes:
        raise TooLarge(
            f"the document has {len(body)} bytes of XML, more than the limit of "
            f"{limits.max_decompressed_bytes}."
        )
    report.decompressed_bytes = len(body)
    for start in range(0, len(body), _CHUNK):
        yield body[start : start + _CHUNK]


_DECLARED = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def _utf8_repaired(chunks: Iterator[bytes], report: ParseReport) -> Iterator[bytes]:
    """Pass a UTF-8 document on with invalid byte sequences replaced (U+FFFD), counted.

    Documents that declare another encoding (or start with a UTF-16/32 byte order mark)
    pass unchanged: libxml2 decodes them and reports errors itself.
    """
    decoder = None
    first = True
    for chunk in chunks:
        if first:
            first = False
            declared = _DECLARED.match(chunk[:200])
            name = declared.group(1).decode("ascii").lower() if declared else "utf-8"
            bom16 = chunk[:2] in (b"\xff\xfe", b"\xfe\xff")
            if name.replace("_", "-") in ("utf-8", "utf8") and not bom16:
                decoder = codecs.getincrementaldecoder("utf-8")("replace")
        if decoder is None:
            yield chunk
            continue
        text = decoder.decode(chunk)
        bad = text.count("\ufffd") - chunk.count(b"\xef\xbf\xbd")
        if bad > 0:
            report.skip("bad_bytes", bad)
        yield text.encode("utf-8")
    if decoder is not None:
        tail = decoder.decode(b"", final=True)
        if tail:
            report.skip("bad_bytes", tail.count("\ufffd"))
            yield tail.encode("utf-8")


def _refuse_entities(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Refuse documents whose DOCTYPE declares entities: no sitemap or feed needs them."""
    first = True
    for chunk in chunks:
        if first:
            first = False
            head = chunk.split(b"?>", 1)[-1][:_CHUNK]
            root = re.search(rb"<[A-Za-z_]", head)
            prolog = head[: root.start()] if root else head
            if b"<!ENTITY" in prolog.upper():
                raise EntitiesRefused(
                    "the document declares entities (<!ENTITY ...>); sitemaps and feeds "
                    "need none, and expanding them is how billion-laughs attacks work."
                )
        yield chunk


def iter_xml(
    body: bytes, limits: Limits, report: ParseReport
) -> Iterator[tuple[str, etree._Element]]:
    """Yield ``(event, element)`` (``"start"``/``"end"``) of ``body``, safely and lazily.

    Problems end the iteration and are written to ``report``: ``too_large`` (a byte
    limit; the caller must then drop what it read), ``entities_refused`` (the DOCTYPE
    declares entities: nothing is read), ``not_xml`` (nothing parsed) or ``malformed``
    (the XML broke off: the elements before stay usable). Invalid UTF-8 byte sequences
    are replaced and counted as ``bad_bytes``. The caller clears each element it is
    done with.
    """
    parser = _parser()
    started = False
    try:
        for chunk in _refuse_entities(_utf8_repaired(_chunks(body, limits, report), report)):
            parser.feed(chunk)
            for event, element in parser.read_events():
                started = True
                yield event, element
        parser.close()
    except TooLarge as exc:
        report.fail("too_large", str(exc))
        return
    except EntitiesRefused as exc:
        report.fail("entities_refused", str(exc))
        return
    except zlib.error as exc:
        report.fail("malformed" if started else "not_xml", f"bad gzip data: {exc}")
    except etree.XMLSyntaxError as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        report.fail("malformed", f"bad XML: {detail}")
    for event, element in parser.read_events():  # what was parsed before an error
        started = True
        yield event, element
    if report.outcome == "malformed" and not started:
        report.outcome = "not_xml"
