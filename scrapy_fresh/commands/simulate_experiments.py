"""``scrapy-fresh simulate-experiments``: re-run the seeds' experiments on a trace.

Writes ``results.md`` (the tables used in :doc:`/topics/simulator`), ``results.json`` and,
with matplotlib, one PNG per figure. See :doc:`/reference/commands`.
"""

from __future__ import annotations

import argparse
import sys

from scrapy_fresh.commands.simulate import add_simulation_arguments, config_from, load
from scrapy_fresh.exceptions import ConfigError

HELP = (
    "Re-run Xu et al. Fig. 2-5, Cho & Garcia-Molina's 5-page example and freshness vs "
    "budget on a trace; write tables and plots."
)


def _floats(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of numbers"
        ) from exc
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r} must list numbers above 0")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_simulation_arguments(parser)
    parser.add_argument("--out", required=True, help="directory for results.md/.json and PNGs")
    parser.add_argument(
        "--budget",
        type=float,
        default=1.0,
        help="base budget in fetches per page per day (default 1)",
    )
    parser.add_argument(
        "--budgets",
        type=_floats,
        default=[0.25, 0.5, 1.0, 2.0, 4.0],
        help="budgets of the freshness-vs-budget curves (default 0.25,0.5,1,2,4)",
    )
    parser.add_argument(
        "--last-days",
        type=float,
        default=None,
        help="use only the last DAYS days of the trace (Xu et al. used two "
        "months); default: all of it",
    )
    parser.add_argument("--no-plots", action="store_true", help="tables only")


def run(args: argparse.Namespace) -> int:
    from scrapy_fresh.simulator.experiments import run_experiments
    from scrapy_fresh.simulator.trace import DAY

    trace = load(args)
    if args.last_days is not None:
        if not args.last_days > 0:
            raise ConfigError(f"--last-days ({args.last_days!r}) must be above 0.")
        trace = trace.window(max(trace.start, trace.end - args.last_days * DAY), trace.end)
    base = config_from(args, len(trace))
    text = run_experiments(
        trace,
        base,
        args.out,
        budgets=args.budgets,
        plots=not args.no_plots,
        progress=lambda name: print(f"running {name} ...", file=sys.stderr, flush=True),
    )
    print(text)
    return 0
