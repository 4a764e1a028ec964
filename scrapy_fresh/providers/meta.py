"""What a spider says about a page's updates in its meta: ``fresh_updates`` (past update
times it extracted) and ``fresh_schedule`` (announced ones, with a probability).

Times are Unix seconds or W3C date strings; each bad entry is skipped and counted
(``bad_meta``), the others are kept. Pure: no clock (``now`` is an argument).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from scrapy_fresh.dates import parse_w3c
from scrapy_fresh.providers.signals import AnnouncedUpdate, ParseReport, PastUpdate, Signals

__all__ = ["FUTURE_SLACK_SECS", "declared_update", "has_meta_signals", "meta_signals", "meta_time"]

#: A past update may lie this far after ``now`` (clock skew) before it is refused.
FUTURE_SLACK_SECS = 3600.0


def meta_time(value: Any) -> float | None:
    """A Unix time from a number or a W3C date string; None for anything else.

    >>> meta_time(100), meta_time("2024-01-01T00:00:00Z"), meta_time(True), meta_time("x")
    (100.0, 1704067200.0, None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
        return number if math.isfinite(number) and abs(number) < 1e11 else None
    if isinstance(value, str):
        return parse_w3c(value)
    return None


def _entries(value: Any) -> Iterable[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        return [value]
    return value


def has_meta_signals(meta: Mapping[str, Any]) -> bool:
    """Whether ``meta`` holds anything :func:`meta_signals` reads: without, it finds and
    skips nothing (a key set to None is read as absent).

    >>> has_meta_signals({"fresh_updates": []}), has_meta_signals({"fresh_schedule": None})
    (True, False)
    """
    return meta.get("fresh_updates") is not None or meta.get("fresh_schedule") is not None


def meta_signals(meta: Mapping[str, Any], url: str, now: float, report: ParseReport) -> Signals:
    """Signals a spider put in ``meta["fresh_updates"]`` and ``meta["fresh_schedule"]``.

    >>> r = ParseReport()
    >>> s = meta_signals({"fresh_updates": [100, "bad"], "fresh_schedule": [[200, 0.5],
    ...                   [300, 7]]}, "http://a/", 150.0, r)
    >>> [p.when for p in s.past], [(a.when, a.probability) for a in s.announced], r.skipped
    ([100.0], [(200.0, 0.5)], {'bad_meta': 2})
    """
    signals = Signals(report=report)
    updates = meta.get("fresh_updates")
    if updates is not None:
        for raw in _entries(updates):
            when = meta_time(raw)
            if when is None or when > now + FUTURE_SLACK_SECS:
                report.skip("bad_meta")
            else:
                signals.past.append(PastUpdate(url, when, "spider"))
    schedule = meta.get("fresh_schedule")
    if schedule is not None:
        for entry in _entries(schedule):
            try:
                raw_t, raw_p = entry
            except (TypeError, ValueError):
                report.skip("bad_meta")
                continue
            when = meta_time(raw_t)
            prob = meta_time(raw_p)
            if when is None or prob is None or not 0.0 <= prob <= 1.0:
                report.skip("bad_meta")
            elif when > now:
                signals.announced.append(AnnouncedUpdate(url, when, prob, "spider"))
    return signals


def declared_update(meta: Mapping[str, Any], since: float, now: float) -> bool:
    """Whether ``meta["fresh_updates"]`` declares an update in ``(since, now]`` (with the
    clock-skew slack): the spider says the page changed since its previous visit.

    >>> declared_update({"fresh_updates": [50, "2024-01-01T00:00:00Z"]}, 40.0, 60.0)
    True
    >>> declared_update({"fresh_updates": 30}, 40.0, 60.0), declared_update({}, 40.0, 60.0)
    (False, False)
    """
    updates = meta.get("fresh_updates")
    if updates is None:
        return False
    for raw in _entries(updates):
        when = meta_time(raw)
        if when is not None and since < when <= now + FUTURE_SLACK_SECS:
            return True
    return False
