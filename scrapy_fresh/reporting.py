"""The figures of ``scrapy-fresh report``: from the visit log, the store and (optionally)
the demo site's truth. No plotting here (:mod:`scrapy_fresh.commands.report` draws).

Estimated freshness (without truth) uses the Poisson model of Cho & Garcia-Molina (seed
``clifton-web-crawling-lecture``): a page synced ``a`` seconds ago with change rate
``lam`` is fresh with probability ``exp(-lam * a)``; ``lam`` is the page's estimated
change rate in the store (:mod:`scrapy_fresh.policy.estimators`), else ``p_c`` over its
refresh time.
"""

from __future__ import annotations

import bisect
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from scrapy_fresh.store.base import PageState, SiteState, Status

__all__ = ["LATEST_CHANGES", "OUTCOMES", "SYNCS", "build_report", "load_visit_log"]

#: Changes the report lists, newest first.
LATEST_CHANGES = 50

OUTCOMES = ("new", "changed", "unchanged", "not_modified", "gone", "error", "blocked")
SYNCS = frozenset({"new", "changed", "unchanged", "not_modified"})


def load_visit_log(path: str | Path) -> tuple[list[dict[str, Any]], int]:
    """The events of a visit log (:mod:`scrapy_fresh.crawl.visitlog`) and how many lines were bad."""
    events: list[dict[str, Any]] = []
    bad = 0
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if isinstance(event, dict) and "e" in event and "t" in event:
                events.append(event)
            else:
                bad += 1
    events.sort(key=lambda e: e["t"])
    return events, bad


def _latest_changes(events: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The latest changes of the log (as the change feed gives them), newest first, with
    what the log kept of their items (previous values, diffs)."""
    from scrapy_fresh.changes.feed import change_event, kind_of

    out: list[dict[str, Any]] = []
    for e in reversed(events):
        kind = kind_of(e)
        if kind is None:
            continue
        event = change_event(
            kind, float(e["t"]), str(e.get("url")), str(e.get("key")), str(e.get("host", "")),
            e.get("fields") or (), e.get("last_crawl"),
        )  # fmt: skip
        event["items"] = e.get("items") or []
        out.append(event)
        if len(out) >= limit:
            break
    return out


def _runs(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    runs: dict[str, dict[str, Any]] = {}
    for e in events:
        run = runs.setdefault(
            e["run"],
            {
                "run": e["run"],
                "spider": None,
                "start": e["t"],
                "end": e["t"],
                "outcomes": dict.fromkeys(OUTCOMES, 0),
                "requests": 0,
                "bytes": 0,
                "plain_bytes": 0,
            },
        )
        run["start"] = min(run["start"], e["t"])
        run["end"] = max(run["end"], e["t"])
        if e["e"] == "run" and e.get("phase") == "open":
            run["spider"] = e.get("spider")
        elif e["e"] == "visit" and e.get("outcome") in run["outcomes"]:
            run["outcomes"][e["outcome"]] += 1
        elif e["e"] == "fetch":
            run["requests"] += 1
            run["bytes"] += int(e.get("bytes") or 0)
    return sorted(runs.values(), key=lambda r: r["start"])


def _plain_estimate(events: list[dict[str, Any]], runs: list[dict[str, Any]]) -> None:
    """Bytes a plain re-crawl would have spent per run: every page the run's spider has
    ever reached (and not found gone), at its last full size, plus the same robots.txt."""
    run_spider = {r["run"]: r["spider"] for r in runs}
    size: dict[str, int] = {}
    known: dict[Any, set[str]] = defaultdict(set)
    gone: set[str] = set()
    robots: dict[str, int] = {}
    for e in events:
        if e["e"] == "fetch" and e.get("status") == 200 and e.get("method") == "GET":
            if str(e["url"]).endswith("/robots.txt"):
                robots[e["run"]] = int(e["bytes"])
            else:
                size[e["url"]] = int(e["bytes"])
        elif e["e"] == "visit":
            known[run_spider.get(e["run"])].add(e["url"])
            if e.get("outcome") == "gone" or e.get("status") == "gone":
                gone.add(e["url"])
            else:
                gone.discard(e["url"])
        elif e["e"] == "run" and e.get("phase") == "close":
            run = next((r for r in runs if r["run"] == e["run"]), None)
            if run is not None:
                pages = known[run["spider"]] - gone
                run["plain_bytes"] = sum(size.get(u, 0) for u in pages) + robots.get(e["run"], 0)


def _estimated_freshness(
    events: list[dict[str, Any]],
    states: Mapping[str, PageState],
    start: float,
    end: float,
    samples: int = 200,
) -> list[list[float]]:
    syncs: dict[str, list[float]] = defaultdict(list)
    for e in events:
        if e["e"] == "visit" and e.get("outcome") in SYNCS:
            syncs[e["url"]].append(float(e["t"]))
    rates: dict[str, float] = {}
    for url in syncs:
        s = states.get(url)
        if s is None or s.status is Status.GONE:
            continue
        if s.change_rate is not None:
            rates[url] = s.change_rate
        else:
            rates[url] = s.p_c / s.refresh_secs if s.refresh_secs > 0 else 0.0
    series = []
    for k in range(samples):
        t = start + (end - start) * (k + 0.5) / samples
        values = []
        for url, lam in rates.items():
            i = bisect.bisect_right(syncs[url], t)
            values.append(0.0 if i == 0 else math.exp(-lam * (t - syncs[url][i - 1])))
        if values:
            series.append([t, sum(values) / len(values)])
    return series


def build_report(
    events: list[dict[str, Any]],
    states: Iterable[PageState],
    sites: Iterable[SiteState],
) -> dict[str, Any]:
    """Every figure of the report as JSON data (the plots draw from it too); the demo
    site's true figures are added by :func:`scrapy_fresh.demo.truth.truth_figures`."""

    by_url = {s.url: s for s in states}
    runs = _runs(events)
    _plain_estimate(events, runs)
    outcomes = Counter(e["outcome"] for e in events if e["e"] == "visit")
    fetches = [e for e in events if e["e"] == "fetch"]
    status_counts = Counter(str(e["status"]) for e in fetches)
    total_bytes = sum(int(e.get("bytes") or 0) for e in fetches)
    plain = sum(r["plain_bytes"] for r in runs)
    start = min((e["t"] for e in events), default=0.0)
    end = max((e["t"] for e in events), default=0.0)
    pages = [
        {
            "url": s.url,
            "host": s.host,
            "provider": s.provider.value,
            "status": s.status.value,
            "visits": s.visits,
            "changes": s.changes,
            "p_c": s.p_c,
            "refresh_secs": s.refresh_secs,
            "change_rate": s.change_rate,
        }
        for s in by_url.values()
    ]
    data: dict[str, Any] = {
        "start": start,
        "end": end,
        "runs": runs,
        "visits": sum(outcomes.values()),
        "outcomes": {o: outcomes.get(o, 0) for o in OUTCOMES},
        "requests": len(fetches),
        "requests_by_status": dict(sorted(status_counts.items())),
        "bytes": total_bytes,
        "plain_bytes_estimate": plain,
        "bytes_saved_share": 1 - total_bytes / plain if plain else None,
        "bytes_per_change": total_bytes / outcomes["changed"] if outcomes.get("changed") else None,
        "pages": pages,
        "sites": [
            {
                "host": s.host,
                "p_c": s.p_c,
                "visits": s.visits,
                "changes": s.changes,
                "refresh_secs": s.refresh_secs,
            }
            for s in sites
        ],
        "changes": _latest_changes(events, LATEST_CHANGES),
        "gone": sorted(
            (
                {"url": s.url, "host": s.host, "last_seen": s.last_crawl}
                for s in by_url.values()
                if s.status is Status.GONE
            ),
            key=lambda g: g["url"],
        ),
        "estimated_freshness": _estimated_freshness(events, by_url, start, end)
        if end > start
        else [],
        "truth": None,
    }
    return data
