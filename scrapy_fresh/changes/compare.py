"""What changed on an item: the previous values of its changed fields, and text diffs.

With :setting:`FRESH_KEEP_ITEMS` the counted fields of a page's items are kept with its
record, JSON compressed with zlib (:func:`pack_items`, at most
:setting:`FRESH_KEEP_ITEMS_MAX_BYTES` per page). At the next visit a changed item gets
``fresh_previous`` (:func:`previous_values`) and, for text fields of at least
:setting:`FRESH_DIFF_MIN_CHARS` characters, ``fresh_diff`` (:func:`text_diff`).

Items of a page are matched to the previous visit's
(:func:`~scrapy_fresh.fingerprint.itemfields.match_items`) by the value
of :setting:`FRESH_ITEM_KEY_FIELD` when it is set (a product id, a URL: reordering is no
change), else by their position on the page. Standard library only, no Scrapy.
"""

from __future__ import annotations

import difflib
import json
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from scrapy_fresh import default_settings as defaults
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.fingerprint.itemfields import FieldRule, match_items

if TYPE_CHECKING:
    from scrapy_fresh.fingerprint.verdict import Verdict

__all__ = [
    "ChangeConfig",
    "ItemChange",
    "describe_changes",
    "logged_changes",
    "match_items",
    "pack_items",
    "plain_value",
    "previous_values",
    "text_diff",
    "told_changes",
    "unpack_items",
]

#: Context lines around each change in a ``fresh_diff``.
DIFF_CONTEXT: Final = 1
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


@dataclass(frozen=True)
class ChangeConfig:
    """The settings of change output (read and checked at start-up by :func:`scrapy_fresh.config.change_config`):
    kept items and diffs, PageGone items, the webhook."""

    keep_items: bool = defaults.FRESH_KEEP_ITEMS
    keep_items_max_bytes: int = defaults.FRESH_KEEP_ITEMS_MAX_BYTES
    item_key_field: str | None = defaults.FRESH_ITEM_KEY_FIELD
    diff_min_chars: int = defaults.FRESH_DIFF_MIN_CHARS
    gone_items: bool = defaults.FRESH_GONE_ITEMS
    webhook_url: str = defaults.FRESH_WEBHOOK_URL
    webhook_secret: str = defaults.FRESH_WEBHOOK_SECRET
    webhook_outbox: str = defaults.FRESH_WEBHOOK_OUTBOX
    webhook_backoff_secs: float = defaults.FRESH_WEBHOOK_BACKOFF_SECS
    webhook_max_backoff_secs: float = defaults.FRESH_WEBHOOK_MAX_BACKOFF_SECS
    webhook_timeout_secs: float = defaults.FRESH_WEBHOOK_TIMEOUT_SECS
    webhook_close_wait_secs: float = defaults.FRESH_WEBHOOK_CLOSE_WAIT_SECS

    def check_rules(self, fields: tuple[str, ...] | None, rules: Mapping[str, FieldRule]) -> None:
        """Raise ConfigError if the key field is not compared exactly: the match needs its
        exact hash (:setting:`FRESH_FINGERPRINT_FIELDS`, :setting:`FRESH_FIELD_RULES`)."""
        key = self.item_key_field
        if key is None:
            return
        if fields is not None and key not in fields:
            raise ConfigError(
                f"FRESH_ITEM_KEY_FIELD ({key!r}) must be one of FRESH_FINGERPRINT_FIELDS "
                f"({', '.join(fields)}): items are matched by its hash."
            )
        rule = rules.get(key)
        if rule is not None and (rule.skip or rule.fuzzy_bits is not None):
            raise ConfigError(
                f"FRESH_ITEM_KEY_FIELD ({key!r}) has a 'skip' or 'fuzzy_bits' rule in "
                "FRESH_FIELD_RULES; the key field must be compared exactly."
            )


def plain_value(value: Any) -> Any:
    """A JSON-able copy of an item field value (other objects as their ``str()``)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain_value(v) for v in value]
    return str(value)


def pack_items(
    items: Sequence[Mapping[str, Any]], names: Sequence[Sequence[str]], max_bytes: int
) -> bytes | None:
    """The fields ``names[i]`` of each item ``items[i]``, as zlib-compressed JSON; None
    when that is more than ``max_bytes`` (nothing is kept for the page then).

    >>> blob = pack_items([{"price": "9.50", "name": "Mug"}], [["price"]], 1000)
    >>> unpack_items(blob)
    [{'price': '9.50'}]
    >>> pack_items([{"text": "x" * 10_000}], [["text"]], 10) is None
    True
    """
    kept = [
        {name: plain_value(item.get(name)) for name in fields if name in item}
        for item, fields in zip(items, names, strict=True)
    ]
    text = json.dumps(kept, ensure_ascii=False, separators=(",", ":"))
    blob = zlib.compress(text.encode("utf-8", "surrogatepass"), 6)
    return blob if len(blob) <= max_bytes else None


def unpack_items(blob: bytes) -> list[dict[str, Any]]:
    """The items :func:`pack_items` packed; [] for bytes it did not make."""
    try:
        data = json.loads(zlib.decompress(blob).decode("utf-8", "surrogatepass"))
    except (zlib.error, UnicodeDecodeError, ValueError):
        return []
    if not isinstance(data, list):
        return []
    return [item for item in data if isinstance(item, dict)]


def previous_values(previous: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """The previous value of each changed field (None for a field the item did not have).

    >>> previous_values({"price": "9.50", "name": "Mug"}, ["price", "stock"])
    {'price': '9.50', 'stock': None}
    """
    return {name: previous.get(name) for name in names}


def _lines(text: str) -> list[str]:
    """Lines of a text, each line cut after its sentences: a diff of a long one-line
    description shows the sentence that changed, not the whole paragraph."""
    out: list[str] = []
    for line in text.splitlines():
        out.extend(_SENTENCE_END.split(line) or [""])
    return out


def text_diff(name: str, before: Any, after: Any, min_chars: int) -> str | None:
    """A compact unified diff of a text field (one line of context), or None when the
    field is not text on both visits or both are shorter than ``min_chars``.

    >>> print(text_diff("body", "A mug. It is blue. Dishwasher safe.",
    ...                 "A mug. It is red. Dishwasher safe.", 10))
    --- body (previous)
    +++ body
    @@ -1,3 +1,3 @@
     A mug.
    -It is blue.
    +It is red.
     Dishwasher safe.
    """
    if not isinstance(before, str) or not isinstance(after, str):
        return None
    if max(len(before), len(after)) < min_chars:
        return None
    lines = difflib.unified_diff(
        _lines(before),
        _lines(after),
        f"{name} (previous)",
        name,
        n=DIFF_CONTEXT,
        lineterm="",
    )
    return "\n".join(lines) or None


@dataclass(frozen=True)
class ItemChange:
    """What changed on one item: the previous values of its changed fields and the
    diffs of its long text fields (``fresh_previous``, ``fresh_diff``)."""

    previous: dict[str, Any]
    diff: dict[str, str]


def describe_changes(
    item_changes: Sequence[Sequence[str]],
    matches: Sequence[int | None],
    previous_blob: bytes | None,
    current: Sequence[Mapping[str, Any]],
    min_chars: int,
) -> list[ItemChange | None]:
    """Per item of a page, what changed on it (None: nothing to tell: no changed field,
    a new item, or nothing kept of the previous visit).

    :param item_changes: the changed fields of each item (``Verdict.item_changes``).
    :param matches: the previous item each was compared with (``Verdict.matches``).
    :param previous_blob: the items kept of the previous visit (:func:`pack_items`).
    :param current: the items now (mappings of field values).
    """
    if not previous_blob or not matches:
        return [None] * len(current)
    previous = unpack_items(previous_blob)
    out: list[ItemChange | None] = []
    for names, match, item in zip(item_changes, matches, current, strict=False):
        if not names or match is None or match >= len(previous):
            out.append(None)
            continue
        before = previous[match]
        diffs = {}
        for name in names:
            diff = text_diff(name, before.get(name), item.get(name), min_chars)
            if diff is not None:
                diffs[name] = diff
        out.append(ItemChange(previous_values(before, names), diffs))
    out.extend([None] * (len(current) - len(out)))
    return out


#: Longest text of a previous value or a diff in the visit log (the rest is cut).
LOG_TEXT_MAX: Final = 2000


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > LOG_TEXT_MAX:
        return value[:LOG_TEXT_MAX] + "..."
    return value


def told_changes(verdict: Verdict, values: Sequence[Mapping[str, Any]], kept: bytes | None,
                 min_chars: int) -> list[ItemChange | None]:  # fmt: skip
    """What to tell of a page's changed items (:func:`describe_changes`): from the items'
    ``values`` as the spider yielded them, else from what ``kept`` holds of them. Told
    once per visit, and the same to the items (``fresh_previous``, ``fresh_diff``) and
    to the visit log."""
    if verdict.new or not verdict.previous_items:
        return []
    if not values:
        if not kept:
            return []
        values = unpack_items(kept)
    return describe_changes(
        verdict.item_changes, verdict.matches, verdict.previous_items, values, min_chars
    )


def logged_changes(told: Sequence[ItemChange | None]) -> list[dict[str, Any]]:
    """What the visit log keeps of a page's changed items (for the report and the change
    feed): per item that has something to tell, its index, the previous values and the
    diffs, long texts cut at :data:`LOG_TEXT_MAX` characters."""
    return [
        {
            "item": i,
            "previous": {k: _cut(v) for k, v in change.previous.items()},
            "diff": {k: _cut(v) for k, v in change.diff.items()},
        }
        for i, change in enumerate(told)
        if change is not None
    ]
