"""The content rules behind each digest scheme tag (``runtime.schemes``).

A page's content digest carries the 16-bit tag of the rules that made it
(:func:`~scrapy_fresh.fingerprint.content.digest_scheme`). When the user changes the
rules (a ``FRESH_CONTENT_*`` setting, a spider attribute, a meta key), the stored digest
and the new one hash different texts; to judge the page exactly all the same, it is
digested once more with the rules of the stored tag, read here. The rules of each tag a
visit records are kept in the store (meta records ``content_scheme`` / ``<tag>``: the
``CONTENT_VERSION`` and the rules), written once per run and tag.

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


class ContentSchemes:
    """The rules of the digest scheme tags: this run's written to the store once, older
    ones read from it once, on first use."""

    def __init__(
        self, store: Callable[[], StateStore], error: Callable[[str, Exception], None]
    ) -> None:
        self._store = store
        self._error = error
        self._written: set[int] = set()
        self._read: dict[int, ContentRules | None] = {}

    def remember(self, rules: ContentRules) -> None:
        """Keep the rules of ``rules.scheme`` in the store (once per run; a tag the store
        holds other rules for, a 16-bit collision, is left as it is)."""
        tag = rules.scheme
        if tag in self._written:
            return
        self._written.add(tag)
        self._read[tag] = rules
        key = f"{tag:04x}"
        value = _describe(rules)
        try:
            self._store().update_meta(
                SCHEME_NAMESPACE, key, lambda held: value if held is None else None
            )
        except StoreError as exc:
            self._error("note the content rules in", exc)

    def rules_of(self, tag: int) -> ContentRules | None:
        """The rules that made digests of scheme ``tag``, if known and of this
        ``CONTENT_VERSION``; else None."""
        if tag in self._read:
            return self._read[tag]
        rules = None
        try:
            held = self._store().get_meta(SCHEME_NAMESPACE, f"{tag:04x}")
        except StoreError as exc:
            self._error("read the content rules from", exc)
            return None  # not cached: asked again on the next page
        if held is not None and held.get("version") == CONTENT_VERSION:
            try:
                rules = ContentRules.build(
                    include=held.get("include") or (),
                    exclude=held.get("exclude") or (),
                    ignore=held.get("ignore") or (),
                    noise=held.get("noise") or (),
                )
            except (ConfigError, TypeError):  # a damaged record: as if unknown
                rules = None
            if rules is not None and rules.scheme != tag:
                rules = None  # written by other code: its rules do not make this tag
        self._read[tag] = rules
        return rules
