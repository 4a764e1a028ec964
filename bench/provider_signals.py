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
  every claim believed (``FRESH_TRUST = False``); a lying sitemap stamps every page with
  the time it is read (``--lie-stamp now``) or with today's date (``day``);
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

With ``--lie quiet`` the liars lie about when their pages are *quiet* instead
(:mod:`scrapy_fresh.simulator.publishers`): every answer of theirs says ``max-age`` of a
week while the pages keep changing, their super pages announce a yearly schedule, and they
publish no sitemap; honest super pages then also say they are quiet until just before
their next change. These claims keep pages from being fetched, so they matter most when
due times decide what is fetched: ``--no-fill`` fetches due pages only (no
:setting:`FRESH_CYCLE_FILL`, as a crawl without a budget does), where with the fill a
budget left over goes to the pages not due yet, best score first, whatever their claims.

With ``--seeds`` (``0-4`` or ``0,3,7``) only the rows the trust goal needs run (``auto``,
``liars, trust``, ``liars ignored``), once per seed: the seed draws the levels, the
announcements and which hosts lie, and on rss2023, where one host (YouTube) holds a
third of the feeds, the share of *pages* that lie swings with it. The output is a
per-seed table with that share, then the mean, min and max over the seeds of ``trust /
auto`` and ``ignored / auto`` per budget, and the seeds where even perfect detection
(``liars ignored``) is below 0.95x ``auto``.

Usage::

    python bench/provider_signals.py                      # both traces (about 20 min)
    python bench/provider_signals.py --traces rss2023 --budgets 1
    python bench/provider_signals.py --seeds 0-5          # the distribution (about 35 min)
    python bench/provider_signals.py --traces rss2023 --budgets 1 --lie-stamp day
    python bench/provider_signals.py --lie quiet --no-fill   # quiet lies (about 10 min)

Prints markdown tables and PASS/MISS lines on stdout.
"""

from __future__ import annotations

import argparse
import logging
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from scrapy_fresh.frontier.scoring import ScoreParams
from scrapy_fresh.providers.signals import Signals
from scrapy_fresh.simulator import ProviderMix, SimConfig, load_trace, run
from scrapy_fresh.simulator.engine import Context, Result
from scrapy_fresh.simulator.publishers import LIE_STAMPS, LIES
from scrapy_fresh.simulator.signalled import SignalledFresh
from scrapy_fresh.simulator.trace import DAY, Trace

TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"


class LiarsIgnored(SignalledFresh):
    """The lying hosts' documents are never read: perfect lie detection."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.readers = [h for h in self.readers if h not in self.publishers.liars]

    def own_signals(self, url: str, now: float) -> Signals:
        if self.publishers.host_of.get(url) in self.publishers.liars:
            return Signals()  # nor are their pages' own claims
        return super().own_signals(url, now)


def policy_class(row: Row, args: argparse.Namespace) -> type[SignalledFresh]:
    """The replayed policy of a row with publishers: what the liars lie about
    (``--lie``), what a lying sitemap stamps (``--lie-stamp``), and whether the liars'
    documents are read at all."""
    base = LiarsIgnored if row.ignore_liars else SignalledFresh
    attrs = {"lie": args.lie, "lie_stamp": args.lie_stamp}
    return type(base.__name__, (base,), attrs)


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


SEED_ROWS = tuple(r for r in ROWS if r.name in ("auto", "liars, trust", "liars ignored"))


def replay(
    trace: Trace,
    row: Row,
    budget: float,
    step: float,
    args: argparse.Namespace,
    seed: int | None = None,
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
        budget=budget,
        step_secs=step,
        seed=args.seed if seed is None else seed,
        providers=ProviderMix(**shares),
        score=ScoreParams(fill=not args.no_fill),
    )
    seen: dict[str, object] = {}

    def factory(ctx: Context) -> SignalledFresh | object:
        from scrapy_fresh.simulator.replay import POLICIES

        if row.signals == "off":
            policy: object = POLICIES["fresh"](ctx)
        else:
            policy = policy_class(row, args)(ctx)
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


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` or ``"0,3,7"`` (or both, ``"0-2,9"``) as a list of seeds.

    >>> parse_seeds("0-2,9")
    [0, 1, 2, 9]
    """
    seeds: list[int] = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            seeds += list(range(int(first), int(last) + 1)) if dash else [int(first)]
        except ValueError:
            raise SystemExit(
                f"--seeds: {part!r} is not a seed or a range like 0-4 (expected e.g. 0-4 or 0,3,7)"
            ) from None
    if not seeds:
        raise SystemExit("--seeds: no seed given (expected e.g. 0-4 or 0,3,7)")
    return seeds


def _spread(values: list[float]) -> str:
    return f"{sum(values) / len(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def measure_seeds(
    label: str,
    trace: Trace,
    budgets: list[float],
    step: float,
    seeds: list[int],
    args: argparse.Namespace,
) -> bool:
    """The trust goal over ``seeds`` (see the module): per-seed rows, then the spread."""
    print(
        f"## {label}: {len(trace)} pages, {trace.n_changes} changes, "
        f"{trace.span / DAY:.0f} days, crawl cycle {step / 3600:g} h, seeds "
        f"{','.join(map(str, seeds))}\n"
    )
    columns = (
        "seed",
        "lying hosts",
        "lying pages",
        "budget",
        "auto",
        "liars, trust",
        "liars ignored",
        "trust / auto",
        "ignored / auto",
        "trust / ignored",
        "demoted liars",
    )
    lines: list[list[str]] = []
    ratios: dict[float, list[tuple[int, float, float]]] = {b: [] for b in budgets}
    shares: list[float] = []
    for seed in seeds:
        for budget in budgets:
            got: dict[str, float] = {}
            demoted = lying = ""
            share = 0.0
            for row in SEED_ROWS:
                began = time.perf_counter()
                result, policy = replay(trace, row, budget, step, args, seed)
                got[row.name] = result.metrics.freshness
                if isinstance(policy, SignalledFresh) and row.name == "liars, trust":
                    pubs = policy.publishers
                    share = pubs.lying_pages() / len(trace)
                    lying = f"{len(pubs.liars)}/{len(pubs.hosts)}"
                    liars, honest = policy.demoted_hosts()
                    demoted = f"{len(liars)}" + (f" (+{len(honest)} honest)" if honest else "")
                print(
                    f"  {label} seed {seed} budget {budget:g} {row.name}: "
                    f"{got[row.name]:.3f} ({time.perf_counter() - began:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
            if budget == budgets[0]:
                shares.append(share)
            auto, trusted, bound = got["auto"], got["liars, trust"], got["liars ignored"]
            ratios[budget].append((seed, trusted / auto, bound / auto))
            lines.append(
                [
                    str(seed),
                    lying,
                    f"{share:.0%}",
                    f"{budget:g}",
                    f"{auto:.3f}",
                    f"{trusted:.3f}",
                    f"{bound:.3f}",
                    f"{trusted / auto:.3f}",
                    f"{bound / auto:.3f}",
                    f"{trusted / bound:.3f}",
                    demoted,
                ]
            )
    print("freshness per seed and budget\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "|".join("---" for _ in columns) + "|")
    for line in lines:
        print("| " + " | ".join(line) + " |")
    share_mean = sum(shares) / len(shares)
    print(
        f"\nover {len(seeds)} seeds: mean (min-max); lying pages {share_mean:.0%} "
        f"({min(shares):.0%}-{max(shares):.0%})\n"
    )
    print("| budget | trust / auto | ignored / auto | trust / ignored | seeds bound < 0.95 |")
    print("|---|---|---|---|---|")
    ok = True
    for budget in budgets:
        got_ratios = ratios[budget]
        trusts = [t for _, t, _ in got_ratios]
        bounds = [b for _, _, b in got_ratios]
        of_bound = [t / b for _, t, b in got_ratios]
        capped = [str(s) for s, _, b in got_ratios if b < 0.95]
        print(
            f"| {budget:g} | {_spread(trusts)} | {_spread(bounds)} | {_spread(of_bound)} | "
            f"{', '.join(capped) or '-'} |"
        )
        ok &= sum(trusts) / len(trusts) >= 0.95
    print()
    all_trust = [t for b in budgets for _, t, _ in ratios[b]]
    mean = sum(all_trust) / len(all_trust)
    print(
        f"{'PASS' if ok else 'MISS'}: {label}: liars with trust >= 0.95x all-honest on "
        f"average over the seeds at every budget (mean of all {mean:.3f}, worst seed "
        f"{min(all_trust):.3f})\n"
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
    parser.add_argument(
        "--lie-stamp",
        choices=LIE_STAMPS,
        default="now",
        help="what a lying sitemap stamps: the read time (now) or today's date (day)",
    )
    parser.add_argument(
        "--lie",
        choices=LIES,
        default="sitemap",
        help="what the liars lie about: updates (sitemap lastmod, hourly schedules) or "
        "quiet times (a week's max-age/ttl on pages that keep changing, yearly schedules)",
    )
    parser.add_argument(
        "--no-fill",
        action="store_true",
        help="fetch due pages only (FRESH_CYCLE_FILL off, or no FRESH_CYCLE_BUDGET): due "
        "times decide, as in a crawl without a budget",
    )
    parser.add_argument(
        "--seeds",
        default=None,
        help="run the trust rows once per seed (0-4, 0,3,7) and report their spread",
    )
    args = parser.parse_args()
    # The tracker warns once per lying host and kind, as a crawl's log would: dozens of
    # lines per replay here, the counts are in the tables.
    logging.getLogger("scrapy_fresh.providers.tracker").setLevel(logging.ERROR)
    seeds = parse_seeds(args.seeds) if args.seeds else None
    print(
        f"python {platform.python_version()} on {platform.machine()}, {platform.system()}; "
        f"smart {args.smart_share:g}, super {args.super_share:g} (precision "
        f"{args.precision:g}), liars {args.liar_share:g} of the hosts "
        f"(lie: {args.lie}, sitemap stamp: {args.lie_stamp}), "
        f"{'due pages only (no fill)' if args.no_fill else 'cycle fill on'}, "
        + (f"seeds {args.seeds}\n" if seeds else f"seed {args.seed}\n")
    )

    def measure(label: str, trace: Trace, budgets: list[float], step: float) -> bool:
        if seeds:
            return measure_seeds(label, trace, budgets, step, seeds, args)
        return measure_trace(label, trace, budgets, step, args)

    traces = set(args.traces.split(","))
    if "rss2023" in traces:
        rss = load_trace(TRACES / "rss2023.csv.gz").filtered(52, 30)
        rss = rss.window(max(rss.start, rss.end - args.rss_days * DAY), rss.end)
        budgets = [float(b) for b in args.budgets.split(",")]
        measure(f"rss2023 filtered, last {args.rss_days:g} days", rss, budgets, 3600.0)
    if "peps" in traces:
        peps = load_trace(TRACES / "peps.csv.gz")
        peps = peps.window(max(peps.start, peps.end - args.peps_years * 365 * DAY), peps.end)
        budgets = [float(b) for b in args.peps_budgets.split(",")]
        measure(f"peps, last {args.peps_years:g} years", peps, budgets, DAY)
    return 0


if __name__ == "__main__":
    sys.exit(main())
