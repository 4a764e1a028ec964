"""Trace-driven simulator: replay recorded change times through the crawl's own code.

The ``fresh`` policy runs :func:`~scrapy_fresh.frontier.revisit.record_visit`,
:func:`~scrapy_fresh.frontier.scoring.priority_score` and the
:class:`~scrapy_fresh.frontier.Frontier` on :class:`~scrapy_fresh.store.base.PageState`
records under a simulated clock; the baselines come from
:mod:`scrapy_fresh.policy.allocation` and the adaptive rules of Nutch, StormCrawler,
Sharma & Dixit and WebFountain. See :doc:`/topics/simulator`.
"""

from __future__ import annotations

from scrapy_fresh.simulator.access import AccessModel
from scrapy_fresh.simulator.clock import SimClock
from scrapy_fresh.simulator.engine import Result, SimConfig
from scrapy_fresh.simulator.metrics import Metrics, measure
from scrapy_fresh.simulator.providers import Level, ProviderMix
from scrapy_fresh.simulator.replay import POLICIES, POLICY_NAMES, run
from scrapy_fresh.simulator.trace import Trace, TraceError, load_trace, poisson_trace, write_trace

__all__ = [
    "POLICIES",
    "POLICY_NAMES",
    "AccessModel",
    "Level",
    "Metrics",
    "ProviderMix",
    "Result",
    "SimClock",
    "SimConfig",
    "Trace",
    "TraceError",
    "load_trace",
    "measure",
    "poisson_trace",
    "run",
    "write_trace",
]
