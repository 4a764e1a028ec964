"""True freshness, age and detected changes of a crawled copy, from the demo site's truth.

Input is what ``/_demo/truth`` returns (:meth:`~scrapy_fresh.demo.model.DemoSite.truth`):
every true change time per page and every request served. The crawler's copy of a page
is *synced* at time ``s`` by a ``GET`` answered 200 (the body of that moment) or by a
``304`` (the copy was confirmed). Following Cho & Garcia-Molina's definitions (seed
``clifton-web-crawling-lecture``, freshness and age), the copy is *fresh* at ``t`` if it
was synced at some ``s <= t`` and the page did not change in ``(s, t]``; its *age* is
``t`` minus the first change after the last sync (0 when fresh). A page never synced
counts as stale, with an age counted from the start of the window.

A *detected change* is a ``GET`` answered 200 after at least one true change since the
page's previous sync: the crawl brought a changed page in (several changes between two
syncs are detected once).
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from scrapy_fresh.reporting import SYNCS

__all__ = ["CopyStats", "copy_stats", "syncs", "tracked_pages", "truth_figures"]

Truth = Mapping[str, Any]


def tracked_pages(truth: Truth) -> list[str]:
    """The pages a crawler should keep fresh: every page that ever existed in the window."""
    start = truth["history_start"]
    return sorted(
        path
        for path, page in truth["pages"].items()
        if page["gone_after"] is None or page["gone_after"] > start
    )


def syncs(requests: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Sync times per path: GETs answered 200 or 304, in time order."""
    out: dict[str, list[float]] = {}
    for r in requests:
        if r["method"] == "GET" and r["status"] in (200, 304):
            out.setdefault(r["path"], []).append(float(r["t"]))
    for times in out.values():
        times.sort()
    return out


def _live(page: Mapping[str, Any], t: float) -> bool:
    return page["gone_after"] is None or t < page["gone_after"]


def _state(changes: list[float], synced: list[float], t: float, t0: float) -> tuple[bool, float]:
    """(fresh, age) of one page's copy at ``t``."""
    i = bisect.bisect_right(synced, t)
    if i == 0:
        return False, t - t0
    last = synced[i - 1]
    j = bisect.bisect_right(changes, last)
    if j < len(changes) and changes[j] <= t:
        return False, t - changes[j]
    return True, 0.0


@dataclass(frozen=True)
class CopyStats:
    """What one crawler's requests achieved against the truth, over a window."""

    #: Time-averaged share of live pages whose copy is fresh (0..1).
    freshness: float
    #: Time-averaged mean age of the copies, in seconds.
    age_secs: float
    #: GETs answered 200 that brought in a truly changed page.
    detected_changes: int
    #: True changes that happened in the window (on tracked pages).
    true_changes: int
    requests: int
    bytes: int
    #: Requests and bytes per status code (as strings, for JSON).
    by_status: dict[str, int]
    bytes_by_status: dict[str, int]
    #: (time, fresh share, mean age) samples.
    series: list[tuple[float, float, float]]

    @property
    def bytes_per_detected_change(self) -> float:
        return self.bytes / self.detected_changes if self.detected_changes else float("inf")

    @property
    def requests_per_detected_change(self) -> float:
        return self.requests / self.detected_changes if self.detected_changes else float("inf")


def copy_stats(
    truth: Truth,
    *,
    start: float,
    end: float,
    keep: Callable[[Mapping[str, Any]], bool] | None = None,
    paths: Iterable[str] | None = None,
    samples: int = 400,
) -> CopyStats:
    """Freshness, age, detected changes, requests and bytes of the requests ``keep``
    selects (all by default), over ``[start, end]`` of simulated time, for the tracked
    pages (:func:`tracked_pages`, or those of them in ``paths``).

    Freshness and age are averaged over ``samples`` evenly spaced times; requests and
    bytes count every selected request (whatever its time), detections those in the
    window.
    """
    if not end > start:
        raise ValueError(f"end ({end!r}) must be after start ({start!r}).")
    requests = [r for r in truth["requests"] if keep is None or keep(r)]
    synced = syncs(requests)
    wanted = None if paths is None else set(paths)
    pages = {p: truth["pages"][p] for p in tracked_pages(truth) if wanted is None or p in wanted}
    full = {
        (r["path"], float(r["t"])) for r in requests if r["method"] == "GET" and r["status"] == 200
    }
    detected = 0
    for path, times in synced.items():
        if path not in pages:
            continue
        changes = pages[path]["changes"]
        for prev, cur in itertools.pairwise(times):
            if (
                (path, cur) in full
                and start <= cur <= end
                and (bisect.bisect_right(changes, cur) > bisect.bisect_right(changes, prev))
            ):
                detected += 1
    true_changes = sum(
        bisect.bisect_right(p["changes"], end) - bisect.bisect_right(p["changes"], start)
        for p in pages.values()
    )
    series = []
    for k in range(samples):
        t = start + (end - start) * (k + 0.5) / samples
        live = [(path, page) for path, page in pages.items() if _live(page, t)]
        if not live:
            continue
        states = [_state(page["changes"], synced.get(path, []), t, start) for path, page in live]
        series.append(
            (t, sum(f for f, _ in states) / len(states), sum(a for _, a in states) / len(states))
        )
    by_status: dict[str, int] = {}
    bytes_by_status: dict[str, int] = {}
    for r in requests:
        key = str(r["status"])
        by_status[key] = by_status.get(key, 0) + 1
        bytes_by_status[key] = bytes_by_status.get(key, 0) + int(r["bytes"])
    n = len(series) or 1
    return CopyStats(
        freshness=sum(s[1] for s in series) / n,
        age_secs=sum(s[2] for s in series) / n,
        detected_changes=detected,
        true_changes=true_changes,
        requests=len(requests),
        bytes=sum(int(r["bytes"]) for r in requests),
        by_status=by_status,
        bytes_by_status=bytes_by_status,
        series=series,
    )


def truth_figures(
    events: list[dict[str, Any]], data: dict[str, Any], truth: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The demo site's true figures for a report's ``data``
    (:func:`~scrapy_fresh.reporting.build_report`) of the visit log ``events``: the
    copy's true freshness and age, detected against true changes, and how the verdicts
    compare with the truth. Adds each page's ``true_rate`` to ``data["pages"]``. None if
    the log covers no time."""
    times = [e["t"] for e in events]
    start, end = min(times, default=0.0), max(times, default=0.0)
    if not end > start:
        return None
    stats = copy_stats(truth, start=start, end=min(end, float(truth["now"])))
    rates = {path: page["rate"] for path, page in truth["pages"].items()}
    for page in data["pages"]:
        page["true_rate"] = rates.get(urlsplit(str(page["url"])).path)
    return {
        "freshness": stats.freshness,
        "age_secs": stats.age_secs,
        "detected_changes": stats.detected_changes,
        "true_changes": stats.true_changes,
        "requests": stats.requests,
        "bytes": stats.bytes,
        "requests_by_status": stats.by_status,
        "bytes_per_detected_change": stats.bytes / stats.detected_changes
        if stats.detected_changes
        else None,
        "series": [list(s) for s in stats.series],
        "judgements": _judgements(events, truth),
    }


def _judgements(events: list[dict[str, Any]], truth: Mapping[str, Any]) -> dict[str, int]:
    """How the crawl's changed/unchanged verdicts compare with the truth, per visit."""
    pages = truth["pages"]
    last_sync: dict[str, float] = {}
    counts = {"true_changed": 0, "false_changed": 0, "missed_change": 0, "true_unchanged": 0}
    requests = sorted(truth["requests"], key=lambda r: r["t"])
    served = defaultdict(list)
    for r in requests:
        if r["method"] == "GET" and r["status"] in (200, 304):
            served[r["path"]].append(float(r["t"]))
    seen: Counter[str] = Counter()
    for e in events:
        if e["e"] != "visit" or e.get("outcome") not in SYNCS:
            continue
        path = urlsplit(e["url"]).path
        page = pages.get(path)
        times = served.get(path, [])
        # The n-th verdict on a page is about the n-th body (or 304) the site served it
        # (matched by order: the two clocks may differ by a little).
        n = seen[path]
        seen[path] += 1
        if page is None or n >= len(times):
            continue
        synced_at = times[n]
        prev = last_sync.get(path)
        last_sync[path] = synced_at
        if prev is None or e["outcome"] == "new":
            continue
        changes = page["changes"]
        truly = bisect.bisect_right(changes, synced_at) > bisect.bisect_right(changes, prev)
        said = e["outcome"] == "changed"
        key = (
            ("true_changed" if said else "missed_change")
            if truly
            else ("false_changed" if said else "true_unchanged")
        )
        counts[key] += 1
    return counts
