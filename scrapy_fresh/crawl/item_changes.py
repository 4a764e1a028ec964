"""Scrapy glue of :mod:`scrapy_fresh.changes.compare`: what to keep of a page's items, and the
``fresh_previous`` and ``fresh_diff`` fields of its changed items.

Called by :class:`~scrapy_fresh.crawl.middlewares.FreshSpiderMiddleware` for each judged page.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter

from scrapy_fresh.changes.compare import ChangeConfig, pack_items

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from scrapy_fresh.changes.compare import ItemChange


__all__ = ["annotate", "kept_items"]


def kept_items(
    items: Sequence[Any], hashes: Sequence[dict[str, int]], config: ChangeConfig,
    stat: Callable[[str], None],
) -> bytes | None:  # fmt: skip
    """The counted fields of ``items`` to keep with the record, or None (not kept: off,
    or more than :setting:`FRESH_KEEP_ITEMS_MAX_BYTES`, stat ``fresh/items_not_kept``)."""
    if not config.keep_items or not any(hashes):
        return None
    names = [list(h) for h in hashes]
    blob = pack_items([ItemAdapter(item) for item in items], names, config.keep_items_max_bytes)
    if blob is None:
        stat("fresh/items_not_kept")
    return blob


def _set(item: Any, name: str, value: Any) -> bool:
    with contextlib.suppress(KeyError, TypeError, AttributeError):
        ItemAdapter(item)[name] = value
        return True
    return False  # items that cannot take the field go without


def annotate(
    items: Sequence[Any], told: Sequence[ItemChange | None], stat: Callable[[str], None]
) -> None:
    """Give each changed item ``fresh_previous`` (the previous values of its changed
    fields) and ``fresh_diff`` (unified diffs of its long text fields), as the visit
    recorder told them (:func:`~scrapy_fresh.changes.compare.told_changes`; the visit log
    has the same). Items of a new page, new items and pages without kept items get
    neither."""
    for item, change in zip(items, told, strict=False):
        if change is None:
            continue
        _set(item, "fresh_previous", change.previous)
        if change.diff and _set(item, "fresh_diff", change.diff):
            stat("fresh/items_diffed")
