"""What a crawl learns about each host's validators, and how the next visit of a page
checks for a change (conditional GET, HEAD, or a full download).

:class:`CheckLearning` holds, per host, the :class:`~scrapy_fresh.validators.HostChecks`
read from its site record at first use and updated by every visit
(:mod:`scrapy_fresh.crawl.visits`), and the pages whose validators this run found
untrustworthy. The downloader middleware asks it for the plan of each request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.policy.cost import check_cost_ratio
from scrapy_fresh.validators import (
    Check,
    HostChecks,
    length_full_due,
    length_full_gap,
    parse_http_date,
    usable_etag,
)

if TYPE_CHECKING:
    from scrapy_fresh.crawl.runtime import FreshRuntime
    from scrapy_fresh.store.base import PageState

__all__ = ["CheckLearning"]


class CheckLearning:
    """Validator knowledge of one crawl (``runtime.checks``)."""

    def __init__(self, runtime: FreshRuntime) -> None:
        self.runtime = runtime
        self.config = runtime.config
        self.hosts: dict[str, HostChecks] = {}
        #: Redis store: each host's validator counters as last handed to the store (a
        #: visit adds the difference to the shared site record).
        self.synced: dict[str, dict[str, int]] = {}
        #: Pages that answered 200 to matching validators in this run.
        self.ignored_pages: set[str] = set()
        #: Pages whose ETag changed while their content did not, in this run.
        self.churn_pages: set[str] = set()
        #: Pages whose Content-Length changed while their content did not, in this run.
        self.length_churn_pages: set[str] = set()

    def hand_over(self, host: str, checks: HostChecks | None) -> dict[str, int]:
        """What ``host``'s counters gained since they were last handed to a shared store
        (then counted as handed over)."""
        if checks is None:
            return {}
        counts = checks.counts()
        synced = self.synced.get(host, {})
        delta = {k: v - synced.get(k, 0) for k, v in counts.items() if v != synced.get(k, 0)}
        self.synced[host] = counts
        return delta

    def take_back(self, host: str, delta: dict[str, int]) -> None:
        """A visit's hand-over did not reach the store: hand it over with the next one."""
        synced = self.synced.setdefault(host, {})
        for name, value in delta.items():
            synced[name] = synced.get(name, 0) - value

    def host_checks(self, host: str) -> HostChecks:
        """What ``host`` has shown about validators, from its site record at first use."""
        checks = self.hosts.get(host)
        if checks is None:
            try:
                site = self.runtime.store.get_site(host)
            except StoreError as exc:
                self.runtime.store_error("read the site of", exc, host)
                site = None
            checks = HostChecks.from_counts(site.checks) if site is not None else HostChecks()
            self.hosts[host] = checks
            self.synced[host] = checks.counts()
        return checks

    def check_plan(
        self,
        key: str,
        host: str,
        etag: str | None,
        last_modified: str | None,
        content_length: int | None,
        visits: int | None,
        *,
        count_bad: bool = False,
    ) -> tuple[Check, str | None, str | None]:
        """How the next visit of a page checks for a change (:meth:`HostChecks.plan` with
        :setting:`FRESH_CHECK` and what this run learned), and the ETag and Last-Modified
        it can send: a malformed one, or an ETag that churns, is none. Without
        :setting:`FRESH_LENGTH_PROBE` (the default) a page with neither is downloaded in
        full: its Content-Length is never the only evidence of "unchanged". With it, a
        HEAD probe that could only compare the Content-Length becomes a full download every
        :setting:`FRESH_LENGTH_PROBE_FULL_EVERY` visits (``visits`` None: not decided
        here; with 0 or 1 never a length probe), then after gaps that double while the host
        never showed a change its length hid (:func:`~scrapy_fresh.validators.length_full_due`).
        ``count_bad`` counts a stored validator
        that cannot be sent (``fresh/bad_validator``)."""
        checks = self.host_checks(host)
        if etag and not usable_etag(etag):
            if count_bad:
                self.runtime.stat("fresh/bad_validator")
            etag = None
        if etag and (key in self.churn_pages or checks.etag_untrusted):
            etag = None
        if last_modified and parse_http_date(last_modified) is None:
            if count_bad:
                self.runtime.stat("fresh/bad_validator")
            last_modified = None
        length_known = self.config.length_probe and content_length is not None
        plan = checks.plan(
            self.config.check,
            has_validators=bool(etag or last_modified),
            has_head_validators=bool(etag or last_modified or length_known),
            page_ignores=key in self.ignored_pages,
            page_length_churns=key in self.length_churn_pages,
        )
        every = self.config.length_probe_full_every if self.config.length_probe else 0
        # The first fetch was a full download (fetch 0); the next is fetch ``visits + 1``.
        full_now = every <= 1 or (
            visits is not None and length_full_due(visits + 1, every, checks.length_full_doublings)
        )
        if plan is Check.HEAD and not (etag or last_modified) and full_now:
            plan = Check.NONE  # the length alone is trusted between full downloads only
        return plan, etag, last_modified

    def check_cost(self, state: PageState) -> float:
        """What checking ``state`` costs when it finds no change, as a share of a full
        download (:func:`~scrapy_fresh.frontier.revisit.record_visit`'s ``check_cost``).

        The host's measured cost of a cheap check (bytes of its 304s and unchanged HEAD
        answers over the full pages, at least :setting:`FRESH_MIN_CHECK_COST_RATIO`) when
        the page's next visit will be such a check (:meth:`HostChecks.plan`, with what the
        record and the host have shown); 1.0 (a full download) otherwise, and before the
        host ever answered a cheap check. A page checked by its Content-Length alone is
        downloaded in full one visit in :setting:`FRESH_LENGTH_PROBE_FULL_EVERY`: the mean
        of the two.
        """
        checks = self.host_checks(state.host)
        ratio = check_cost_ratio(
            checks.check_bytes, checks.check_full_bytes, floor=self.config.min_check_cost_ratio
        )
        if ratio is None:
            return 1.0
        plan, etag, last_modified = self.check_plan(
            state.key,
            state.host,
            state.etag,
            state.last_modified,
            state.content_length,
            None,
        )
        if plan is Check.NONE:
            return 1.0
        if plan is Check.HEAD and not (etag or last_modified):
            every = length_full_gap(  # one visit in ``every`` is a full download
                state.visits + 1,
                self.config.length_probe_full_every,
                self.host_checks(state.host).length_full_doublings,
            )
            return (ratio * (every - 1) + 1.0) / every
        return ratio
