"""Charts of simulator results, with matplotlib when it is installed (optional).

``pip install 'scrapy-fresh[plots]'`` installs it; without it every function here raises
:class:`~scrapy_fresh.exceptions.ConfigError` saying so, and the tables still work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scrapy_fresh.exceptions import ConfigError

__all__ = ["bar_chart", "have_matplotlib", "line_chart"]


def have_matplotlib() -> bool:
    """Whether plots can be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ConfigError(
            "plots need matplotlib: pip install 'scrapy-fresh[plots]' (or leave out --plot)."
        ) from exc
    return plt


def bar_chart(
    rows: Sequence[Mapping[str, Any]],
    path: str | Path,
    *,
    title: str,
    key: str = "freshness",
    label: str = "policy",
) -> Path:
    """One bar per row: ``row[key]`` over ``row[label]``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar([str(r[label]) for r in rows], [float(r[key]) for r in rows])
    ax.set_ylabel(key)
    ax.set_title(title, fontsize=10)
    ax.set_ylim(0, 1)
    ax.tick_params(axis="x", labelrotation=30)
    fig.tight_layout()
    target = Path(path)
    fig.savefig(target, dpi=100)
    plt.close(fig)
    return target


def line_chart(
    series: Mapping[str, Sequence[tuple[float, float]]],
    path: str | Path,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    logx: bool = False,
) -> Path:
    """One line per series of ``(x, y)`` points."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, points in series.items():
        ax.plot([x for x, _ in points], [y for _, y in points], marker="o", label=name)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    target = Path(path)
    fig.savefig(target, dpi=100)
    plt.close(fig)
    return target
