"""Benchmark: the simulator's goals (issue 7) on the shared change traces.

Reads ``../shared/data/traces/rss2023.csv.gz`` and ``peps.csv.gz`` (next to the project;
nothing is copied into it). Every run uses the simulator's defaults: 1 h crawl cycles,
seed 0, no warm-up, each page measured from its first to its last change.

1. **Normal providers, rates learned online**, rss2023 filtered to feeds with >= 52 changes
   over >= 30 days, 1 fetch/page/day: every policy. Goals: ``fresh`` >= 1.05x uniform, >=
   nutch and stormcrawler, >= 0.97x cho-oracle. (Issue's reference: uniform 0.454,
   proportional 0.142, cho-oracle 0.465.)
2. **Providers**: normal, smart and super (precision 1.0) under ``fresh``, and the
   clairvoyant bound, at several budgets. Goals: smart > normal and super > smart at every
   budget (paper: +10% and +15%), super within 10% of clairvoyant. Beside it, the
   per-cycle bound (:func:`scrapy_fresh.simulator.bounds.cycle_bound`: the best any
   policy fetching at the replay's slots can do; the clairvoyant ignores the per-cycle
   capacity). By default on the last 61 days of the filtered trace (Xu et al. used two
   months); ``--full-year`` for all of it.
3. **Speed**: a full-year replay of the whole rss2023 (553 feeds) at 1 fetch/page/day under
   ``fresh``, trace loading included; goal under 60 s on 2 cores. Reported in seconds and
   as a ratio to the ``uniform`` replay of the same trace in the same run.
4. **peps** with the same defaults (slow pages; budget ``--peps-budget``, default 0.1
   fetch/page/day, i.e. one every 10 days): every policy. Goal: >= 1.05x uniform, which
   is above what cho-oracle reaches there; also reported: fresh >= uniform and fresh /
   cho-oracle.

Usage::

    python bench/simulate.py                 # everything (about 10 minutes on 2 cores)
    python bench/simulate.py --parts 1,3     # only some parts

Prints markdown tables and PASS/MISS lines on stdout.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

from scrapy_fresh.simulator import POLICY_NAMES, ProviderMix, SimConfig, load_trace, run
from scrapy_fresh.simulator.bounds import cycle_bound
from scrapy_fresh.simulator.engine import build_context
from scrapy_fresh.simulator.trace import DAY

TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"


def table(rows: list[dict[str, object]], columns: list[str]) -> str:
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        cells = [f"{row[c]:.3f}" if isinstance(row[c], float) else str(row[c]) for c in columns]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def verdict(ok: bool, text: str) -> str:
    return f"{'PASS' if ok else 'MISS'}: {text}"


def all_policies(trace, config: SimConfig) -> dict[str, dict[str, object]]:
    rows = {}
    for name in POLICY_NAMES:
        r = run(trace, name, config).as_dict()
        rows[name] = {
            "policy": name,
            "freshness": r["freshness"],
            "p_fresh": r["p_fresh"],
            "age (h)": r["age_mean_s"] / 3600,
            "harmonic": r["harmonic_staleness"],
            "fetches": r["fetches"],
            "wasted": r["wasted_fetches"],
            "fetches/page/day": r["fetches_per_page_per_day"],
            "run s": r["elapsed_s"],
        }
        print(f"  {name}: {r['freshness']:.3f} ({r['elapsed_s']:.1f} s)", file=sys.stderr)
    return rows


COLUMNS = [
    "policy",
    "freshness",
    "p_fresh",
    "age (h)",
    "harmonic",
    "fetches",
    "wasted",
    "fetches/page/day",
    "run s",
]


def part1(rss) -> None:
    print("## 1. Normal providers, rss2023 filtered (>= 52 changes over >= 30 days), 1/page/day\n")
    rows = all_policies(rss, SimConfig(budget=1.0))
    print(table(list(rows.values()), COLUMNS), "\n")
    fresh = rows["fresh"]["freshness"]
    uni, cho = rows["uniform"]["freshness"], rows["cho-oracle"]["freshness"]
    nutch, storm = rows["nutch"]["freshness"], rows["stormcrawler"]["freshness"]
    assert isinstance(fresh, float)
    assert isinstance(uni, float)
    assert isinstance(cho, float)
    assert isinstance(nutch, float)
    assert isinstance(storm, float)
    print(verdict(fresh >= 1.05 * uni, f"fresh / uniform = {fresh / uni:.3f} (goal >= 1.05)"))
    print(verdict(fresh >= nutch, f"fresh - nutch = {fresh - nutch:+.3f} (goal >= 0)"))
    print(verdict(fresh >= storm, f"fresh - stormcrawler = {fresh - storm:+.3f} (goal >= 0)"))
    print(verdict(fresh >= 0.97 * cho, f"fresh / cho-oracle = {fresh / cho:.3f} (goal >= 0.97)"))
    print()


def part2(rss, budgets: list[float], full_year: bool) -> None:
    trace = rss if full_year else rss.window(rss.end - 61 * DAY, rss.end)
    span = "full year" if full_year else "last 61 days"
    print(f"## 2. Provider levels under fresh, rss2023 filtered, {span}\n")
    rows = []
    for b in budgets:
        base = SimConfig(budget=b)
        got: dict[str, object] = {"budget": b}
        for level, mix in (
            ("normal", ProviderMix()),
            ("smart", ProviderMix(smart_share=1.0)),
            ("super", ProviderMix(super_share=1.0, precision=1.0)),
        ):
            got[level] = run(trace, "fresh", replace(base, providers=mix)).metrics.freshness
        got["clairvoyant"] = run(trace, "clairvoyant", base).metrics.freshness
        got["cycle bound"] = cycle_bound(build_context(trace, base))
        n, s, u, c = (float(got[k]) for k in ("normal", "smart", "super", "clairvoyant"))  # type: ignore[arg-type]
        got["smart vs normal"] = f"{s / n - 1:+.1%}"
        got["super vs smart"] = f"{u / s - 1:+.1%}"
        got["super / clairvoyant"] = u / c
        got["super / cycle bound"] = u / float(got["cycle bound"])  # type: ignore[arg-type]
        rows.append(got)
        print(f"  budget {b}: {n:.3f} {s:.3f} {u:.3f} {c:.3f}", file=sys.stderr)
    print(
        table(
            rows,
            [
                "budget",
                "normal",
                "smart",
                "super",
                "clairvoyant",
                "cycle bound",
                "smart vs normal",
                "super vs smart",
                "super / clairvoyant",
                "super / cycle bound",
            ],
        ),
        "\n",
    )
    ok1 = all(float(r["smart"]) > float(r["normal"]) for r in rows)  # type: ignore[arg-type]
    ok2 = all(float(r["super"]) > float(r["smart"]) for r in rows)  # type: ignore[arg-type]
    worst = min(float(r["super / clairvoyant"]) for r in rows)  # type: ignore[arg-type]
    print(verdict(ok1, "smart above normal at every budget (paper: +10%)"))
    print(verdict(ok2, "super above smart at every budget (paper: +15%)"))
    print(verdict(worst >= 0.9, f"super >= 0.9x clairvoyant: worst {worst:.3f}"))
    worst_cycle = min(float(r["super / cycle bound"]) for r in rows)  # type: ignore[arg-type]
    print(f"(reference) super / cycle bound: worst {worst_cycle:.3f}")
    print()


def part3() -> None:
    print("## 3. Speed: full-year replay of all of rss2023 at 1 fetch/page/day\n")
    path = TRACES / "rss2023.csv.gz"
    began = time.perf_counter()
    trace = load_trace(path)
    loaded = time.perf_counter() - began
    uni = run(trace, "uniform", SimConfig()).elapsed_s
    fresh = run(trace, "fresh", SimConfig()).elapsed_s
    total = loaded + fresh
    print(f"pages {len(trace)}, changes {trace.n_changes}, days {trace.span / DAY:.1f}\n")
    print(
        table(
            [
                {"step": "load trace", "seconds": loaded},
                {"step": "uniform replay (baseline)", "seconds": uni},
                {"step": "fresh replay", "seconds": fresh},
                {"step": "load + fresh", "seconds": total},
            ],
            ["step", "seconds"],
        )
    )
    print(f"\nfresh / uniform time ratio: {fresh / uni:.1f}x\n")
    print(verdict(total < 60.0, f"load + fresh replay {total:.1f} s (goal < 60 s)"))
    print()


def part4(budget: float) -> None:
    print(f"## 4. peps (all pages), {budget:g} fetch/page/day, same defaults\n")
    peps = load_trace(TRACES / "peps.csv.gz")
    print(f"pages {len(peps)}, changes {peps.n_changes}, days {peps.span / DAY:.0f}\n")
    rows = all_policies(peps, SimConfig(budget=budget))
    print(table(list(rows.values()), COLUMNS), "\n")
    fresh, uni = rows["fresh"]["freshness"], rows["uniform"]["freshness"]
    cho = rows["cho-oracle"]["freshness"]
    assert isinstance(fresh, float)
    assert isinstance(uni, float)
    assert isinstance(cho, float)
    print(
        verdict(fresh >= 1.05 * uni, f"peps: fresh / uniform = {fresh / uni:.3f} (goal >= 1.05)")
    )
    # Cho-optimal with the true rates is the reference of what rates can buy here: the
    # 1.05x goal is above it, so also report the realistic bar (at least uniform).
    print(verdict(fresh >= uni, f"peps: fresh - uniform = {fresh - uni:+.3f} (>= 0)"))
    print(f"peps: fresh / cho-oracle = {fresh / cho:.3f}; cho-oracle / uniform = {cho / uni:.3f}")
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="1,2,3,4")
    parser.add_argument("--budgets", default="0.5,1,2,4")
    parser.add_argument("--full-year", action="store_true")
    parser.add_argument("--peps-budget", type=float, default=0.1)
    args = parser.parse_args()
    parts = {int(p) for p in args.parts.split(",")}
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.system()}\n")
    rss = None
    if parts & {1, 2}:
        rss = load_trace(TRACES / "rss2023.csv.gz").filtered(52, 30)
        print(f"rss2023 filtered: {len(rss)} feeds, {rss.n_changes} changes\n")
    if 1 in parts:
        part1(rss)
    if 2 in parts:
        part2(rss, [float(b) for b in args.budgets.split(",")], args.full_year)
    if 3 in parts:
        part3()
    if 4 in parts:
        part4(args.peps_budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
