"""The crawl's numbers in Prometheus form: the ``fresh/*`` stats and the store's state.

Two sources make the samples: a crawl's ``fresh/*`` stats (:func:`stats_samples`:
counters, with the visit outcomes as one labelled counter, and the share of judged
visits that were answered 304) and a snapshot of the store (:class:`StoreSnapshot`:
pages per status, the due backlog, the pages in flight, the blocked hosts and the
estimated freshness). :func:`render` writes them in Prometheus's text format through
``prometheus-client`` (the ``prometheus`` extra), as the continuous-mode endpoint
(:mod:`scrapy_fresh.crawl.prometheus`) and ``scrapy-fresh status --prometheus`` serve them.
No Scrapy import here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.store.base import DUE_STATUSES, PageState, Status

__all__ = [
    "OUTCOME_LABELS",
    "Sample",
    "StoreSnapshot",
    "estimated_freshness",
    "render",
    "stats_samples",
]

#: The stat of each visit outcome -> its ``outcome`` label.
OUTCOME_LABELS = {
    "fresh/new": "new",
    "fresh/changed": "changed",
    "fresh/unchanged": "unchanged",
    "fresh/not_modified": "not_modified",
    "fresh/gone": "gone",
    "fresh/errors": "error",
    "fresh/blocked": "blocked",
}
_JUDGED = ("fresh/changed", "fresh/unchanged", "fresh/not_modified")
_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_]")


@dataclass(frozen=True)
class Sample:
    """One metric value: ``kind`` is "counter" or "gauge"."""

    name: str
    kind: str
    help: str
    value: float
    labels: tuple[tuple[str, str], ...] = ()


def metric_name(stat: str) -> str:
    """The Prometheus name of a ``fresh/*`` stat.

    >>> metric_name("fresh/requests/skipped_not_due")
    'fresh_requests_skipped_not_due'
    """
    return _BAD_CHARS.sub("_", stat.strip("/"))


def stats_samples(stats: Mapping[str, Any]) -> list[Sample]:
    """Samples of a crawl's ``fresh/*`` stats: ``fresh_visits_total{outcome=...}`` for
    the visit outcomes, ``fresh_not_modified_share`` (304 answers per judged visit),
    and one ``<name>_total`` counter per other numeric stat."""
    samples = []
    for stat, label in OUTCOME_LABELS.items():
        samples.append(
            Sample(
                "fresh_visits",
                "counter",
                "Visits recorded, by outcome.",
                float(stats.get(stat, 0) or 0),
                (("outcome", label),),
            )
        )
    judged = sum(float(stats.get(s, 0) or 0) for s in _JUDGED)
    if judged:
        samples.append(
            Sample(
                "fresh_not_modified_share",
                "gauge",
                "Share of judged visits (changed, unchanged, not modified) answered 304.",
                float(stats.get("fresh/not_modified", 0) or 0) / judged,
            )
        )
    for stat in sorted(stats):
        value = stats[stat]
        if (
            not stat.startswith("fresh/")
            or stat in OUTCOME_LABELS
            or isinstance(value, bool)
            or not isinstance(value, (int, float))
        ):
            continue
        samples.append(Sample(metric_name(stat), "counter", f"The {stat} stat.", float(value)))
    return samples


def page_freshness(state: PageState, now: float) -> float | None:
    """The probability that ``state``'s page has not changed since its last visit,
    if it changes as a Poisson process at its estimated rate (None if unknown).

    The rate is the record's change rate, or its p_c per refresh time before there is
    one (:math:`-\\ln(1 - p_c)/t`, changes per second).

    >>> from scrapy_fresh.store.base import PageState
    >>> s = PageState("k", "u", last_crawl=0.0, visits=3, change_rate=1 / 3600)
    >>> round(page_freshness(s, 3600.0), 4)
    0.3679
    """
    if state.last_crawl is None or state.status is Status.GONE or not state.visits:
        return None
    rate = state.change_rate
    if rate is None:
        p_c = min(max(state.p_c, 0.0), 0.999)
        rate = -math.log1p(-p_c) / state.refresh_secs if state.refresh_secs > 0 else None
    if rate is None or not math.isfinite(rate) or rate < 0:
        return None
    return math.exp(-rate * max(0.0, now - state.last_crawl))


def estimated_freshness(states: Iterable[PageState], now: float) -> float | None:
    """Mean :func:`page_freshness` over the pages whose rate is known (None if none)."""
    total, count = 0.0, 0
    for state in states:
        fresh = page_freshness(state, now)
        if fresh is not None:
            total += fresh
            count += 1
    return total / count if count else None


@dataclass
class StoreSnapshot:
    """What a store holds at one time, for the gauges."""

    counts: dict[Status, int] = field(default_factory=dict)
    due: int = 0
    blocked: int = 0
    freshness: float | None = None

    @classmethod
    def of_states(cls, states: list[PageState], now: float, blocked: int = 0) -> StoreSnapshot:
        """A snapshot computed from every record (``scrapy-fresh status``)."""
        counts = dict.fromkeys(Status, 0)
        due = 0
        for s in states:
            counts[s.status] += 1
            due += s.status in DUE_STATUSES and s.next_due <= now
        return cls(counts, due, blocked, estimated_freshness(states, now))

    def samples(self) -> list[Sample]:
        out = [
            Sample(
                "fresh_pages",
                "gauge",
                "Page records, by status.",
                float(n),
                (("status", status.value),),
            )
            for status, n in self.counts.items()
        ]
        out.append(Sample("fresh_due_backlog", "gauge", "Pages due now, not taken yet.", self.due))
        out.append(
            Sample(
                "fresh_in_flight",
                "gauge",
                "Pages taken by a crawl and not visited yet.",
                float(self.counts.get(Status.IN_FLIGHT, 0)),
            )
        )
        out.append(Sample("fresh_blocked_hosts", "gauge", "Hosts blocked.", self.blocked))
        if self.freshness is not None:
            out.append(
                Sample(
                    "fresh_estimated_freshness",
                    "gauge",
                    "Mean estimated probability that a visited page is unchanged since its "
                    "last visit (Poisson model at its estimated change rate).",
                    self.freshness,
                )
            )
        return out


class SampleCollector:
    """A prometheus-client collector of the samples ``source()`` gives at each scrape."""

    def __init__(self, source: Any) -> None:
        self.source = source

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        families: dict[str, Any] = {}
        for sample in self.source():
            family = families.get(sample.name)
            if family is None:
                kind = CounterMetricFamily if sample.kind == "counter" else GaugeMetricFamily
                family = kind(sample.name, sample.help, labels=[k for k, _ in sample.labels])
                families[sample.name] = family
            family.add_metric([v for _, v in sample.labels], sample.value)
        yield from families.values()


def registry_of(source: Any) -> Any:
    """A prometheus-client registry holding only the samples of ``source()``."""
    try:
        from prometheus_client import CollectorRegistry
    except ImportError:
        raise ConfigError(
            "Prometheus metrics need the prometheus-client package: "
            "pip install 'scrapy-fresh[prometheus]'."
        ) from None
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SampleCollector(source))
    return registry


def render(samples: list[Sample]) -> str:
    """The samples in Prometheus's text exposition format."""
    registry = registry_of(lambda: samples)
    from prometheus_client import generate_latest

    return str(generate_latest(registry).decode())
