"""Checks shared by the store backends, so that every backend rejects the same input.

Internal: the rules are documented on :class:`~scrapy_fresh.store.base.StateStore`.
"""

from __future__ import annotations

import json
import logging
import math
import re
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from scrapy_fresh.jsontext import compact_encoder
from scrapy_fresh.store.base import DUE_STATUSES, Provider, Status

if TYPE_CHECKING:
    from scrapy_fresh.store.base import PageState, SiteState

__all__ = [
    "DUE_STATUSES",
    "WAITING_STATUSES",
    "check_host",
    "check_key",
    "check_limit",
    "check_meta_name",
    "check_site",
    "check_state",
    "check_time",
    "copy_json",
    "decode_meta",
    "encode_meta",
    "log_regressions",
]

logger = logging.getLogger("scrapy_fresh.store")

#: Statuses whose records ``make_due`` moves (an operator's "fetch it now").
WAITING_STATUSES = frozenset({Status.QUEUED, Status.IDLE})

_KEY_RE = re.compile(r"[0-9a-f]{40}")
_FLOAT_FIELDS = (
    "first_seen",
    "last_crawl",
    "next_due",
    "in_flight_since",
    "refresh_secs",
    "p_l",
    "p_g",
    "p_c",
    "change_rate",
)
_INT_FIELDS = ("doc_id", "visits", "changes", "errors", "content_length", "access_count")
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_U64 = 1 << 64
_main = attrgetter(
    "key", "url", "host", "status", "provider", "fingerprint", "change_bucket",
    "content_length", "request", "content_hash", "field_hashes",
)  # fmt: skip
_ints = attrgetter("doc_id", "visits", "changes", "errors", "access_count")
_floats = attrgetter(*_FLOAT_FIELDS)
_JSON_SCALARS = (str, int, float, bool, type(None))


def check_key(key: str) -> str:
    """Return ``key`` if it is a 40-character lower-case hex SHA-1, else raise ValueError."""
    if not isinstance(key, str) or _KEY_RE.fullmatch(key) is None:
        raise ValueError(
            f"key ({key!r}) must be a 40-character lower-case hex SHA-1 "
            "as returned by scrapy_fresh.keys.url_key()."
        )
    return key


def check_host(host: str) -> str:
    """Return ``host`` if it is a non-empty string without spaces, else raise ValueError."""
    if not isinstance(host, str) or not host or host != host.strip() or " " in host:
        raise ValueError(f"host ({host!r}) must be a host name such as 'example.com'.")
    return host


_NAMESPACE_RE = re.compile(r"[a-z0-9_.-]{1,64}")
# (of copy_json's copy: a value that holds itself fails there, not here)
_encode_meta = compact_encoder(ensure_ascii=False, sort_keys=True, allow_nan=False)


def check_meta_name(namespace: str, key: str) -> None:
    """Raise ValueError unless ``namespace`` and ``key`` name a meta record
    (:class:`~scrapy_fresh.store.base.StateStore`: the rules)."""
    if not isinstance(namespace, str) or _NAMESPACE_RE.fullmatch(namespace) is None:
        raise ValueError(
            f"meta namespace ({namespace!r}) must be 1-64 lower-case letters, digits, "
            "'_', '-' or '.', such as 'trust'."
        )
    if not isinstance(key, str) or not key or len(key) > 1024 or "\0" in key:
        raise ValueError(
            f"meta key ({key!r}) must be a non-empty string of at most 1024 characters "
            "without NUL."
        )


def encode_meta(namespace: str, key: str, value: dict[str, Any]) -> str:
    """Check a meta record and return its value as compact JSON text (keys sorted).

    :raises ValueError: a bad name, or a number JSON cannot hold (NaN, infinity).
    :raises TypeError: a value that is not a JSON object (dict with str keys).
    """
    check_meta_name(namespace, key)
    if not isinstance(value, dict):
        raise TypeError(
            f"meta record {namespace}/{key} must be a dict (a JSON object), "
            f"not {type(value).__name__}."
        )
    try:
        return _encode_meta(copy_json(value, f"meta record {namespace}/{key}"))
    except ValueError as exc:
        raise ValueError(
            f"meta record {namespace}/{key} holds a number JSON cannot hold: {exc}"
        ) from None


def decode_meta(text: str | bytes) -> dict[str, Any]:
    """A stored meta value back as a dict (a fresh copy)."""
    value: dict[str, Any] = json.loads(text)
    return value


def check_time(name: str, value: float) -> float:
    """Return ``value`` if it is a number (not NaN), else raise ValueError."""
    if math.isnan(value):
        raise ValueError(f"{name} is NaN; expected a time in Unix seconds.")
    return value


def check_limit(limit: int) -> int:
    """Return ``limit`` if it is a non-negative integer, else raise ValueError."""
    if limit < 0:
        raise ValueError(f"limit ({limit!r}) must be 0 or more.")
    return int(limit)


def check_state(state: PageState) -> None:
    """Raise ValueError or TypeError if ``state`` holds a value no backend can store faithfully.

    :class:`~scrapy_fresh.store.base.PageState` checks its fields when it is built;
    this repeats the checks that attribute assignments after construction could break,
    rejects integers beyond 64 bits and NaN times and rates (SQLite stores NaN as NULL).
    """
    # One quick pass for the usual, valid record; _explain() finds what is wrong.
    key, url, host, status, provider, fp, bucket, content_length, request, digest, items = _main(
        state
    )
    if not (
        isinstance(key, str)
        and _KEY_RE.fullmatch(key) is not None
        and isinstance(url, str)
        and isinstance(host, str)
        and status in _STATUS_VALUES
        and provider in _PROVIDER_VALUES
        and (fp is None or 0 <= fp < _U64)
        and 0 <= bucket <= 255
        and (content_length is None or _I64_MIN <= content_length <= _I64_MAX)
        and isinstance(request, dict)
        and (digest is None or 0 <= digest < _U64)
        and type(items) is list
    ):
        _explain(state)
    if items:
        _check_field_hashes(state)
    kept = state.kept_items
    if kept is not None and type(kept) is not bytes:
        raise TypeError(f"kept_items of {key} ({type(kept).__name__}) must be bytes or None.")
    doc_id, *counts = _ints(state)
    if not 0 <= doc_id <= _I64_MAX:
        _explain(state)
    for value in counts:
        if not _I64_MIN <= value <= _I64_MAX:
            _explain(state)
    for value in _floats(state):
        if value != value:  # noqa: PLR0124  # NaN (None == None)
            _explain(state)


def _explain(state: PageState) -> None:
    """Raise the error that says what is wrong with ``state``."""
    check_key(state.key)
    if not isinstance(state.url, str) or not isinstance(state.host, str):
        raise TypeError(
            f"url ({state.url!r}) and host ({state.host!r}) of {state.key} must be str."
        )
    if state.status not in _STATUS_VALUES:
        raise ValueError(
            f"status ({state.status!r}) of {state.key} must be one of {sorted(_STATUS_VALUES)}."
        )
    if state.provider not in _PROVIDER_VALUES:
        raise ValueError(
            f"provider ({state.provider!r}) of {state.key} must be one of "
            f"{sorted(_PROVIDER_VALUES)}."
        )
    fp = state.fingerprint
    if fp is not None and not 0 <= fp < 1 << 64:
        raise ValueError(
            f"fingerprint ({fp!r}) of {state.key} must be an unsigned 64-bit integer."
        )
    digest = state.content_hash
    if digest is not None and not 0 <= digest < _U64:
        raise ValueError(
            f"content_hash ({digest!r}) of {state.key} must be an unsigned 64-bit integer."
        )
    _check_field_hashes(state)
    if not 0 <= state.change_bucket <= 255:
        raise ValueError(
            f"change_bucket ({state.change_bucket!r}) of {state.key} must fit in one byte (0..255)."
        )
    if state.doc_id < 0:
        raise ValueError(
            f"doc_id ({state.doc_id!r}) of {state.key} must be 0 (the store assigns one) or more."
        )
    for name in _INT_FIELDS:
        value = getattr(state, name)
        if value is not None and not _I64_MIN <= value <= _I64_MAX:
            raise ValueError(
                f"{name} ({value!r}) of {state.key} must fit in a signed 64-bit integer."
            )
    for name in _FLOAT_FIELDS:
        value = getattr(state, name)
        if value is not None and math.isnan(value):
            raise ValueError(f"{name} of {state.key} is NaN; expected a number.")
    if not isinstance(state.request, dict):
        raise TypeError(
            f"request of {state.key} is a {type(state.request).__name__}; expected a dict."
        )


def _check_field_hashes(state: PageState) -> None:
    items = state.field_hashes
    if type(items) is not list or not all(
        type(hashes) is dict
        and all(type(k) is str and type(v) is int and 0 <= v < _U64 for k, v in hashes.items())
        for hashes in items
    ):
        raise TypeError(
            f"field_hashes of {state.key} must be a list of dicts of field name (str) -> "
            "unsigned 64-bit hash (int)."
        )


def check_site(site: SiteState) -> None:
    """Raise ValueError if ``site`` holds a value no backend can store faithfully."""
    if not isinstance(site.host, str):
        raise TypeError(f"host ({site.host!r}) of a site record must be a str.")
    for name in ("visits", "changes"):
        value = getattr(site, name)
        if not _I64_MIN <= value <= _I64_MAX:
            raise ValueError(
                f"{name} ({value!r}) of site {site.host!r} must fit in a signed 64-bit integer."
            )
    for name in ("p_c", "refresh_secs", "updated_at"):
        value = getattr(site, name)
        if value is not None and math.isnan(value):
            raise ValueError(f"{name} of site {site.host!r} is NaN; expected a number.")
    if not isinstance(site.checks, dict) or not all(
        isinstance(k, str) and type(v) is int and _I64_MIN <= v <= _I64_MAX
        for k, v in site.checks.items()
    ):
        raise TypeError(
            f"checks ({site.checks!r}) of site {site.host!r} must map names (str) to counts (int)."
        )


_STATUS_VALUES = frozenset(s.value for s in Status)
_PROVIDER_VALUES = frozenset(p.value for p in Provider)


def _json_key(key: object, where: str) -> str:
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, (int, float)):
        return json.dumps(key)
    raise TypeError(f"{where} key {key!r} ({type(key).__name__}) must be a str.")


def copy_json(value: Any, where: str = "request") -> Any:
    """Return a deep copy of JSON data, tuples turned into lists, as a JSON round trip would.

    Dict keys become strings the way :func:`json.dumps` turns them (``1`` -> ``"1"``,
    ``True`` -> ``"true"``), so that every backend returns the same data.

    :raises TypeError: for values JSON cannot hold (bytes, sets, objects).
    """
    if isinstance(value, dict):
        return {_json_key(k, where): copy_json(v, where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [copy_json(v, where) for v in value]
    if isinstance(value, _JSON_SCALARS):
        return value
    raise TypeError(
        f"{where} holds {value!r} ({type(value).__name__}); expected JSON data "
        "(dict with str keys, list, str, int, float, bool or None)."
    )


def log_regressions(store: object, refused: list[PageState]) -> None:
    """Warn about writes a store refused because they would move a record back
    (:func:`~scrapy_fresh.store.base.regresses`): each one is a bug in the writer."""
    for state in refused:
        logger.warning(
            "%(store)r refused an older state of %(url)s (visits %(visits)d, last crawl "
            "%(last)s): a committed visit is never overwritten",
            {"store": store, "url": state.url, "visits": state.visits, "last": state.last_crawl},
        )
