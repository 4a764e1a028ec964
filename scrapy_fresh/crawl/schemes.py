"""The content rules behind each digest scheme tag (``runtime.schemes``).

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
applied again: :meth:`ContentSchemes.rules_of` gives None for them, and the verdict
falls back on the simhash distance for that one visit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_fresh.exceptions import ConfigError, StoreError
from scrapy_fresh.fingerprint.content import CONTENT_VERSION, ContentRules

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy_fresh.store.base import StateStore

__all__ = ["SCHEME_NAMESPACE", "ContentSchemes"]

#: Meta namespace of the content rules of each digest scheme tag.
SCHEME_NAMESPACE = "content_scheme"


def _describe(rules: ContentRules) -> dict[str, Any]:
    return {
        "version": CONTENT_VERSION,
        "include": list(rules.include),
        "exclude": list(rules.exclude),
        "ignore": list(rules.ignore),
        "noise": list(rules.noise),
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
        )
    except (ConfigError, TypeError, ValueError):
        return None
    return rules if rules.scheme == tag else None


class ContentSchemes:
    """The rule sets of the digest scheme tags: this run's written to the store once
    each, older ones read from it once per tag, on first use."""

    def __init__(
        self, store: Callable[[], StateStore], error: Callable[[str, Exception], None]
    ) -> None:
        self._store = store
        self._error = error
        self._written: set[ContentRules] = set()
        self._read: dict[int, list[ContentRules]] = {}

    def remember(self, rules: ContentRules) -> None:
        """Keep ``rules`` among the rule sets of its tag in the store (once per run; a
        failed write is tried again at the next page)."""
        if rules in self._written:
            return
        tag = rules.scheme
        described = _describe(rules)

        def add(held: dict[str, Any] | None) -> dict[str, Any] | None:
            sets = list((held or {}).get("sets") or ())
            return None if described in sets else {"sets": [*sets, described]}

        try:
            self._store().update_meta(SCHEME_NAMESPACE, f"{tag:04x}", add)
        except (StoreError, ValueError, TypeError, UnicodeError) as exc:
            self._error("note the content rules in", exc)  # (a pattern no store can hold)
            return
        self._written.add(rules)
        known = self._read.get(tag)
        if known is not None and rules not in known:
            known.append(rules)

    def candidates(self, tag: int) -> list[ContentRules]:
        """Every rule set known to have made digests of scheme ``tag`` (of this
        ``CONTENT_VERSION``): none when the store has no record of the tag."""
        known = self._read.get(tag)
        if known is not None:
            return known
        try:
            held = self._store().get_meta(SCHEME_NAMESPACE, f"{tag:04x}")
        except StoreError as exc:
            self._error("read the content rules from", exc)
            return []  # not cached: asked again on the next page
        sets = held.get("sets") if isinstance(held, dict) else None
        found = [r for r in (_rules(h, tag) for h in sets or ()) if r is not None]
        self._read[tag] = found
        return found
