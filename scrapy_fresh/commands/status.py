"""``scrapy-fresh status``: what the store holds, in numbers."""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from scrapy_fresh.commands._control import add_target_store_arguments, read_stores
from scrapy_fresh.monitoring import StoreSnapshot, render
from scrapy_fresh.policy.schedule import ScheduleRules
from scrapy_fresh.store.base import DUE_STATUSES, PageState, Provider, Status

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy_fresh.providers.ledger import HostTrust

HELP = "Show the store: pages per status and provider, what is due, p_c, refresh times, hosts."

#: Upper bounds (exclusive) of the p_c histogram bins; the last bin is [0.9, 1.0].
PC_BINS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, math.inf)
#: Refresh-time bins: (label, upper bound in seconds, exclusive).
REFRESH_BINS = (
    ("<10m", 600.0),
    ("10m-1h", 3600.0),
    ("1h-6h", 6 * 3600.0),
    ("6h-1d", 86400.0),
    ("1d-7d", 7 * 86400.0),
    (">=7d", math.inf),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument(
        "--now",
        type=float,
        default=None,
        help="Unix time to count due pages against (default: now)",
    )
    parser.add_argument("--top", type=int, default=10, help="hosts to list (default 10)")
    parser.add_argument(
        "--prometheus",
        action="store_true",
        help="print the store's numbers in Prometheus's text format (for node_exporter's "
        "textfile collector); needs prometheus-client",
    )
    add_target_store_arguments(parser)


def _quantiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"min": None, "median": None, "p90": None, "max": None}
    values = sorted(values)

    def q(p: float) -> float:
        return values[min(len(values) - 1, int(p * len(values)))]

    return {"min": values[0], "median": q(0.5), "p90": q(0.9), "max": values[-1]}


def summarize(
    states: list[PageState], sites: dict[str, Any], now: float, top: int = 10,
    trust: Iterable[HostTrust] = (),
) -> dict[str, Any]:  # fmt: skip
    """The status figures of ``states`` at ``now`` (JSON data)."""
    by_status = Counter(s.status.value for s in states)
    by_provider: dict[str, dict[str, int]] = {p.value: {} for p in Provider}
    for s in states:
        cell = by_provider[s.provider.value]
        cell[s.status.value] = cell.get(s.status.value, 0) + 1
    waiting = [s for s in states if s.status in DUE_STATUSES]
    due = {
        "now": sum(s.next_due <= now for s in waiting),
        "next_hour": sum(now < s.next_due <= now + 3600 for s in waiting),
        "later": sum(s.next_due > now + 3600 for s in waiting),
        "in_flight": by_status.get(Status.IN_FLIGHT.value, 0),
    }
    visited = [s for s in states if s.last_crawl is not None and s.status is not Status.GONE]
    pc_hist = [0] * len(PC_BINS)
    for s in visited:
        pc_hist[next(i for i, hi in enumerate(PC_BINS) if s.p_c < hi)] += 1
    refresh_hist = dict.fromkeys((label for label, _ in REFRESH_BINS), 0)
    for s in visited:
        label = next(label for label, hi in REFRESH_BINS if s.refresh_secs < hi)
        refresh_hist[label] += 1
    hosts: dict[str, dict[str, Any]] = {}
    for s in states:
        h = hosts.setdefault(s.host, {"host": s.host, "pages": 0, "visits": 0, "changes": 0})
        h["pages"] += 1
        h["visits"] += s.visits
        h["changes"] += s.changes
    for h in hosts.values():
        site = sites.get(h["host"])
        h["p_c"] = site.p_c if site is not None else None
        h["refresh_secs"] = site.refresh_secs if site is not None else None
    top_hosts = sorted(hosts.values(), key=lambda h: (-h["pages"], h["host"]))[:top]
    return {
        "now": now,
        "pages": len(states),
        "hosts": len(hosts),
        "status": {st.value: by_status.get(st.value, 0) for st in Status},
        "provider": by_provider,
        "due": due,
        "p_c": {
            "bins": [f"<{hi:g}" if math.isfinite(hi) else "<=1" for hi in PC_BINS],
            "counts": pc_hist,
            **_quantiles([s.p_c for s in visited]),
        },
        "refresh_secs": {"bins": refresh_hist, **_quantiles([s.refresh_secs for s in visited])},
        "top_hosts": top_hosts,
        "trust": trust_rows(trust),
    }


def rule_rows(rules: ScheduleRules, states: list[PageState]) -> list[dict[str, Any]]:
    """Per schedule rule (:setting:`FRESH_SCHEDULE_RULES`): what it says, and the pages
    it applies to (the first rule that matches a page is its rule)."""
    pages = [0] * len(rules.rules)
    for s in states:
        for i, rule in enumerate(rules.rules):
            if rule.matches(s.url, s.host):
                pages[i] += 1
                break
    return [
        {"rule": i, "says": rule.describe(), "pages": pages[i]}
        for i, rule in enumerate(rules.rules)
    ]


def trust_rows(trust: Iterable[HostTrust]) -> list[dict[str, Any]]:
    """Per host and signal kind: the trust score, the evidence, and whether it is demoted
    (:mod:`scrapy_fresh.policy.trust`; least trusted first)."""
    from scrapy_fresh.policy.trust import trust_score

    rows = []
    for entry in trust:
        record = entry.record
        rows.append(
            {
                "host": entry.host,
                "signal": entry.kind,
                "trust": round(trust_score(record), 3),
                "confirmed": record.confirmed,
                "refuted": record.refuted,
                "demoted": record.demoted,
            }
        )
    return sorted(rows, key=lambda r: (r["trust"], r["host"], r["signal"]))


def _duration(secs: float | None) -> str:
    if secs is None:
        return "-"
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if secs >= size:
            return f"{secs / size:.1f}{unit}"
    return f"{secs:.0f}s"


def render_text(data: dict[str, Any], store: str) -> str:
    lines = [f"Store: {store}", f"Pages: {data['pages']} on {data['hosts']} hosts"]
    lines.append("Status: " + ", ".join(f"{k} {v}" for k, v in data["status"].items()))
    lines.append("Provider:")
    for provider, cells in data["provider"].items():
        total = sum(cells.values())
        detail = ", ".join(f"{k} {v}" for k, v in sorted(cells.items()))
        lines.append(f"  {provider:<7} {total:>6}" + (f"  ({detail})" if detail else ""))
    due = data["due"]
    lines.append(
        f"Due: now {due['now']}, next hour {due['next_hour']}, later {due['later']}"
        f" (in flight {due['in_flight']})"
    )
    pc = data["p_c"]
    hist = ", ".join(f"{b} {c}" for b, c in zip(pc["bins"], pc["counts"], strict=True) if c)
    median = "-" if pc["median"] is None else f"{pc['median']:.2f}"
    lines.append(f"p_c (visited pages): median {median}; {hist or 'none yet'}")
    rs = data["refresh_secs"]
    hist = ", ".join(f"{b} {c}" for b, c in rs["bins"].items() if c)
    lines.append(
        f"Refresh time: median {_duration(rs['median'])}, min {_duration(rs['min'])}, "
        f"max {_duration(rs['max'])}; {hist or 'none yet'}"
    )
    lines.append("Top hosts:")
    for h in data["top_hosts"]:
        p_c = "-" if h["p_c"] is None else f"{h['p_c']:.2f}"
        lines.append(
            f"  {h['host']:<30} {h['pages']:>6} pages {h['visits']:>7} visits "
            f"{h['changes']:>6} changes  p_c {p_c}  refresh {_duration(h['refresh_secs'])}"
        )
    if data.get("rules"):
        lines.append("Schedule rules (FRESH_SCHEDULE_RULES; the first that matches applies):")
        lines.extend(f"  [{r['rule']}] {r['says']}: {r['pages']} pages" for r in data["rules"])
    if data.get("blocked"):
        lines.append("Blocked hosts (scrapy-fresh unblock --host HOST lets them go):")
        for host, since in sorted(data["blocked"].items()):
            when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(since))
            lines.append(f"  {host:<30} since {when}")
    if data["trust"]:
        lines.append("Provider signal trust (least trusted first):")
        for t in data["trust"]:
            flag = "  DEMOTED" if t["demoted"] else ""
            lines.append(
                f"  {t['host']:<30} {t['signal']:<10} trust {t['trust']:.2f} "
                f"({t['confirmed']:g} confirmed, {t['refuted']:g} refuted){flag}"
            )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    read = read_stores(args)
    states = read.states
    sites = {site.host: site for site in read.sites}
    now = time.time() if args.now is None else args.now
    if args.prometheus:
        snapshot = StoreSnapshot.of_states(states, now, len(read.blocked))
        print(render(snapshot.samples()), end="")
        return 0
    data = summarize(states, sites, now, args.top, read.trust)
    data["rules"] = rule_rows(read.config.schedule_rules, states)
    data["blocked"] = read.blocked
    if args.json:
        print(json.dumps({"store": read.description, **data}, indent=2))
    else:
        print(render_text(data, read.description))
    return 0
