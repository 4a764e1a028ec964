"""``scrapy-fresh simulate``: replay a change trace under one re-crawl policy, or all.

See :doc:`/topics/simulator` and :doc:`/reference/commands`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from scrapy_fresh.exceptions import ConfigError

HELP = "Replay a change trace (CSV page,timestamp) under re-crawl policies and score freshness."

#: Columns of the ``--policy all`` table: JSON key, heading, format.
COLUMNS = (
    ("policy", "policy", "{}"),
    ("freshness", "freshness", "{:.3f}"),
    ("p_fresh", "P_fresh", "{:.3f}"),
    ("age_mean_s", "mean age (h)", "{:.1f}"),
    ("harmonic_staleness", "harmonic staleness", "{:.3f}"),
    ("fetches", "fetches", "{}"),
    ("wasted_fetches", "wasted", "{}"),
    ("fetches_per_page_per_day", "fetches/page/day", "{:.2f}"),
)


def add_simulation_arguments(parser: argparse.ArgumentParser) -> None:
    """The trace, budget, provider and access options (shared with simulate-experiments)."""
    parser.add_argument(
        "--trace", required=True, help="change trace: CSV page,timestamp (gzip ok)"
    )
    parser.add_argument(
        "--min-changes",
        type=int,
        default=0,
        help="keep pages with at least this many changes (default 0)",
    )
    parser.add_argument(
        "--min-span-days",
        type=float,
        default=0.0,
        help="keep pages whose changes span at least this many days (default 0)",
    )
    parser.add_argument(
        "--days",
        type=float,
        default=None,
        help="replay only the first DAYS days of the trace (default: all)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--step-secs",
        type=float,
        default=3600.0,
        help="crawl cycle length in seconds (default 3600)",
    )
    parser.add_argument(
        "--warmup-days",
        type=float,
        default=0.0,
        help="days the policies learn before measuring starts (default 0)",
    )
    parser.add_argument(
        "--measure",
        choices=("active", "trace"),
        default="active",
        help="measure each page from its first to its last change (active, "
        "default) or over the whole replay (trace)",
    )
    parser.add_argument(
        "--theta", type=float, default=0.85, help="Zipf skew of accesses over pages (default 0.85)"
    )
    parser.add_argument(
        "--accesses-per-day",
        type=float,
        default=1.0,
        help="mean accesses per page per day (default 1)",
    )
    parser.add_argument(
        "--access-trace",
        default=None,
        help="accesses from a CSV page,timestamp file instead of the model",
    )
    parser.add_argument(
        "--know-accesses",
        action="store_true",
        help="tell the crawler each page's popularity (access_count)",
    )
    parser.add_argument(
        "--schedule-rules",
        default=None,
        metavar="JSON",
        help="FRESH_SCHEDULE_RULES to replay the fresh policy under (a JSON list, or a "
        "file holding one); trace pages that are URLs match by host and URL",
    )
    parser.add_argument(
        "--time-unit-secs",
        type=float,
        default=3600.0,
        help="time unit of Xu et al. eq. 3 in P_fresh (default 3600)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_simulation_arguments(parser)
    parser.add_argument(
        "--policy",
        default="fresh",
        help="a policy name (fresh, uniform, proportional, nutch, stormcrawler, "
        "sartcm, webfountain, cho-oracle, lambdacrawl-oracle, clairvoyant) "
        "or 'all' (default fresh)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help="fetches per page per day on average (default 1)",
    )
    parser.add_argument(
        "--crawlers",
        type=int,
        default=None,
        help="Xu et al.'s M: crawlers (with --pages-per-cycle, instead of --budget)",
    )
    parser.add_argument(
        "--pages-per-cycle",
        type=int,
        default=None,
        help="Xu et al.'s P: pages each crawler fetches per cycle (--step-secs)",
    )
    parser.add_argument(
        "--super-share", type=float, default=0.0, help="share of super providers (default 0)"
    )
    parser.add_argument(
        "--smart-share",
        type=float,
        default=0.0,
        help="share of smart providers: changes pushed as they happen (default 0)",
    )
    parser.add_argument(
        "--lastmod-share",
        type=float,
        default=0.0,
        help="share of smart providers known only through Last-Modified (default 0)",
    )
    parser.add_argument(
        "--precision",
        type=float,
        default=1.0,
        help="probability that a super provider's announced time is real (default 1)",
    )
    parser.add_argument(
        "--horizon-secs",
        type=float,
        default=86400.0,
        help="how long before a change super providers announce it (default 86400)",
    )
    parser.add_argument(
        "--signals",
        choices=("off", "honest", "lying"),
        default="off",
        help="providers publish what they know per host, read each cycle through the "
        "crawl's signal tracker: honest, or with --liar-share of the hosts lying "
        "(default off: pushes and announcements, levels fixed)",
    )
    parser.add_argument(
        "--liar-share",
        type=float,
        default=0.3,
        help="with --signals lying: share of the publishing hosts that lie (default 0.3)",
    )
    parser.add_argument(
        "--autodetect",
        action="store_true",
        help="with --signals: pages start normal and get the level their signals "
        "support (default: levels fixed by hand from the shares)",
    )
    parser.add_argument(
        "--no-trust",
        action="store_true",
        help="with --signals: believe every claim (no trust learning)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (one object, or a list)")
    parser.add_argument(
        "--plot",
        default=None,
        help="with --policy all: write a bar chart of freshness to this file",
    )


def load(args: argparse.Namespace) -> Any:
    """The trace the options name, filtered and cut as they say."""
    from scrapy_fresh.simulator.trace import DAY, load_trace

    trace = load_trace(args.trace)
    if args.min_changes or args.min_span_days:
        trace = trace.filtered(args.min_changes, args.min_span_days)
    if args.days is not None:
        if not args.days > 0:
            raise ConfigError(f"--days ({args.days!r}) must be above 0.")
        trace = trace.window(trace.start, min(trace.end, trace.start + args.days * DAY))
    return trace


def _with_rules(text: str) -> Any:
    """The crawler's refresh rule with the schedule rules ``--schedule-rules`` gives (a
    JSON list, or the path of a file holding one), checked as FRESH_SCHEDULE_RULES is."""
    from dataclasses import replace
    from pathlib import Path

    from scrapy_fresh.frontier.revisit import RevisitPolicy
    from scrapy_fresh.policy.schedule import ScheduleRules

    source = text
    if not text.lstrip().startswith("[") and Path(text).is_file():
        source = Path(text).read_text(encoding="utf-8")
    try:
        raw = json.loads(source)
    except ValueError as exc:
        raise ConfigError(
            f"--schedule-rules is neither a JSON list of rules nor a file holding one: {exc}"
        ) from None
    return replace(RevisitPolicy(), rules=ScheduleRules.parse(raw, "--schedule-rules"))


def config_from(args: argparse.Namespace, pages: int, **overrides: Any) -> Any:
    """The :class:`~scrapy_fresh.simulator.SimConfig` the options describe."""
    from scrapy_fresh.simulator import AccessModel, ProviderMix, SimConfig
    from scrapy_fresh.simulator.trace import DAY

    budget = getattr(args, "budget", None)
    crawlers, per_cycle = getattr(args, "crawlers", None), getattr(args, "pages_per_cycle", None)
    if (crawlers is None) != (per_cycle is None):
        raise ConfigError("--crawlers and --pages-per-cycle go together (M x P per cycle).")
    if crawlers is not None and per_cycle is not None:
        if budget is not None:
            raise ConfigError("give either --budget or --crawlers/--pages-per-cycle, not both.")
        if crawlers < 1 or per_cycle < 1:
            raise ConfigError(
                f"--crawlers ({crawlers!r}) and --pages-per-cycle ({per_cycle!r}) must be 1 or more."
            )
        budget = crawlers * per_cycle * (DAY / args.step_secs) / pages
    if getattr(args, "signals", "off") == "off" and (
        getattr(args, "autodetect", False) or getattr(args, "no_trust", False)
    ):
        raise ConfigError("--autodetect and --no-trust need --signals honest or lying.")
    values: dict[str, Any] = {
        "budget": 1.0 if budget is None else budget,
        "step_secs": args.step_secs,
        "warmup_secs": args.warmup_days * DAY,
        "seed": args.seed,
        "measure": args.measure,
        "access_trace": args.access_trace,
        "know_accesses": args.know_accesses,
        "time_unit": args.time_unit_secs,
    }
    try:
        values["access"] = AccessModel(args.theta, args.accesses_per_day)
        values["providers"] = ProviderMix(
            super_share=getattr(args, "super_share", 0.0),
            smart_share=getattr(args, "smart_share", 0.0),
            lastmod_share=getattr(args, "lastmod_share", 0.0),
            precision=getattr(args, "precision", 1.0),
            horizon_secs=getattr(args, "horizon_secs", 86400.0),
            signals=getattr(args, "signals", "off"),
            liar_share=getattr(args, "liar_share", 0.3),
            autodetect=getattr(args, "autodetect", False),
            trust=not getattr(args, "no_trust", False),
        )
        rules = getattr(args, "schedule_rules", None)
        if rules is not None:
            values["revisit"] = _with_rules(rules)
        values.update(overrides)
        return SimConfig(**values)
    except ValueError as exc:
        raise ConfigError(f"bad simulation option: {exc}") from exc


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The ``--policy all`` table, in markdown."""
    lines = [
        "| " + " | ".join(h for _, h, _ in COLUMNS) + " |",
        "|" + "|".join("---" for _ in COLUMNS) + "|",
    ]
    for row in rows:
        cells = []
        for key, _, fmt in COLUMNS:
            value = row[key]
            if key == "age_mean_s":
                value = value / 3600.0
            cells.append(fmt.format(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from scrapy_fresh.simulator import POLICY_NAMES
    from scrapy_fresh.simulator import run as simulate

    names = list(POLICY_NAMES) if args.policy == "all" else [args.policy]
    unknown = [n for n in names if n not in POLICY_NAMES]
    if unknown:
        raise ConfigError(
            f"--policy ({args.policy!r}) must be 'all' or one of {', '.join(POLICY_NAMES)}."
        )
    if args.plot and args.policy != "all":
        raise ConfigError("--plot needs --policy all.")
    trace = load(args)
    config = config_from(args, len(trace))
    rows = [simulate(trace, name, config).as_dict() for name in names]
    if args.json:
        json.dump(rows[0] if len(rows) == 1 else rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(
            f"trace {args.trace}: {len(trace)} pages, {trace.n_changes} changes, "
            f"{trace.span / 86400:.1f} days; budget {config.budget:g} fetches/page/day"
        )
        print(markdown_table(rows))
    if args.plot:
        from scrapy_fresh.simulator.plots import bar_chart

        bar_chart(rows, args.plot, title=f"{args.trace}: freshness at {config.budget:g}/page/day")
    return 0
