"""The change verdict of a downloaded page: what it shows (:class:`PageContent`) against
what its record remembers (:class:`~scrapy_fresh.store.base.PageState`).

One verdict per page (:func:`judge`), in this order:

1. A page never judged before is *new*: every counted field of every item is reported.
2. A page that yields items (:attr:`PageContent.items`) is *changed* exactly when some
   counted field of some item changed (:func:`~scrapy_fresh.fingerprint.itemfields.changed_fields`),
   or items appeared or went away (they are matched by their position on the page, or
   by :setting:`FRESH_ITEM_KEY_FIELD`, :func:`~scrapy_fresh.fingerprint.itemfields.match_items`). The
   page's own markup -- its sidebar, its footer, its render time -- is not looked at.
   Stored hashes made by other field rules (the user changed :setting:`FRESH_FIELD_RULES`
   or :setting:`FRESH_FINGERPRINT_FIELDS`: their field scheme tag differs) are compared
   with the items hashed again by those rules (:attr:`PageContent.rehash`): still exact.
3. A page that yields no item (or none with a counted field) is judged by its content
   digest (:attr:`PageContent.digest`: an exact hash of the page's normalised main
   content) when both visits have one made by the same scheme
   (:func:`~scrapy_fresh.fingerprint.content.digest_scheme`: the same
   :data:`~scrapy_fresh.fingerprint.content.CONTENT_VERSION` and content rules); a page
   whose items went away is *changed*.
   A stored digest made by other content rules (the user changed a ``FRESH_CONTENT_*``
   setting: the texts hashed differ on every page) is compared with the page digested
   again by those rules (:attr:`PageContent.redigest`): still exact.
4. Otherwise -- a record written before per-field hashes and content digests existed
   (store schema 2 and older), a page without a digest, or a digest whose rules cannot
   be applied again (made by another ``CONTENT_VERSION``: an upgrade) -- by the simhash
   distance, more than :setting:`FRESH_FINGERPRINT_THRESHOLD_BITS` bits (the former
   verdict), that once.

The simhash (:attr:`PageContent.simhash`) is always stored (``PageState.fingerprint``)
and its distance to the previous one is the verdict's :attr:`~Verdict.magnitude`: how
much changed, not whether. No Scrapy.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from scrapy_fresh.fingerprint.content import digest_scheme
from scrapy_fresh.fingerprint.itemfields import (
    FieldRule,
    FieldRules,
    changed_fields,
    match_items,
    untagged,
)
from scrapy_fresh.fingerprint.shingles import changed as simhash_changed
from scrapy_fresh.fingerprint.shingles import hamming

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from scrapy_fresh.store.base import PageState

__all__ = ["Hashed", "PageContent", "Verdict", "judge"]

_EXACT = FieldRule()


@dataclass(frozen=True)
class PageContent:
    """What one download of a page shows of its content.

    :param simhash: 64-bit simhash of the page's text (or of its items' text): stored,
        and compared only as a magnitude or for records without anything better.
    :param digest: exact 64-bit digest of the page's normalised main content, for pages
        judged without items; None when the page is not judged by a digest.
    :param items: per item yielded for the page, in order, the hash of each counted field
        (:func:`~scrapy_fresh.fingerprint.itemfields.item_hashes`); None when the page yielded no
        item with a counted field.
    :param fields: the fields counted (None: every field), to tell a field that went
        away from one no longer counted.
    :param rules: the field rules the hashes were made with (fuzzy fields, skips).
    :param key_field: the field that identifies an item on the page
        (:setting:`FRESH_ITEM_KEY_FIELD`); None: items are matched by position.
    :param kept: what to keep of the items for the next visit
        (:func:`~scrapy_fresh.changes.compare.pack_items`), or None.
    :param values: the items' field values as the spider yielded them (what a change is
        told from: previous values, diffs), or empty (then what ``kept`` holds).
    :param redigest: given the scheme tag of a stored digest, the digests of this page
        made with each rule set known to make that tag other than the rules of
        ``digest``; None when there is none (:class:`~scrapy_fresh.crawl.schemes.ContentSchemes`).
    :param field_scheme: the field scheme tag of ``fields`` and ``rules``
        (:func:`~scrapy_fresh.fingerprint.itemfields.field_scheme`), kept with the hashes.
    :param rehash: given the field scheme tag of stored item hashes, this page's items
        hashed by each other rule set known to make that tag, with those fields and
        rules; empty when there is none (:class:`~scrapy_fresh.crawl.schemes.FieldSchemes`).
    """

    simhash: int
    digest: int | None = None
    items: list[dict[str, int]] | None = None
    fields: tuple[str, ...] | None = None
    rules: FieldRules = field(default_factory=dict)
    key_field: str | None = None
    kept: bytes | None = None
    values: tuple[Mapping[str, Any], ...] = ()
    redigest: Callable[[int], tuple[int, ...] | None] | None = field(
        default=None, compare=False, repr=False
    )
    field_scheme: int | None = None
    rehash: Callable[[int], list[Hashed]] | None = field(default=None, compare=False, repr=False)


#: Items hashed by some rules: their hashes, the fields counted, the field rules.
Hashed = tuple[list[dict[str, int]], "tuple[str, ...] | None", FieldRules]


@dataclass(frozen=True)
class Verdict:
    """The verdict on one download.

    ``item_changes[i]`` names the changed fields of the ``i``-th item of
    :attr:`PageContent.items` (every counted field for a new page or a new item;
    every field when the record had only a simhash and that changed).
    """

    new: bool
    changed: bool
    item_changes: tuple[tuple[str, ...], ...] = ()
    #: Bits between the stored simhash and this one; None for a new page.
    magnitude: int | None = None
    #: How the verdict was reached: "new", "items", "digest" or "simhash".
    basis: str = "new"
    #: Per item, the index of the previous visit's item it was compared with (None: a
    #: new item); empty unless the verdict was reached by items.
    matches: tuple[int | None, ...] = ()
    #: The items the record kept of the previous visit (``PageState.kept_items``).
    previous_items: bytes | None = None


def _all_fields(items: list[dict[str, int]]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(hashes) for hashes in items)


def _by_items(
    old: list[dict[str, int]],
    hashed: Hashed,
    content: PageContent,
    magnitude: int,
    kept: bytes | None,
) -> Verdict:
    """The verdict of items hashed by some rules against the stored hashes ``old``
    (``content``'s own rules, or other rules that made ``old``: see :func:`_again`)."""
    items, fields, rules = hashed
    matches = match_items(old, items, content.key_field)
    changes = tuple(
        tuple(new) if m is None else tuple(changed_fields(old[m], new, fields, rules))
        for m, new in zip(matches, items, strict=True)
    )
    changed = len(items) != len(old) or None in matches or any(changes)
    return Verdict(False, changed, changes, magnitude, "items", tuple(matches), kept)


def _again(old: Hashed, content: PageContent) -> Hashed:
    """Items hashed by the rules of the stored hashes, compared as the rules in force
    would: a fuzzy field made stricter (fewer ``fuzzy_bits``, or exact) by no more bits
    than the rules in force allow (its simhash does not depend on them; exact, any bit
    is an edit)."""
    items, fields, rules = old
    now = content.rules
    stricter = dict(rules)
    for name, rule in rules.items():
        if rule.fuzzy_bits is None:
            continue
        bits = now.get(name, _EXACT).fuzzy_bits
        stricter[name] = replace(rule, fuzzy_bits=min(rule.fuzzy_bits, bits or 0))
    return items, fields, stricter


def _told(verdict: Verdict, content: PageContent, stored: int) -> Verdict:
    """A verdict reached by other rules, told in the names the rules in force count: a
    field they do not count (narrowed :setting:`FRESH_FINGERPRINT_FIELDS`, a ``skip``
    rule) is no change, a new item has the fields they count."""
    items = content.items
    if items is None:
        return replace(verdict, item_changes=())  # judged as a page: nothing per item
    fields, rules = content.fields, content.rules

    def counted(name: str) -> bool:
        return (fields is None or name in fields) and not rules.get(name, _EXACT).skip

    changes = tuple(
        tuple(now) if m is None else tuple(n for n in names if counted(n))
        for m, now, names in zip(verdict.matches, items, verdict.item_changes, strict=True)
    )
    changed = len(items) != stored or None in verdict.matches or any(changes)
    return replace(verdict, changed=changed, item_changes=changes)


def judge(state: PageState, content: PageContent, threshold_bits: int) -> Verdict:
    """The verdict on ``content`` against ``state`` as stored before this visit.

    :param threshold_bits: :setting:`FRESH_FINGERPRINT_THRESHOLD_BITS`, used only when
        neither item fields nor content digests can be compared (step 4 above).
    """
    items = content.items
    if state.last_crawl is None or state.fingerprint is None:
        return Verdict(True, True, _all_fields(items or []))
    magnitude = hamming(state.fingerprint, content.simhash)
    old_items = state.field_hashes
    if old_items:
        old, tag = untagged(old_items)
        kept = state.kept_items
        now = None if items is None else (items, content.fields, content.rules)
        current = None if now is None else _by_items(old, now, content, magnitude, kept)
        if (
            tag is not None
            and content.rehash is not None
            and (tag != content.field_scheme or (current is not None and current.changed))
        ):
            # Other field rules made the stored hashes (the user changed them, or two
            # rule sets share the tag): the items hashed again by those rules are what
            # the hashes are compared with, told by the rules in force.
            by_old = [
                _told(_by_items(old, _again(h, content), content, magnitude, kept),
                      content, len(old))
                for h in content.rehash(tag)
            ]  # fmt: skip
            if tag == content.field_scheme and current is not None:
                by_old.insert(0, current)
            if by_old:
                return next((v for v in by_old if not v.changed), by_old[0])
        if current is not None:
            return current
        return Verdict(False, True, (), magnitude, "items")  # the items went away
    stored = state.content_hash
    if items is None and content.digest is not None and stored is not None:
        if content.digest == stored:
            return Verdict(False, False, (), magnitude, "digest")
        # Other rules of the stored digest's tag may have made it (the user's rules
        # changed, or rules set per page share the tag): digested again by them.
        again = content.redigest(digest_scheme(stored)) if content.redigest else None
        if again is not None:
            return Verdict(False, stored not in again, (), magnitude, "digest")
        if digest_scheme(stored) == digest_scheme(content.digest):
            return Verdict(False, True, (), magnitude, "digest")
    changed = simhash_changed(state.fingerprint, content.simhash, threshold_bits)
    return Verdict(
        False, changed, _all_fields(items) if changed and items else (), magnitude, "simhash"
    )
