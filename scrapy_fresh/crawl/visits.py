"""Recording a visit: the one place where a visit's outcome is written back.

:class:`VisitRecorder` (``runtime.visits``) judges a downloaded page
(:func:`~scrapy_fresh.fingerprint.verdict.judge`), learns from its validators
(:mod:`scrapy_fresh.crawl.checks`) and commits the visit through
:func:`~scrapy_fresh.frontier.revisit.record_visit`, once per lease, in one store
transaction with its site (a store that writes visits under a lease, Redis, does it in
one atomic step: :class:`~scrapy_fresh.store.base.LeasedVisitStore`). Only the visit
that holds a page's lease writes its visit fields (:mod:`scrapy_fresh.crawl.records`).
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from scrapy_fresh.changes.compare import logged_changes, told_changes
from scrapy_fresh.changes.feed import GONE_NAMESPACE
from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.fingerprint.content import digest_scheme
from scrapy_fresh.fingerprint.itemfields import FIELD_SCHEME_KEY, tag_hashes
from scrapy_fresh.fingerprint.verdict import PageContent, Verdict, judge
from scrapy_fresh.frontier.revisit import record_visit
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.providers.meta import declared_update
from scrapy_fresh.store.base import PageState, SiteState, Status
from scrapy_fresh.validators import (
    HostChecks,
    kept_validators,
    parse_content_length,
    parse_http_date,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, MutableMapping

    from scrapy_fresh.changes.compare import ItemChange
    from scrapy_fresh.crawl.runtime import FreshRuntime, Lease

__all__ = ["OUTCOME_STATS", "VisitRecorder", "debug_wanted"]

logger = logging.getLogger(__name__)

#: The stat each outcome increments.
OUTCOME_STATS = {
    Outcome.NEW: "fresh/new",
    Outcome.CHANGED: "fresh/changed",
    Outcome.UNCHANGED: "fresh/unchanged",
    Outcome.NOT_MODIFIED: "fresh/not_modified",
    Outcome.GONE: "fresh/gone",
    Outcome.ERROR: "fresh/errors",
    Outcome.BLOCKED: "fresh/blocked",
}


#: Outcomes of a visit that got the page (or a 304 for it).
_ANSWERED = frozenset({Outcome.NEW, Outcome.CHANGED, Outcome.UNCHANGED, Outcome.NOT_MODIFIED})


def debug_wanted(log: logging.Logger) -> bool:
    """Whether a DEBUG record of ``log`` would reach a handler that takes it, as
    :meth:`logging.Logger.callHandlers` looks for one. Scrapy sets the root logger to
    NOTSET and filters by LOG_LEVEL in its handler, so ``isEnabledFor`` alone says yes."""
    if not log.isEnabledFor(logging.DEBUG):
        return False
    current: logging.Logger | None = log
    found = False
    while current is not None:
        for handler in current.handlers:
            found = True
            if handler.level <= logging.DEBUG:
                return True
        current = current.parent if current.propagate else None
    resort = logging.lastResort
    return not found and resort is not None and resort.level <= logging.DEBUG


def _add_counts(stored: Mapping[str, Any], delta: Mapping[str, int]) -> dict[str, int]:
    """Validator counters of a site record plus what one worker learned since it last
    handed them over (never below 0; ``lying`` stays a flag, 0 or 1)."""
    out = {k: v for k, v in stored.items() if type(v) is int}
    for name, value in delta.items():
        total = max(0, out.get(name, 0) + value)
        out[name] = min(total, 1) if name == "lying" else total
    return out


class VisitRecorder:
    """Writes each visit of one crawl (``runtime.visits``)."""

    def __init__(self, runtime: FreshRuntime) -> None:
        self.runtime = runtime
        self.checks = runtime.checks
        #: While a downloaded page's visit is recorded: simhash bits between its previous
        #: and its new text (how much changed; the verdict is exact), else None. The
        #: outcome listeners (the visit log) read it.
        self.magnitude: int | None = None
        #: While a downloaded page's visit is recorded: the names of the fields that
        #: changed on any of its items (empty for a page judged without items).
        self.fields: list[str] = []
        #: ... and what changed on its items (:func:`~scrapy_fresh.changes.compare.logged_changes`).
        self.items: list[dict[str, Any]] = []
        #: While a visit is recorded: whether it made the page gone (it was not gone
        #: when this run leased it). The visit log, PageGone items and the webhook read it.
        self.became_gone = False
        #: Sitemaps and feeds whose body, in this run, listed an update later than their
        #: previous visit (scrapy_fresh.crawl.provider_middleware fills it): they changed,
        #: even when their text fingerprint (digits normalised) cannot show it.
        self.listed_updates: set[str] = set()
        #: SQLite and memory stores: each host's site record as last written by a visit
        #: (only visits write it, each in its own transaction): read from the store once.
        self._sites: dict[str, SiteState] = {}

    def _begin(self, meta: MutableMapping[str, Any]) -> tuple[Lease, PageState] | None:
        key = meta.get("fresh_key")
        if not isinstance(key, str) or "fresh_outcome" in meta:
            return None  # not ours, or already recorded (the per-request guard)
        lease = self.runtime.leases.pop(key, None)
        if lease is None:
            return None
        self.runtime.records.settle(key)
        self.runtime.flush_new()  # the links this page yielded go in before its visit
        try:
            state = self.runtime.records.lookup(key)
        except StoreError as exc:
            self.runtime.store_error("read", exc, lease.url)
            return None
        if state is None:
            return None
        return lease, state

    def _visit_transaction(self) -> contextlib.AbstractContextManager[Any]:
        """One store transaction for a whole visit: the new records its page yielded
        (written first, :meth:`flush_new`), its record, its site and the provider
        signals. All of it is committed together, at the end, or none of it."""
        grouped = getattr(
            self.runtime.store_if_open, "grouped", None
        )  # not opened: nothing to group
        return grouped() if grouped is not None else contextlib.nullcontext()

    def _commit(
        self,
        meta: MutableMapping[str, Any],
        state: PageState,
        outcome: Outcome,
        now: float,
        headers: Mapping[str, str | None] | None = None,
    ) -> None:
        """Commit one visit; its callers hold the visit's transaction
        (:meth:`_visit_transaction`)."""
        meta["fresh_outcome"] = outcome.value
        cost = self.checks.check_cost(state)
        checks = self.checks.hosts.get(state.host)
        written = self._commit_leased(state, outcome, now, cost, checks)
        if written is None:
            site = self._sites.get(state.host)
            if site is None:
                try:
                    site = self.runtime.store.get_site(state.host) or SiteState(state.host)
                except StoreError as exc:
                    self.runtime.store_error("read the site of", exc, state.url)
                    site = SiteState(state.host)
                self._sites[state.host] = site
            record_visit(state, outcome, now, self.runtime.policy, site, check_cost=cost)
            self._document_due(state, outcome, now)
            if checks is not None:
                site.checks = checks.counts()  # what this run learned holds in the next
            for amend in list(self.runtime.visit_amenders):  # one write of the record
                amend(state, outcome, now, headers or {})
            try:
                self.runtime.store.put(state)
                self.runtime.store.put_site(site)
            except StoreError as exc:
                self._sites.pop(state.host, None)  # read again: the store has the truth
                self.runtime.store_error("write", exc, state.url)
        if written is not False:
            self.runtime.stat(OUTCOME_STATS[outcome])
        self.runtime.report_regressions()
        if debug_wanted(logger):  # per visit: no record built for nothing
            logger.debug(
                "scrapy_fresh: %(url)s %(outcome)s; next visit in %(secs).0f s%(lost)s",
                {"url": state.url, "outcome": outcome.value, "secs": state.next_due - now,
                 "lost": "" if written is not False else " (not written: lease lost)"},
                extra={"spider": self.runtime.crawler.spider},
            )  # fmt: skip
        self.runtime.notify(self.runtime.visit_listeners, state)  # the host answered, even so
        if written is False:
            return  # another worker holds the URL: its visit is the one recorded
        self.became_gone = self._became_gone(state, outcome)
        try:
            self.runtime.notify(self.runtime.outcome_listeners, state, outcome, now, headers or {})
        finally:
            self.became_gone = False

    def _count_scheme(self, state: PageState, content: PageContent, basis: str) -> None:
        """Count a page whose stored digest another scheme made (other content rules, or
        an upgrade: ``fresh/digest_scheme_changed``), and of those the ones judged by the
        simhash, the rules being unknown (``fresh/digest_scheme_unknown``)."""
        self._count_field_scheme(state, content)
        stored, found = state.content_hash, content.digest
        if stored is None or found is None or digest_scheme(stored) == digest_scheme(found):
            return
        self.runtime.stat("fresh/digest_scheme_changed")
        if basis == "simhash":
            self.runtime.stat("fresh/digest_scheme_unknown")

    def _count_field_scheme(self, state: PageState, content: PageContent) -> None:
        """Count a page whose item hashes other field rules made
        (``fresh/field_scheme_changed``), and of those the ones whose rules are not
        known, judged by the new rules (``fresh/field_scheme_unknown``)."""
        if not state.field_hashes or content.field_scheme is None:
            return  # (a page judged by its digest has the tag of its items' rules too)
        tag = state.field_hashes[0].get(FIELD_SCHEME_KEY)
        if tag is None or tag == content.field_scheme:
            return
        self.runtime.stat("fresh/field_scheme_changed")
        if not self.runtime.field_schemes.candidates(tag):
            self.runtime.stat("fresh/field_scheme_unknown")

    def _document_due(self, state: PageState, outcome: Outcome, now: float) -> None:
        """A spider's sitemap (:mod:`scrapy_fresh.crawl.documents`) that answered is due
        again within FRESH_MIN_REFRESH_SECS, whatever its own change rate: it is how the
        crawl learns which pages changed (an index can stay the same for months while
        its child sitemaps change daily). A conditional check: a 304 when unchanged."""
        if outcome in _ANSWERED and state.key in self.runtime.documents:
            state.next_due = min(state.next_due, now + self.runtime.config.min_refresh_secs)

    def _became_gone(self, state: PageState, outcome: Outcome) -> bool:
        """Whether this visit is the one that tells that the page went: once per
        disappearance, whatever leases were given back or which worker visits it. The
        meta record ``gone`` / ``<key>`` keeps the ``last_seen`` (last good visit) told
        last; a page that came back has a later one and is told again."""
        if outcome is not Outcome.GONE or state.status is not Status.GONE:
            return False
        told = {"last_seen": state.last_crawl}
        try:
            return (
                self.runtime.store.update_meta(
                    GONE_NAMESPACE, state.key, lambda value: None if value == told else told
                )
                is not None
            )
        except StoreError as exc:
            self.runtime.store_error("note the gone page in", exc, state.url)
            return False

    def _commit_leased(
        self, state: PageState, outcome: Outcome, now: float, cost: float,
        checks: HostChecks | None,
    ) -> bool | None:  # fmt: skip
        """Redis store: write the visit under this worker's lease of the URL, in one
        atomic step with its site aggregates, the site by compare-and-set
        (:class:`~scrapy_fresh.store.base.LeasedVisitStore`): concurrent
        workers' visits to one host all count. The host's validator counters get what
        this worker learned since it last handed them over. Returns False if the lease
        was lost (nothing written, stat ``fresh/redis/lease_lost``), None if the store
        is not the shared Redis one."""
        store = self.runtime.leased_store
        if store is None:
            return None
        host = state.host
        delta = self.checks.hand_over(host, checks)

        def apply(record: PageState, site: SiteState) -> None:
            record_visit(record, outcome, now, self.runtime.policy, site, check_cost=cost)
            self._document_due(record, outcome, now)
            if delta:
                site.checks = _add_counts(site.checks, delta)

        def lost() -> None:
            self.runtime.stat("fresh/redis/lease_lost")
            self.checks.take_back(host, delta)  # handed over with the next visit instead

        def retried(n: int) -> None:
            self.runtime.stat("fresh/redis/site_retries", n)

        try:
            return store.commit_visit(state, outcome, apply, lost=lost, retried=retried)
        except StoreError as exc:
            self.runtime.store_error("write", exc, state.url)
            return True

    def record_outcome(
        self,
        meta: MutableMapping[str, Any],
        outcome: Outcome,
        *,
        headers: Mapping[str, str | None] | None = None,
    ) -> PageState | None:
        """Record a visit that ended without a body to judge (not modified, gone, error).

        ``headers`` (lower-case names) of a 304 may refresh the stored validators.
        Returns the updated record, or None if there was nothing (more) to record.
        """
        with self._visit_transaction():
            begun = self._begin(meta)
            if begun is None:
                return None
            _, state = begun
            if outcome is Outcome.NOT_MODIFIED and headers:
                state.etag = headers.get("etag") or state.etag
                state.last_modified = headers.get("last-modified") or state.last_modified
            self._commit(meta, state, outcome, self.runtime.clock(), headers)
            return state

    def record_fetch(
        self,
        meta: MutableMapping[str, Any],
        fingerprint: int,
        *,
        headers: Mapping[str, str | None],
        content_length: int | None,
    ) -> Outcome | None:
        """Record a downloaded page known only by its simhash: :meth:`record_content`
        with ``PageContent(fingerprint)``; returns the outcome."""
        verdict = self.record_content(
            meta, PageContent(fingerprint), headers=headers, content_length=content_length
        )
        return None if verdict is None else verdict[0]

    def record_content(
        self,
        meta: MutableMapping[str, Any],
        content: PageContent,
        *,
        headers: Mapping[str, str | None],
        content_length: int | None,
    ) -> tuple[Outcome, Verdict, list[ItemChange | None]] | None:
        """Record a downloaded page: new (first fetch), changed or unchanged, by
        :func:`~scrapy_fresh.fingerprint.verdict.judge` (item fields, content digest, or simhash).

        A sitemap or feed is also changed when it lists an update later than its previous
        visit (:attr:`listed_updates`), and so is a page whose spider declares such an
        update (``meta["fresh_updates"]``): its dates are its content.

        Also stores the response's validators and learns from them: an ETag that changed
        while the content did not is per-response noise; an ETag that stayed while the
        content changed is a lie (the host is then fetched in full from now on).
        Returns the outcome, the verdict (the changed fields of each item) and what is
        told of each item's change (:func:`~scrapy_fresh.changes.compare.told_changes`:
        the same to the items and to the visit log), or None if there was nothing (more)
        to record.
        """
        with self._visit_transaction():
            return self._record_content(meta, content, headers, content_length)

    def _record_content(
        self,
        meta: MutableMapping[str, Any],
        content: PageContent,
        headers: Mapping[str, str | None],
        content_length: int | None,
    ) -> tuple[Outcome, Verdict, list[ItemChange | None]] | None:
        begun = self._begin(meta)
        if begun is None:
            return None
        lease, state = begun
        now = self.runtime.clock()
        old_etag = state.etag
        listed = state.key in self.listed_updates or (
            state.last_crawl is not None and declared_update(meta, state.last_crawl, now)
        )
        self.listed_updates.discard(state.key)
        verdict = judge(state, content, self.runtime.config.fingerprint_threshold_bits)
        self._count_scheme(state, content, verdict.basis)
        text_changed = verdict.changed and not verdict.new
        if verdict.new:
            outcome = Outcome.NEW
        elif verdict.changed:
            outcome = Outcome.CHANGED
        elif listed:  # a sitemap or feed that lists an update we had not seen
            outcome = Outcome.CHANGED
            self.runtime.stat("fresh/changed_by_listing")
        else:
            outcome = Outcome.UNCHANGED
        etag = headers.get("etag")
        etag = etag.strip() if etag else None
        checks = self.checks.host_checks(state.host)
        if outcome is Outcome.UNCHANGED and etag and old_etag and etag != old_etag:
            checks.etag_churn += 1
            self.checks.churn_pages.add(state.key)
        length = parse_content_length(headers.get("content-length"))
        if outcome is Outcome.UNCHANGED and lease.length_probe:
            checks.length_churn += 1  # the length moved, the content did not
            self.checks.length_churn_pages.add(state.key)
        elif (
            text_changed
            and not (old_etag or state.last_modified)
            and length is not None
            and length == state.content_length
        ):
            checks.length_blind += 1  # a change no length probe could have seen
        elif text_changed and etag and etag == old_etag and not checks.lying:
            checks.lying = True
            self.runtime.stat("fresh/validators_lying")
            logger.warning(
                "scrapy_fresh: %(host)s kept the ETag %(etag)s of %(url)s although its content "
                "changed; its validators are not trusted any more (full fetches).",
                {"host": state.host, "etag": etag, "url": state.url},
                extra={"spider": self.runtime.crawler.spider},
            )
        last_modified = headers.get("last-modified")
        if outcome is Outcome.CHANGED or outcome is Outcome.NEW:
            modified_at = parse_http_date(last_modified)
            if modified_at is not None and modified_at <= now:
                state.add_past_update(modified_at)
        state.fingerprint = content.simhash
        state.field_hashes = (
            tag_hashes(content.items, content.field_scheme)
            if content.items and content.field_scheme is not None
            else content.items or []
        )
        state.content_hash = content.digest
        state.kept_items = content.kept
        state.etag = etag
        state.last_modified = last_modified.strip() if last_modified else None
        if state.last_modified is not None:  # an answer of the second of the last edit
            kept = kept_validators(state.etag, state.last_modified, headers.get("date"))
            if kept != (state.etag, state.last_modified):
                state.etag, state.last_modified = kept
                self.runtime.stat("fresh/validators_same_second")
        state.content_length = length if length is not None else content_length
        if outcome is Outcome.CHANGED and verdict.magnitude is not None:
            self.runtime.stat("fresh/changed_bits", verdict.magnitude)
        self.magnitude = verdict.magnitude
        self.fields = list(dict.fromkeys(n for names in verdict.item_changes for n in names))
        told = told_changes(
            verdict, content.values, content.kept, self.runtime.config.changes.diff_min_chars
        )
        self.items = logged_changes(told)
        try:
            self._commit(meta, state, outcome, now)
        finally:
            self.magnitude = None
            self.fields = []
            self.items = []
        return outcome, verdict, told
