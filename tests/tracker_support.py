"""What the signal-tracker and trust tests share (imported as ``tests.tracker_support``)."""

from __future__ import annotations

from scrapy_fresh.frontier.revisit import RevisitPolicy, record_visit
from scrapy_fresh.keys import url_host, url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.base import PageState, SiteState, Status


def crawled(url: str, at: float = 0.0) -> PageState:
    """A record first fetched at ``at`` (due a day later by the refresh rule)."""
    host = url_host(url)
    state = PageState(url_key(url), url, host=host, status=Status.QUEUED)
    record_visit(state, Outcome.NEW, at, RevisitPolicy(), SiteState(host))
    return state
