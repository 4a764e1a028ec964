"""The rules behind each scheme tag of the stored hashes: content rules behind each
digest scheme tag (``runtime.schemes``), item field rules behind each field scheme tag
(``runtime.field_schemes``).

A page's content digest carries the 16-bit tag of the rules that made it
(:func:`~scrapy_fresh.fingerprint.content.digest_scheme`). When the user changes the
rules (a ``FRESH_CONTENT_*`` setting, a spider attribute, a meta key), the stored digest
and the new one hash different texts; to judge the page exactly all the same, it is
digested once more with the rules of the stored tag, read here. The rules of each tag a
visit records are kept in the store (meta records ``content_scheme`` / ``<tag>``:
``{"sets": [...]}``, each set the ``CONTENT_VERSION`` and the rules), written once per run
and rule set. Sixteen bits are few: rules set per page (an include selector per product,
say) share tags, and so may new rules and old ones. So a tag keeps every rule set seen
with it, and a page is digested by each of them that is not its current rules: the
stored digest is the one such a digest reproduces.

Rules of another ``CONTENT_VERSION`` (an upgrade changed the extraction) cannot be
applied again: :meth:`RuleSchemes.candidates` leaves them out, and the verdict
falls back on the simhash distance for that one visit.

Item field hashes work the same way (:func:`~scrapy_fresh.fingerprint.itemfields.field_scheme`,
meta records ``field_scheme``): after a change of :setting:`FRESH_FIELD_RULES` or
:setting:`FRESH_FINGERPRINT_FIELDS`, a page's items are hashed again by the rules of its
stored hashes and judged by those, exactly, instead of every item page being "changed"
once. One :class:`RuleSchemes` keeps both kinds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from scrapy_fresh.exceptions import ConfigError, StoreError
from scrapy_fresh.fingerprint.content import CONTENT_VERSION, ContentRules
from scrapy_fresh.fingerprint.itemfields import (
    ItemRules,
    describe_field_rules,
    field_scheme_of,
    rebuild_field_rules,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy_fresh.store.base import StateStore

__all__ = [
    "FIELD_SCHEME_NAMESPACE",
    "SCHEME_NAMESPACE",
    "ContentSchemes",
    "FieldSchemes",
    "RuleSchemes",
]

#: Meta namespace of the content rules of each digest scheme tag.
SCHEME_NAMESPACE = "content_scheme"
#: Meta namespace of the item field rules of each field scheme tag.
FIELD_SCHEME_NAMESPACE = "field_scheme"

R = TypeVar("R")


def _describe(rules: ContentRules) -> dict[str, Any]:
    return {
        "version": CONTENT_VERSION,
        "include": list(rules.include),
        "exclude": list(rules.exclude),
        "ignore": list(rules.ignore),
        "noise": list(rules.noise),
        **({"links": True} if rules.links else {}),
    }


def _rules(held: Any, tag: int) -> ContentRules | None:
    """The rules a stored set describes, if it is of this ``CONTENT_VERSION`` and makes
    ``tag``; else None (an older version, damage, other code)."""
    if not isinstance(held, dict) or held.get("version") != CONTENT_VERSION:
        return None
    try:
        rules = ContentRules.build(
            include=held.get("include") or (),
            exclude=held.get("exclude") or (),
            ignore=held.get("ignore") or (),
            noise=held.get("noise") or (),
            links=held.get("links", False),
        )
    except (ConfigError, TypeError, ValueError):
        return None
    return rules if rules.scheme == tag else None


class RuleSchemes(Generic[R]):
    """The rule sets behind the scheme tags of one kind of hash, kept in the meta
    namespace ``namespace`` (``<tag in hex>``: ``{"sets": [...]}``): this run's written
    to the store once each, older ones read from it once per tag, on first use.

    ``tag`` gives a rule set's tag, ``describe`` the JSON the store keeps of it, and
    ``rebuild`` the rule set a stored description gives for a tag (None when it cannot
    be applied again: another version of the hashing, damage, other code).
    """

    def __init__(
        self,
        namespace: str,
        tag: Callable[[R], int],
        describe: Callable[[R], dict[str, Any]],
        rebuild: Callable[[Any, int], R | None],
        store: Callable[[], StateStore],
        error: Callable[[str, Exception], None],
        *,
        what: str,
        width: int,
    ) -> None:
        self.namespace = namespace
        self._what = what
        self._tag = tag
        self._describe = describe
        self._rebuild = rebuild
        self._store = store
        self._error = error
        self._width = width
        self._written: set[R] = set()
        self._read: dict[int, list[R]] = {}

    def _key(self, tag: int) -> str:
        return f"{tag:0{self._width}x}"

    def remember(self, rules: R) -> None:
        """Keep ``rules`` among the rule sets of its tag in the store (once per run; a
        failed write is tried again at the next page)."""
        if rules in self._written:
            return
        tag = self._tag(rules)
        described = self._describe(rules)

        def add(held: dict[str, Any] | None) -> dict[str, Any] | None:
            sets = list((held or {}).get("sets") or ())
            return None if described in sets else {"sets": [*sets, described]}

        try:
            self._store().update_meta(self.namespace, self._key(tag), add)
        except (StoreError, ValueError, TypeError, UnicodeError) as exc:
            self._error(f"note the {self._what} in", exc)  # (a pattern no store can hold)
            return
        self._written.add(rules)
        known = self._read.get(tag)
        if known is not None and rules not in known:
            known.append(rules)

    def candidates(self, tag: int) -> list[R]:
        """Every rule set known to have made hashes of scheme ``tag`` (that can be
        applied again): none when the store has no record of the tag."""
        known = self._read.get(tag)
        if known is not None:
            return known
        try:
            held = self._store().get_meta(self.namespace, self._key(tag))
        except StoreError as exc:
            self._error(f"read the {self._what} from", exc)
            return []  # not cached: asked again on the next page
        sets = held.get("sets") if isinstance(held, dict) else None
        found = [r for r in (self._rebuild(h, tag) for h in sets or ()) if r is not None]
        self._read[tag] = found
        return found


class ContentSchemes(RuleSchemes[ContentRules]):
    """The content rules of the digest scheme tags (16 bits, :data:`SCHEME_NAMESPACE`)."""

    def __init__(
        self, store: Callable[[], StateStore], error: Callable[[str, Exception], None]
    ) -> None:
        super().__init__(
            SCHEME_NAMESPACE, _content_tag, _describe, _rules, store, error,
            what="content rules", width=4,
        )  # fmt: skip


class FieldSchemes(RuleSchemes[ItemRules]):
    """The item field rules of the field scheme tags (32 bits,
    :data:`FIELD_SCHEME_NAMESPACE`; :func:`~scrapy_fresh.fingerprint.itemfields.field_scheme`)."""

    def __init__(
        self, store: Callable[[], StateStore], error: Callable[[str, Exception], None]
    ) -> None:
        super().__init__(
            FIELD_SCHEME_NAMESPACE, field_scheme_of, describe_field_rules, _field_rules,
            store, error, what="item field rules", width=8,
        )  # fmt: skip


def _content_tag(rules: ContentRules) -> int:
    return rules.scheme


def _field_rules(held: Any, tag: int) -> ItemRules | None:
    """The field rules a stored set describes, if they make ``tag``; else None."""
    rules = rebuild_field_rules(held)
    return rules if rules is not None and field_scheme_of(rules) == tag else None
