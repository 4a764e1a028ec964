"""``scrapy-fresh report``: a self-contained HTML report of what the crawls did.

Plots (matplotlib, embedded as PNG): freshness and age over time, requests per outcome,
refresh time against observed change rate per page, p_c per host, bytes spent against a
plain re-crawl. With ``--site-truth`` (the demo site), the true freshness of the copy and
how the crawl's change verdicts compare with the true changes.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from scrapy_fresh.commands._control import add_target_store_arguments, read_stores
from scrapy_fresh.commands._project import resolve_path
from scrapy_fresh.exceptions import ConfigError, FreshError

HELP = "Write an HTML report (plots) of freshness, outcomes, refresh times and bytes."

_COLORS = {
    "new": "#4c72b0",
    "changed": "#dd8452",
    "unchanged": "#55a868",
    "not_modified": "#8172b3",
    "gone": "#937860",
    "error": "#c44e52",
    "blocked": "#bbbbbb",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--html", type=Path, required=True, help="the HTML file to write")
    parser.add_argument(
        "--site-truth",
        default=None,
        help="the demo site's URL (or its /_demo/truth URL, or a saved "
        "truth JSON file): adds the true freshness",
    )
    parser.add_argument(
        "--visit-log", default=None, help="the visit log (default: the project's FRESH_VISIT_LOG)"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    add_target_store_arguments(parser)


def load_truth(source: str) -> dict[str, Any]:
    """The demo site's truth from a URL (site or ``/_demo/truth``) or a JSON file."""
    if source.startswith(("http://", "https://")):
        url = source if "/_demo/truth" in source else source.rstrip("/") + "/_demo/truth"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                data: dict[str, Any] = json.load(response)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--site-truth {source!r}: cannot read {url}: {exc}") from exc
        return data
    try:
        data = json.loads(Path(source).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"--site-truth {source!r}: not a readable truth JSON file: {exc}"
        ) from exc
    if not isinstance(data, dict) or "pages" not in data or "requests" not in data:
        raise ConfigError(f"--site-truth {source!r}: expected the demo site's /_demo/truth JSON.")
    return data


def _png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _hours(t: float, start: float) -> float:
    return (t - start) / 3600.0


def plots(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(title, base64 PNG) of every plot."""
    try:
        import matplotlib
    except ImportError as exc:
        raise FreshError(
            "scrapy-fresh report draws with matplotlib: pip install 'scrapy-fresh[plots]'"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: list[tuple[str, str]] = []
    start = data["start"]
    truth = data["truth"]

    fig, ax = plt.subplots(figsize=(8, 3.5))
    est = data["estimated_freshness"]
    if est:
        ax.plot(
            [_hours(t, start) for t, _ in est],
            [f for _, f in est],
            label="estimated (Poisson, learned rates)",
            color="#4c72b0",
        )
    if truth:
        ax.plot(
            [_hours(t, start) for t, _, _ in truth["series"]],
            [f for _, f, _ in truth["series"]],
            label="true (demo site)",
            color="#dd8452",
        )
        ax2 = ax.twinx()
        ax2.plot(
            [_hours(t, start) for t, _, _ in truth["series"]],
            [a / 3600 for _, _, a in truth["series"]],
            color="#999999",
            ls=":",
            label="true mean age (h)",
        )
        ax2.set_ylabel("mean age (hours)")
        ax2.legend(loc="lower right", fontsize=8)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("hours since the first visit")
    ax.set_ylabel("share of pages fresh")
    ax.legend(loc="lower left", fontsize=8)
    out.append(("Freshness and age over time", _png(fig)))

    runs = data["runs"]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    bottom = [0] * len(runs)
    for outcome, color in _COLORS.items():
        values = [r["outcomes"][outcome] for r in runs]
        ax.bar(range(len(runs)), values, bottom=bottom, color=color, label=outcome)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_xticks(
        range(len(runs)), [f"{i + 1}\n{r['spider'] or ''}" for i, r in enumerate(runs)], fontsize=7
    )
    ax.set_ylabel("visits")
    ax.set_xlabel("run")
    ax.legend(fontsize=8, ncol=3)
    out.append(("Visits per outcome, per run (304 = not_modified)", _png(fig)))

    fig, ax = plt.subplots(figsize=(6, 4.5))
    markers = {"normal": "o", "smart": "s", "super": "^"}
    for provider, marker in markers.items():
        pts = [
            (p["change_rate"] * 86400, p["refresh_secs"] / 3600)
            for p in data["pages"]
            if p["provider"] == provider and p["change_rate"] and p["status"] != "gone"
        ]
        if pts:
            ax.scatter(
                *zip(*pts, strict=True),
                marker=marker,
                label=f"{provider} (estimated rate)",
                alpha=0.7,
            )
        true_pts = [
            (p["true_rate"] * 86400, p["refresh_secs"] / 3600)
            for p in data["pages"]
            if p["provider"] == provider
            and p.get("true_rate")
            and p["status"] != "gone"
            and p["visits"]
        ]
        if true_pts:
            ax.scatter(
                *zip(*true_pts, strict=True),
                marker=marker,
                facecolors="none",
                edgecolors="black",
                label=f"{provider} (true rate)",
                alpha=0.5,
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("change rate (changes per day)")
    ax.set_ylabel("refresh time (hours)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    out.append(("Refresh time against change rate, per page", _png(fig)))

    fig, ax = plt.subplots(figsize=(6, 3))
    sites = sorted(data["sites"], key=lambda s: -s["visits"])[:20]
    ax.barh([s["host"] for s in sites], [s["p_c"] for s in sites], color="#55a868")
    ax.set_xlim(0, 1)
    ax.set_xlabel("p_c (degree of success: changes / visits)")
    out.append(("p_c per host", _png(fig)))

    fig, ax = plt.subplots(figsize=(8, 3.5))
    cum, cum_plain = 0, 0
    xs, spent, plain = [], [], []
    for i, r in enumerate(runs):
        cum += r["bytes"]
        cum_plain += r["plain_bytes"]
        xs.append(i + 1)
        spent.append(cum / 1e6)
        plain.append(cum_plain / 1e6)
    ax.plot(xs, plain, marker="o", label="plain re-crawl (estimated: every page, full GET)")
    ax.plot(xs, spent, marker="o", label="scrapy_fresh (measured)")
    ax.set_xlabel("run")
    ax.set_ylabel("MB downloaded (cumulative)")
    ax.legend(fontsize=8)
    out.append(("Bytes spent against a plain re-crawl", _png(fig)))
    return out


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def summary_lines(data: dict[str, Any]) -> list[str]:
    """The report's main figures as text lines (printed, and the HTML's first table)."""
    outcomes = data["outcomes"]
    lines = [
        (
            f"Runs: {len(data['runs'])}, visits: {data['visits']} over "
            f"{(data['end'] - data['start']) / 3600:.1f} hours"
        ),
        "Outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.items()),
        f"Requests: {data['requests']} ("
        + ", ".join(f"{k}: {v}" for k, v in data["requests_by_status"].items())
        + ")",
        f"Bytes: {data['bytes'] / 1e6:.2f} MB downloaded; a plain re-crawl: "
        f"~{data['plain_bytes_estimate'] / 1e6:.2f} MB"
        + (
            f" ({data['bytes_saved_share']:.0%} saved)"
            if data["bytes_saved_share"] is not None
            else ""
        ),
    ]
    truth = data["truth"]
    if truth:
        j = truth["judgements"]
        lines += [
            (
                f"True freshness (demo site): {truth['freshness']:.3f}, mean age "
                f"{truth['age_secs'] / 3600:.2f} h"
            ),
            (
                f"True changes: {truth['true_changes']}, detected by a download: "
                f"{truth['detected_changes']} ("
                f"{_fmt(truth['bytes_per_detected_change'] and truth['bytes_per_detected_change'] / 1e3)}"
                " kB per detected change)"
            ),
            (
                f"Change verdicts vs truth: {j['true_changed']} changed rightly, "
                f"{j['false_changed']} wrongly, {j['missed_change']} changes missed, "
                f"{j['true_unchanged']} unchanged rightly"
            ),
        ]
    return lines


def _changes_html(changes: list[dict[str, Any]]) -> str:
    """The latest changes: time, kind, page, changed fields, previous values and diffs."""
    if not changes:
        return "<h2>Latest changes</h2><p>None logged.</p>"
    rows = []
    for c in changes:
        details = "".join(
            "<pre>"
            + html.escape(
                "\n".join(
                    [f"{k}: was {v!r}" for k, v in item["previous"].items()]
                    + list(item["diff"].values())
                )
            )
            + "</pre>"
            for item in c.get("items", [])
        )
        what = ", ".join(c.get("fields", ())) if c["kind"] != "gone" else ""
        rows.append(
            f"<tr><td class='l'>{html.escape(str(c['time']))}</td><td>{c['kind']}</td>"
            f"<td class='l'>{html.escape(c['url'])}</td><td class='l'>{html.escape(what)}</td>"
            f"<td class='l'>{details}</td></tr>"
        )
    return (
        f"<h2>Latest changes</h2><p>The {len(changes)} latest, newest first "
        "(previous values and diffs with FRESH_KEEP_ITEMS).</p><table><tr><th>time</th>"
        "<th>kind</th><th>page</th><th>changed fields</th><th>what changed</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _gone_html(gone: list[dict[str, Any]]) -> str:
    if not gone:
        return "<h2>Gone pages</h2><p>None.</p>"
    rows = "".join(
        f"<tr><td class='l'>{html.escape(g['url'])}</td><td>{_when(g['last_seen'])}</td></tr>"
        for g in gone
    )
    return (
        f"<h2>Gone pages</h2><p>{len(gone)} pages answer 404 or 410.</p><table><tr>"
        f"<th>page</th><th>last seen</th></tr>{rows}</table>"
    )


def _when(t: float | None) -> str:
    if t is None:
        return "never"
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _hosts_html(sites: list[dict[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td class='l'>{html.escape(s['host'])}</td><td>{s['visits']}</td>"
        f"<td>{s['changes']}</td><td>{_fmt(s['p_c'])}</td>"
        f"<td>{_fmt(s['refresh_secs'] and s['refresh_secs'] / 3600)}</td></tr>"
        for s in sorted(sites, key=lambda s: -s["visits"])
    )
    return (
        "<h2>Hosts</h2><table><tr><th>host</th><th>visits</th><th>changes</th><th>p_c</th>"
        f"<th>refresh time of new pages (h)</th></tr>{rows}</table>"
    )


def render_html(data: dict[str, Any], images: list[tuple[str, str]], source: str) -> str:
    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows = "".join(f"<li>{html.escape(line)}</li>" for line in summary_lines(data))
    figures = "".join(
        f"<figure><figcaption>{html.escape(title)}</figcaption>"
        f'<img alt="{html.escape(title)}" src="data:image/png;base64,{png}"></figure>'
        for title, png in images
    )
    run_rows = "".join(
        f"<tr><td>{i + 1}</td><td>{html.escape(str(r['spider']))}</td>"
        + "".join(f"<td>{r['outcomes'][o]}</td>" for o in _COLORS)
        + f"<td>{r['requests']}</td><td>{r['bytes']}</td><td>{r['plain_bytes']}</td></tr>"
        for i, r in enumerate(data["runs"])
    )
    head = "".join(f"<th>{o}</th>" for o in _COLORS)
    changes = _changes_html(data.get("changes", []))
    hosts = _hosts_html(data["sites"])
    gone = _gone_html(data.get("gone", []))
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>scrapy_fresh report</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:auto}"
        "figure{margin:1.5em 0}figcaption{font-weight:bold}img{max-width:100%}"
        "table{border-collapse:collapse;font-size:small}td,th{border:1px solid #ccc;"
        "padding:2px 6px;text-align:right}td.l{text-align:left}"
        "pre{margin:0;font-size:x-small;white-space:pre-wrap}</style></head><body>"
        f"<h1>scrapy_fresh report</h1><p>{html.escape(source)}; made {made}.</p>"
        f"<ul>{rows}</ul>{figures}<h2>Runs</h2><table><tr><th>run</th><th>spider</th>{head}"
        f"<th>requests</th><th>bytes</th><th>plain re-crawl bytes (est.)</th></tr>{run_rows}"
        f"</table>{changes}{gone}{hosts}</body></html>"
    )


def run(args: argparse.Namespace) -> int:
    from scrapy_fresh.reporting import build_report, load_visit_log

    read = read_stores(args)
    config, states, sites, description = read.config, read.states, read.sites, read.description
    log_path = (
        Path(args.visit_log)
        if args.visit_log
        else (resolve_path(config.visit_log) if config.visit_log else None)
    )
    if log_path is None or not log_path.is_file():
        raise ConfigError(
            f"No visit log at {str(log_path)!r}: the report needs FRESH_VISIT_LOG (on by "
            "default) and at least one crawl; or give the file with --visit-log."
        )
    events, bad = load_visit_log(log_path)
    data = build_report(events, states, sites)
    if args.site_truth:
        from scrapy_fresh.demo.truth import truth_figures

        data["truth"] = truth_figures(events, data, load_truth(args.site_truth))
    images = plots(data)
    args.html.parent.mkdir(parents=True, exist_ok=True)
    args.html.write_text(
        render_html(data, images, f"Store {description}, log {log_path}"), encoding="utf-8"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(data))
    for line in summary_lines(data):
        print(line)
    if bad:
        print(f"({bad} unreadable lines of the visit log were skipped)")
    print(f"Report written to {args.html}")
    return 0
