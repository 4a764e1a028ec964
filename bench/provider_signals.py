"""Benchmark: provider signals read, autodetected and trusted (issue 5, "Measured").

Replays the shared change traces (``../shared/data/traces/``; nothing is copied into the
project) under the ``fresh`` policy with a publisher per host
(:mod:`scrapy_fresh.simulator.publishers`) whose signals go through the crawl's own
:class:`~scrapy_fresh.providers.tracker.SignalTracker`. Same trace, budget and seed for
every row:

* ``normal``: no provider speaks (reference);
* ``hand``: honest publishers, each page's level fixed by hand (``meta["fresh_provider"]``);
* ``auto``: honest publishers, levels autodetected (:setting:`FRESH_PROVIDER_AUTODETECT`);
* ``liars, no trust``: a share of the hosts lie (``--liar-share``, 0.3), autodetected,
  every claim believed (``FRESH_TRUST = False``);
* ``liars, trust``: the same with trust (the defaults);
* ``liars ignored``: the lying hosts say nothing at all: their pages are normal from the
  start. What perfect lie detection would give: the bound for ``liars, trust``.

Goals: ``auto`` >= ``hand`` at every budget; ``liars, trust`` >= 0.95x ``auto`` (the
all-honest case). Pages publish by level: ``--smart-share`` and ``--super-share`` (0.5
each: every page's provider publishes), super precision ``--precision`` (1.0).

Traces: rss2023 filtered as in ``bench/simulate.py`` (feeds with >= 52 changes over >= 30
days), its last ``--rss-days`` (61, as Xu et al.'s two months), hourly crawl cycles; peps
(every page is its own host), its last ``--peps-years`` (5), daily crawl cycles (slow
pages; a liar restamps every page at every read, so hourly reads over years would take
hours).

Usage::

    python bench/provider_signals.py                      # both traces (about 20 min)
    python bench/provider_signals.py --traces rss2023 --budgets 1

Prints markdown tables and PASS/MISS lines on stdout.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from scrapy_fresh.simulator import ProviderMix, SimConfig, load_trace, run
from scrapy_fresh.simulator.engine import Context, Result
from scrapy_fresh.simulator.signalled import SignalledFresh
from scrapy_fresh.simulator.trace import DAY, Trace

TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"


class LiarsIgnored(SignalledFresh):
    """The lying hosts' documents are never read: perfect lie detection."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.readers = [h for h in self.readers if h not in self.publishers.liars]


@dataclass(frozen=True)
class Row:
    name: str
    signals: str = "off"
    autodetect: bool = False
    trust: bool = True
    ignore_liars: bool = False


ROWS = (
    Row("normal"),
    Row("hand", "honest"),
    Row("auto", "honest", autodetect=True),
    Row("liars, no trust", "lying", autodetect=True, trust=False),
    Row("liars, trust", "lying", autodetect=True),
    Row("liars ignored", "lying", autodetect=True, ignore_liars=True),
)


def replay(
    trace: Trace, row: Row, budget: float, step: float, args: argparse.Namespace
) -> tuple[Result, object]:
    shares = (
        {}
        if row.signals == "off"
        else {
            "smart_share": args.smart_share,
            "super_share": args.super_share,
            "precision": args.precision,
            "signals": row.signals,
            "liar_share": args.liar_share,
            "autodetect": row.autodetect,
            "trust": row.trust,
        }
    )
    config = SimConfig(
        budget=budget, step_secs=step, seed=args.seed, providers=ProviderMix(**shares)
    )
    seen: dict[str, object] = {}

    def factory(ctx: Context) -> SignalledFresh | object:
        from scrapy_fresh.simulator.policies import POLICIES

        policy = LiarsIgnored(ctx) if row.ignore_liars else POLICIES["fresh"](ctx)
        seen["policy"] = policy
        return policy

    result = run(trace, "fresh", config, factories={"fresh": factory})  # type: ignore[dict-item]
    return result, seen["policy"]


def measure_trace(
    label: str, trace: Trace, budgets: list[float], step: float, args: argparse.Namespace
) -> bool:
    print(
        f"## {label}: {len(trace)} pages, {trace.n_changes} changes, "
        f"{trace.span / DAY:.0f} days, crawl cycle {step / 3600:g} h\n"
    )
    table: list[dict[str, str]] = []
    ok = True
    notes: list[str] = []
    for budget in budgets:
        got: dict[str, tuple[float, float]] = {}
        for row in ROWS:
            began = time.perf_counter()
            result, policy = replay(trace, row, budget, step, args)
            m = result.metrics
            got[row.name] = (m.freshness, m.p_fresh)
            extra = ""
            if isinstance(policy, SignalledFresh) and row.signals == "lying":
                liars, honest = policy.demoted_hosts()
                pubs = policy.publishers
                extra = (
                    f" liar hosts {len(pubs.liars)}/{len(pubs.hosts)} "
                    f"({pubs.lying_pages()} pages); demoted at the end: "
                    f"{len(liars)} liars, {len(honest)} honest hosts"
                )
                if row.trust and not row.ignore_liars and budget == budgets[0]:
                    notes.append(extra.strip())
            print(
                f"  {label} budget {budget:g} {row.name}: {m.freshness:.3f} "
                f"({time.perf_counter() - began:.0f} s){extra}",
                file=sys.stderr,
                flush=True,
            )
        hand, auto = got["hand"][0], got["auto"][0]
        trusted, untrusted = got["liars, trust"][0], got["liars, no trust"][0]
        bound = got["liars ignored"][0]
        cells = {"budget": f"{budget:g}"}
        for row in ROWS:
            cells[row.name] = f"{got[row.name][0]:.3f} / {got[row.name][1]:.3f}"
        cells["auto / hand"] = f"{auto / hand:.3f}"
        cells["no trust / auto"] = f"{untrusted / auto:.3f}"
        cells["trust / auto"] = f"{trusted / auto:.3f}"
        cells["trust / ignored"] = f"{trusted / bound:.3f}"
        table.append(cells)
        ok &= auto >= hand and trusted >= 0.95 * auto
    columns = list(table[0])
    print("freshness / P_fresh per row\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "|".join("---" for _ in columns) + "|")
    for cells in table:
        print("| " + " | ".join(cells[c] for c in columns) + " |")
    print()
    for note in notes:
        print(f"liars: {note}")
    worst_auto = min(float(c["auto / hand"]) for c in table)
    worst_trust = min(float(c["trust / auto"]) for c in table)
    print()
    print(
        f"{'PASS' if worst_auto >= 1.0 else 'MISS'}: {label}: auto >= hand at every budget "
        f"(worst auto / hand {worst_auto:.3f})"
    )
    print(
        f"{'PASS' if worst_trust >= 0.95 else 'MISS'}: {label}: liars with trust >= 0.95x "
        f"all-honest (worst {worst_trust:.3f})\n"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", default="rss2023,peps")
    parser.add_argument("--budgets", default="0.5,1,2,4", help="rss2023 fetches/page/day")
    parser.add_argument("--peps-budgets", default="0.05,0.1", help="peps fetches/page/day")
    parser.add_argument("--rss-days", type=float, default=61.0)
    parser.add_argument("--peps-years", type=float, default=5.0)
    parser.add_argument("--smart-share", type=float, default=0.5)
    parser.add_argument("--super-share", type=float, default=0.5)
    parser.add_argument("--precision", type=float, default=1.0)
    parser.add_argument("--liar-share", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(
        f"python {platform.python_version()} on {platform.machine()}, {platform.system()}; "
        f"smart {args.smart_share:g}, super {args.super_share:g} (precision "
        f"{args.precision:g}), liars {args.liar_share:g} of the hosts, seed {args.seed}\n"
    )
    traces = set(args.traces.split(","))
    if "rss2023" in traces:
        rss = load_trace(TRACES / "rss2023.csv.gz").filtered(52, 30)
        rss = rss.window(max(rss.start, rss.end - args.rss_days * DAY), rss.end)
        budgets = [float(b) for b in args.budgets.split(",")]
        measure_trace(f"rss2023 filtered, last {args.rss_days:g} days", rss, budgets, 3600.0, args)
    if "peps" in traces:
        peps = load_trace(TRACES / "peps.csv.gz")
        peps = peps.window(max(peps.start, peps.end - args.peps_years * 365 * DAY), peps.end)
        budgets = [float(b) for b in args.peps_budgets.split(",")]
        measure_trace(f"peps, last {args.peps_years:g} years", peps, budgets, DAY, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
