"""The seeds' experiments, re-run on a trace: tables (markdown) and optional plots.

* Xu et al. (seed ``xu-content-provider-friendly-crawler``, Section 5): Fig. 2 (all pages
  normal, smart or super), Fig. 3 (super share 10%..90%, the rest split evenly between
  normal and smart), Fig. 4a (access skew :math:`\\theta` = 0.4, 0.6, 0.85), Fig. 4b (crawl
  capacity x1, x2, x4), Fig. 5 (super precision 1.0 .. 0.25). All run the ``fresh``
  policy with the crawler told of page popularity, and report :math:`P_{fresh}` (eq. 1-3)
  beside time-averaged freshness.
* Cho & Garcia-Molina's five-page example: rates 1..5 changes a day, 5 fetches a day; the
  optimal allocation and its closed-form freshness, and the replay of a Poisson trace of
  those pages under uniform, proportional and Cho-optimal fetching.
* Freshness against budget for every policy, with ``fresh`` on super providers and
  the per-cycle bound (:func:`~scrapy_fresh.simulator.bounds.cycle_bound`) beside them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from scrapy_fresh.policy.allocation import cho_optimal, proportional, uniform
from scrapy_fresh.policy.metrics import poisson_freshness
from scrapy_fresh.simulator.bounds import cycle_bound
from scrapy_fresh.simulator.engine import SimConfig, build_context
from scrapy_fresh.simulator.providers import ProviderMix
from scrapy_fresh.simulator.replay import POLICY_NAMES, run
from scrapy_fresh.simulator.trace import Trace, poisson_trace

__all__ = ["Experiment", "cho_example", "run_experiments"]

HOMOGENEOUS = {
    "normal": ProviderMix(),
    "smart": ProviderMix(smart_share=1.0),
    "super": ProviderMix(super_share=1.0),
}

Row = dict[str, Any]


class Experiment:
    """One figure: rows of results, a markdown table and an optional chart."""

    def __init__(
        self,
        name: str,
        title: str,
        rows: list[Row],
        columns: Sequence[str],
        series: dict[str, list[tuple[float, float]]] | None = None,
        xlabel: str = "",
        ylabel: str = "P_fresh",
        logx: bool = False,
    ) -> None:
        self.name = name
        self.title = title
        self.rows = rows
        self.columns = list(columns)
        self.series = series
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.logx = logx

    def markdown(self) -> str:
        head = "| " + " | ".join(self.columns) + " |"
        rule = "|" + "|".join("---" for _ in self.columns) + "|"
        body = []
        for row in self.rows:
            cells = []
            for col in self.columns:
                value = row.get(col, "")
                cells.append(f"{value:.3f}" if isinstance(value, float) else str(value))
            body.append("| " + " | ".join(cells) + " |")
        return "\n".join([f"### {self.title}", "", head, rule, *body, ""])


def _score(trace: Trace, config: SimConfig, policy: str = "fresh") -> Row:
    result = run(trace, policy, config).as_dict()
    return {
        "P_fresh": result["p_fresh"],
        "freshness": result["freshness"],
        "fetches": result["fetches"],
        "wasted": result["wasted_fetches"],
    }


def fig2(trace: Trace, base: SimConfig) -> Experiment:
    rows = []
    for level, mix in HOMOGENEOUS.items():
        rows.append({"providers": level, **_score(trace, replace(base, providers=mix))})
    normal, smart, sup = (r["P_fresh"] for r in rows)
    for row in rows:
        row["vs normal"] = f"{row['P_fresh'] / normal - 1:+.1%}" if normal else "n/a"
    rows[2]["vs smart"] = f"{sup / smart - 1:+.1%}" if smart else "n/a"
    return Experiment(
        "xu-fig2",
        "Xu et al. Fig. 2: homogeneous providers (paper: smart +10% over normal, super +15% over smart)",
        rows,
        ["providers", "P_fresh", "freshness", "vs normal", "vs smart", "fetches", "wasted"],
    )


def fig3(trace: Trace, base: SimConfig, shares: Sequence[float]) -> Experiment:
    rows = []
    points = []
    for s in shares:
        rest = (1.0 - s) / 2.0
        mix = replace(base.providers, super_share=s, smart_share=rest, lastmod_share=0.0)
        row = {"super share": s, **_score(trace, replace(base, providers=mix))}
        rows.append(row)
        points.append((s, row["P_fresh"]))
    return Experiment(
        "xu-fig3",
        "Xu et al. Fig. 3: super share, the rest half normal half smart (paper: best near 30%-60%)",
        rows,
        ["super share", "P_fresh", "freshness", "fetches", "wasted"],
        {"fresh": points},
        xlabel="super share",
    )


def _by_level(
    trace: Trace,
    base: SimConfig,
    name: str,
    title: str,
    label: str,
    values: Sequence[float],
    make: Callable[[SimConfig, float], SimConfig],
    logx: bool = False,
) -> Experiment:
    rows = []
    series: dict[str, list[tuple[float, float]]] = {}
    for level, mix in HOMOGENEOUS.items():
        for v in values:
            row = {
                "providers": level,
                label: v,
                **_score(trace, make(replace(base, providers=mix), v)),
            }
            rows.append(row)
            series.setdefault(level, []).append((v, row["P_fresh"]))
    return Experiment(
        name,
        title,
        rows,
        ["providers", label, "P_fresh", "freshness", "fetches"],
        series,
        xlabel=label,
        logx=logx,
    )


def fig4a(trace: Trace, base: SimConfig, thetas: Sequence[float]) -> Experiment:
    return _by_level(
        trace,
        base,
        "xu-fig4a",
        "Xu et al. Fig. 4a: access skew (paper: almost unchanged)",
        "theta",
        thetas,
        lambda c, v: replace(c, access=replace(c.access, theta=v)),
    )


def fig4b(trace: Trace, base: SimConfig, factors: Sequence[float]) -> Experiment:
    return _by_level(
        trace,
        base,
        "xu-fig4b",
        "Xu et al. Fig. 4b: capacity x1, x2, x4 (paper: super gains most, less than linear)",
        "capacity",
        factors,
        lambda c, v: replace(c, budget=base.budget * v),
        logx=True,
    )


def fig5(trace: Trace, base: SimConfig, precisions: Sequence[float]) -> Experiment:
    rows = []
    points = []
    for p in precisions:
        mix = ProviderMix(super_share=1.0, precision=p)
        row = {"precision": p, **_score(trace, replace(base, providers=mix))}
        rows.append(row)
        points.append((p, row["P_fresh"]))
    return Experiment(
        "xu-fig5",
        "Xu et al. Fig. 5: super precision (paper: biggest drop from 1.0 to 0.75)",
        rows,
        ["precision", "P_fresh", "freshness", "fetches", "wasted"],
        {"super": points},
        xlabel="precision",
    )


def cho_example(days: float = 365.0, seed: int = 0) -> Experiment:
    """Cho & Garcia-Molina's five pages (1..5 changes a day) with 5 fetches a day."""
    rates = [1.0, 2.0, 3.0, 4.0, 5.0]
    budget = 5.0
    allocations = {
        "uniform": uniform(rates, budget),
        "proportional": proportional(rates, budget),
        "cho-oracle": cho_optimal(rates, budget),
    }
    trace = poisson_trace(rates, days, seed=seed)
    config = SimConfig(budget=budget / len(rates), measure="trace", seed=seed)
    rows = []
    for name, freqs in allocations.items():
        closed = sum(poisson_freshness(r, f) for r, f in zip(rates, freqs, strict=True)) / 5
        replay = run(trace, name, config).as_dict()["freshness"]
        rows.append(
            {
                "policy": name,
                "fetches/day per page": " ".join(f"{f:.2f}" for f in freqs),
                "closed form": closed,
                "replay": replay,
            }
        )
    return Experiment(
        "cho-5-pages",
        "Cho & Garcia-Molina: 5 pages changing 1..5 times a day, 5 fetches a day",
        rows,
        ["policy", "fetches/day per page", "closed form", "replay"],
    )


def budget_curves(
    trace: Trace,
    base: SimConfig,
    budgets: Sequence[float],
    policies: Sequence[str] = POLICY_NAMES,
    *,
    references: bool = True,
) -> Experiment:
    """Freshness of every policy at every budget, normal providers. With
    ``references``, two more rows: ``fresh`` with every page a super provider of
    precision 1 (Xu et al.'s best case) and :func:`~scrapy_fresh.simulator.bounds.cycle_bound`,
    the bound of the policies that fetch at the replay's slots (``clairvoyant`` ignores
    the per-cycle capacity)."""
    rows = []
    series: dict[str, list[tuple[float, float]]] = {}

    def add(name: str, score: Callable[[SimConfig], float]) -> None:
        row: Row = {"policy": name}
        for b in budgets:
            value = score(replace(base, budget=b))
            row[f"{b:g}/day"] = value
            series.setdefault(name, []).append((b, value))
        rows.append(row)

    def freshness(
        policy: str, providers: ProviderMix | None = None
    ) -> Callable[[SimConfig], float]:
        def score(config: SimConfig) -> float:
            if providers is not None:
                config = replace(config, providers=providers)
            return float(run(trace, policy, config).as_dict()["freshness"])

        return score

    for policy in policies:
        add(policy, freshness(policy))
    if references:
        add("fresh, all super (p=1)", freshness("fresh", ProviderMix(super_share=1.0)))
        add("cycle bound", lambda c: cycle_bound(build_context(trace, c)))
    return Experiment(
        "budget",
        "Freshness against budget (fetches per page per day), normal providers"
        + (" (and the references)" if references else ""),
        rows,
        ["policy", *[f"{b:g}/day" for b in budgets]],
        series,
        xlabel="fetches per page per day",
        ylabel="freshness",
        logx=True,
    )


def run_experiments(
    trace: Trace,
    base: SimConfig,
    out_dir: str | Path,
    *,
    budgets: Sequence[float] = (0.25, 0.5, 1.0, 2.0, 4.0),
    shares: Sequence[float] = (0.1, 0.3, 0.5, 0.7, 0.9),
    thetas: Sequence[float] = (0.4, 0.6, 0.85),
    factors: Sequence[float] = (1.0, 2.0, 4.0),
    precisions: Sequence[float] = (1.0, 0.75, 0.5, 0.25),
    plots: bool = True,
    progress: Callable[[str], None] | None = None,
) -> str:
    """Run every experiment; write ``results.md``, ``results.json`` and (with
    matplotlib) one PNG per figure into ``out_dir``; return the markdown."""
    from scrapy_fresh.simulator.plots import bar_chart, have_matplotlib, line_chart

    target = Path(out_dir)
    target.mkdir(parents=True, exist_ok=True)
    xu = replace(base, know_accesses=True)
    steps: list[tuple[str, Callable[[], Experiment]]] = [
        ("xu-fig2", lambda: fig2(trace, xu)),
        ("xu-fig3", lambda: fig3(trace, xu, shares)),
        ("xu-fig4a", lambda: fig4a(trace, xu, thetas)),
        ("xu-fig4b", lambda: fig4b(trace, xu, factors)),
        ("xu-fig5", lambda: fig5(trace, xu, precisions)),
        ("cho-5-pages", lambda: cho_example(seed=base.seed)),
        ("budget", lambda: budget_curves(trace, base, budgets)),
    ]
    done: list[Experiment] = []
    for name, make in steps:
        if progress is not None:
            progress(name)
        done.append(make())
    draw = plots and have_matplotlib()
    parts = [
        (
            f"Trace {trace.source}: {len(trace)} pages, {trace.n_changes} changes, "
            f"{trace.span / 86400:.1f} days; base budget {base.budget:g} fetches/page/day, "
            f"step {base.step_secs:g} s, seed {base.seed}, measure {base.measure}."
        ),
        "",
    ]
    for exp in done:
        parts.append(exp.markdown())
        if draw:
            png = target / f"{exp.name}.png"
            if exp.series:
                line_chart(
                    exp.series,
                    png,
                    title=exp.title,
                    xlabel=exp.xlabel,
                    ylabel=exp.ylabel,
                    logx=exp.logx,
                )
            elif "P_fresh" in exp.columns:
                bar_chart(exp.rows, png, title=exp.title, key="P_fresh", label=exp.columns[0])
            else:
                continue
            parts.append(f"![{exp.title}]({png.name})\n")
    text = "\n".join(parts)
    (target / "results.md").write_text(text, encoding="utf-8")
    (target / "results.json").write_text(
        json.dumps({e.name: e.rows for e in done}, indent=2, default=str), encoding="utf-8"
    )
    return text
