r"""Check what providers claimed against what visits found, and apply their signals.

:class:`SignalTracker` is the one implementation of provider signals in a crawl: the
Scrapy glue (:class:`~scrapy_fresh.crawl.provider_middleware.FreshProviderMiddleware`) and the
simulator (:mod:`scrapy_fresh.simulator.signalled`) both drive it. No Scrapy, no clock:
every method takes ``now``.

* :meth:`~SignalTracker.apply` writes signals about pages into their records (or holds
  them for pages not known yet): past updates into ``past_updates`` (the input of
  :math:`S_{past}^{known}`, eq. 4 of Xu et al., seed ``xu-content-provider-friendly-crawler``),
  announced updates into ``future_updates`` (eq. 6-7), levels and due times as
  :mod:`scrapy_fresh.providers.apply` says (the slot rule of Section 4.1).
* :meth:`~SignalTracker.before_visit` and :meth:`~SignalTracker.after_visit` bracket a
  visit: after it, the claims made about the page since its previous crawl are judged
  against the outcome (:mod:`scrapy_fresh.policy.trust`: confirmed, refuted, missed; a
  change confirms a claim only as far as the page's own rate does not explain it, the
  rate of its visits, or of its host's pages' visits until its own saw a change) and
  the host's trust in that kind of signal is updated in the store
  (:mod:`scrapy_fresh.providers.ledger`). The signals of a demoted host are still
  recorded and checked, not used (Section 5.4: a wrong announcement costs a slot twice).
* Quiet claims (``max-age``, ``Expires``, ``<ttl>``, ``<skipHours>``/``<skipDays>``,
  kind ``cache``) that reach past a page's own due time defer it only by the share of
  the claimed time its host has earned (:func:`~scrapy_fresh.policy.trust.quiet_weight`;
  none before any was judged), so the page's next visit comes inside the claimed quiet
  time and judges the claim (:func:`~scrapy_fresh.policy.trust.observe_quiet`). The claim
  is kept with the store (:class:`~scrapy_fresh.providers.ledger.QuietClaim`) for a
  visit in a later run.
* Announced updates that came due since a page's last crawl are judged together by its
  visit (:func:`~scrapy_fresh.policy.trust.any_announced`); a host whose signals of
  another kind are demoted gets only the trust its announcements earned themselves
  (:func:`~scrapy_fresh.policy.trust.announced_probability`). An instant announced again
  takes the probability of now (the host's trust may have fallen since), and drops out
  when that is 0 or its kind is demoted.
* A sitemap or feed that dates (nearly) every entry at the time it is read, two reads in
  a row (:func:`~scrapy_fresh.policy.trust.stamps_read_time`), has its dates ignored
  before :meth:`~SignalTracker.apply` writes anything, each such read counted as a
  refuted claim of its host's kind (``fresh/providers/stamped``,
  ``fresh/providers/stamping``, a warning once per host and kind); the count of such
  reads in a row is kept in the store (:func:`group_key`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from scrapy_fresh.keys import url_host, url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.policy.schedule import NO_RULES, ScheduleRules
from scrapy_fresh.policy.trust import (
    DEFAULT_TRUST_PARAMS,
    STAMP_MIN_ENTRIES,
    STAMP_TOLERANCE_SECS,
    Evidence,
    TrustParams,
    announced_probability,
    any_announced,
    change_chance,
    stamps_read_time,
)
from scrapy_fresh.providers.apply import (
    add_announced,
    add_past,
    consume_announced,
    detected_level,
    signal_due,
)
from scrapy_fresh.providers.ledger import QUIET_KIND, QuietClaim, TrustLedger
from scrapy_fresh.providers.signals import NotBefore, PastUpdate, Signals
from scrapy_fresh.store.base import PageState, Provider, StateStore, Status
from scrapy_fresh.validators import parse_http_date

__all__ = [
    "FUTURE_KINDS",
    "MAX_CLAIMS",
    "MAX_CLAIMS_PER_PAGE",
    "MAX_HOST_RATES",
    "MAX_PENDING",
    "PAST_KINDS",
    "STAMPED_NAMESPACE",
    "STAMP_KINDS",
    "PageRecords",
    "SignalTracker",
    "StampedReads",
    "group_key",
]

#: Signal kinds whose claims are past updates of other pages, checked at their visits.
PAST_KINDS = ("sitemap", "feed", "push")
#: Signal kinds of documents that may date every entry at the time they are read
#: (:func:`~scrapy_fresh.policy.trust.stamps_read_time`).
STAMP_KINDS = ("sitemap", "feed")
#: Signal kinds whose claims are announced updates.
FUTURE_KINDS = ("schedule", "changefreq", "spider")
#: URLs not in the store yet whose signals are held until their first visit.
MAX_PENDING = 100_000
#: Pages whose claim kinds of this run are remembered exactly (beyond: host's kinds).
MAX_CLAIMS = 200_000
#: Claims remembered per page in one run.
MAX_CLAIMS_PER_PAGE = 64
#: Hosts whose changes seen in this run are kept (beyond: the least recent dropped).
MAX_HOST_RATES = 100_000
_JUDGED = (Outcome.CHANGED, Outcome.UNCHANGED, Outcome.NOT_MODIFIED)
_PAST_OR_LASTMOD = frozenset({*PAST_KINDS, "http-lastmod"})


class PageRecords(Protocol):
    """Where :meth:`SignalTracker.apply` reads and writes page records (a
    :class:`~scrapy_fresh.store.base.StateStore` is one)."""

    def get_many(self, keys: Iterable[str]) -> dict[str, PageState]: ...

    def put_many(self, states: Iterable[PageState]) -> None: ...


@dataclass
class _Visit:
    """A page on its way: what its record said before, and what its response says."""

    prev_last_crawl: float | None
    prev_past: list[float]
    prev_future: list[tuple[float, float]]
    prev_last_modified: str | None
    #: changes the page's visits found before, and the time those visits covered
    prev_changes: int = 0
    prev_watched: float = 0.0
    #: what its response said of it (None: nothing, as most answers, and every 304)
    own: Signals | None = None


logger = logging.getLogger(__name__)


#: The meta namespace of the stamped reads in a row of a host's documents of one kind
#: (key ``<kind>/<host>``; value ``reads``, ``entries``, ``read_at``).
STAMPED_NAMESPACE = "trust.stamped"


@dataclass(frozen=True)
class StampedReads:
    """Reads in a row of ``(host, kind)``'s documents that dated every entry at the time
    they were read (:func:`~scrapy_fresh.policy.trust.stamps_read_time`)."""

    reads: int
    entries: int
    read_at: float

    @classmethod
    def from_meta(cls, value: dict[str, Any]) -> StampedReads | None:
        reads, entries, read_at = value.get("reads"), value.get("entries"), value.get("read_at")
        if type(reads) is not int or type(entries) is not int or reads <= 0:
            return None
        return cls(reads, entries, float(read_at) if isinstance(read_at, (int, float)) else 0.0)


def group_key(group: tuple[str, str]) -> str:
    """The meta key (namespace :data:`STAMPED_NAMESPACE`) of ``(host, kind)``'s reads.

    >>> group_key(("example.com", "sitemap"))
    'sitemap/example.com'
    """
    host, kind = group
    return f"{kind}/{host}"


def _no_stat(name: str, count: int = 1) -> None:
    """The default stats sink: nothing."""


def _joined(first: Signals | None, then: Signals | None, *, copy: bool = False) -> Signals:
    """``first``'s signals, then ``then``'s, in a new bundle; or, when one of them has
    none, the other as it is (unless ``copy``): most visits have one bundle or none to
    join, and need no copy. The tracker never adds to a bundle it did not just make, so
    sharing one is safe. (``sitemaps``, which no page's own signals carry, may be left
    out.)"""
    if then is None or not len(then):
        found = first
    elif first is None or not len(first):
        found = then
    else:
        found = None
    if found is not None and not copy:
        return found
    joined = Signals()
    for part in (first, then):
        if part is not None:
            joined.extend(part)
    return joined


def _dated(own: Signals) -> bool:
    """Whether a page's own signals date an update of it other than by its
    ``Last-Modified`` (a spider's ``fresh_updates``, a feed's own entry)."""
    return any(claim.signal != "http-lastmod" for claim in own.past)


def _freshened(own: Signals, claim: QuietClaim, url: str, now: float) -> Signals:
    """``own`` with what a 304 answer (or an unchanged HEAD probe) that makes no quiet
    claim of its own (a 304's ``Cache-Control`` / ``Expires`` reach ``own``) keeps of the
    claim of the copy it validated, from ``now``: the lifetime ``until - claimed_at`` and
    the quiet window. HTTP caches do the same (RFC 9111, Section 4.3.4: a 304 freshens
    the stored response)."""
    if own.not_before or own.quiet:
        return own
    kept = Signals()
    if claim.until is not None and claim.until > claim.claimed_at:
        kept.not_before.append(NotBefore(url, now + (claim.until - claim.claimed_at), QUIET_KIND))
    window = claim.window(url)
    if window is not None:
        kept.quiet.append(window)
    return _joined(own, kept)


class SignalTracker:
    """Apply provider signals to page records and learn whom to trust (see the module).

    :param store: keeps the trust records (as site records); also the page records
        unless ``records`` is given.
    :param params: trust constants (threshold, recover, ...).
    :param autodetect: give pages whose level nobody fixed the level their signals
        support (:setting:`FRESH_PROVIDER_AUTODETECT`).
    :param trust: judge claims at visits and demote hosts (:setting:`FRESH_TRUST`); off,
        every claim is believed.
    :param max_wait_secs: cap on how far a not-before time may push a due time
        (:setting:`FRESH_MAX_REFRESH_SECS`).
    :param records: where :meth:`apply` finds the records signals are about.
    :param key_of: the record key of a URL.
    :param fixed_level: the level a spider or the settings fixed for a record, or None.
    :param host_of: the host of a URL (whose documents' dates are screened together).
    :param stat: ``stat(name, count)``, called for every ``fresh/providers/*`` and
        ``fresh/trust/*`` stat.
    :param on_trust_change: ``(host, kind, demoted, score)`` when a host's signals of
        ``kind`` are demoted (``demoted`` True) or trusted again (kind ``cache``: its
        quiet claims).
    :param rules: the operator's bounds on due times (:setting:`FRESH_SCHEDULE_RULES`):
        a due time a signal gives is bounded as a visit's is.
    """

    def __init__(
        self,
        store: StateStore,
        *,
        params: TrustParams = DEFAULT_TRUST_PARAMS,
        autodetect: bool = True,
        trust: bool = True,
        max_wait_secs: float | None = None,
        records: PageRecords | None = None,
        key_of: Callable[[str], str] = url_key,
        fixed_level: Callable[[PageState], Provider | None] | None = None,
        host_of: Callable[[str], str] = url_host,
        stat: Callable[[str, int], None] = _no_stat,
        on_trust_change: Callable[[str, str, bool, float], None] | None = None,
        rules: ScheduleRules = NO_RULES,
    ) -> None:
        self.store = store
        self.rules = rules
        self.params = params
        self.autodetect = autodetect
        self.trust_enabled = trust
        self.max_wait_secs = max_wait_secs
        self.records: PageRecords = records if records is not None else store
        self.key_of = key_of
        self.fixed_level = fixed_level or (lambda state: None)
        self.host_of = host_of
        self.stat = stat
        self.on_trust_change = on_trust_change
        self.ledger = TrustLedger(store, params)
        self._visits: dict[str, _Visit] = {}
        self._pending: OrderedDict[str, Signals] = OrderedDict()
        #: key -> claims of this run: (kind, time, probability; None for a past update).
        self._claims: OrderedDict[str, list[tuple[str, float, float | None]]] = OrderedDict()
        #: key -> the quiet claim in force until the page's next visit (this run's).
        self._quiet_claims: OrderedDict[str, QuietClaim] = OrderedDict()
        #: host -> [changes, seconds] our visits of its pages saw in this run
        self._host_seen: OrderedDict[str, list[float]] = OrderedDict()
        #: (host, kind) -> its documents' stamped reads in a row (:meth:`_unstamped`), as
        #: kept in the store (None: the last read had real dates)
        self._stamped: OrderedDict[tuple[str, str], StampedReads | None] = OrderedDict()
        #: (host, kind) whose stamped documents were logged in this run
        self._stamp_logged: set[tuple[str, str]] = set()

    # -- visits ------------------------------------------------------------------------

    def visiting(self, key: str) -> bool:
        """Whether a visit of ``key`` is under way (begun and not yet judged)."""
        return key in self._visits

    def before_visit(self, state: PageState) -> None:
        """Remember what ``state`` said before it is fetched (a retry keeps the first)."""
        if state.key in self._visits:
            return
        last = state.last_crawl
        self._visits[state.key] = _Visit(
            last,
            list(state.past_updates),
            list(state.future_updates),
            state.last_modified,
            prev_changes=state.changes,
            prev_watched=0.0 if last is None else max(0.0, last - state.first_seen),
        )

    def add_own(self, key: str, signals: Signals) -> bool:
        """Add signals the page's own response carried; False if no visit is under way."""
        visit = self._visits.get(key)
        if visit is None:
            return False
        if len(signals):  # most answers say nothing of their own page
            visit.own = _joined(visit.own, signals, copy=True)
        return True

    def after_visit(
        self,
        state: PageState,
        outcome: Outcome,
        now: float,
        signals: Signals | None = None,
    ) -> bool:
        """Judge the claims about ``state`` by ``outcome`` (the refresh rule has already
        recorded the visit), then apply its own and held signals.

        ``signals`` are more of the page's own (a spider's ``meta``). The record is not
        written; returns whether its due time or level moved.
        """
        visit = self._visits.pop(state.key, None)
        pending = self._pending.pop(state.key, None)
        if outcome in (Outcome.GONE, Outcome.ERROR):
            return False
        own = Signals() if visit is None else _joined(signals, visit.own)
        if visit is not None:
            since = visit.prev_last_crawl
            claim = (
                self._claim_in_force(state.key, state.host, since) if since is not None else None
            )
            if self.trust_enabled and outcome in _JUDGED:
                self._check_claims(state, outcome, visit, own, now, claim)
            if outcome is Outcome.NOT_MODIFIED and claim is not None:
                own = _freshened(own, claim, state.url, now)
        if pending is not None:
            own = _joined(own, pending)
        before = (state.next_due, state.provider)
        consume_announced(state, now)
        self._absorb(state, own, now, visited=True)
        return (state.next_due, state.provider) != before

    # -- signals about pages -----------------------------------------------------------

    def apply(self, signals: Signals, now: float) -> list[PageState]:
        """Write ``signals`` into the records they are about (held for unknown pages);
        return the records that changed, already written to :attr:`records`."""
        if self.trust_enabled:
            signals = self._unstamped(signals, now)
        key_of = self.key_of
        by_key: dict[str, Signals] = {}
        for url in signals.urls():
            by_key[key_of(url)] = Signals()
        for signal in signals.past:
            by_key[key_of(signal.url)].past.append(signal)
        for announced in signals.announced:
            by_key[key_of(announced.url)].announced.append(announced)
        for not_before in signals.not_before:
            by_key[key_of(not_before.url)].not_before.append(not_before)
        for quiet in signals.quiet:
            by_key[key_of(quiet.url)].quiet.append(quiet)
        if not by_key:
            return []
        states = self.records.get_many(by_key)
        changed: list[PageState] = []
        for key, own in by_key.items():
            state = states.get(key)
            if state is None:
                self._hold(key, own)
                continue
            before = (
                state.next_due,
                state.provider,
                len(state.past_updates),
                list(state.future_updates),
            )
            self._absorb(state, own, now, visited=False)
            if (
                state.next_due,
                state.provider,
                len(state.past_updates),
                state.future_updates,
            ) != before:
                changed.append(state)
        if changed:
            self.records.put_many(changed)
            self.stat("fresh/providers/records_updated", len(changed))
        return changed

    def _unstamped(self, signals: Signals, now: float) -> Signals:
        """``signals`` without the dates of documents that date every entry at the time
        they are read (:func:`~scrapy_fresh.policy.trust.stamps_read_time`), two reads in
        a row: such dates say nothing about the pages (a sitemap generated on request,
        stamping every URL with "now"). Grouped by host and kind, so one call may carry
        several hosts' documents (the simulator reads them all in one cycle)."""
        groups: dict[tuple[str, str], list[PastUpdate]] = {}
        for claim in signals.past:
            if claim.signal in STAMP_KINDS:
                groups.setdefault((self.host_of(claim.url), claim.signal), []).append(claim)
        dropped: set[tuple[str, str]] = set()
        for group, claims in groups.items():
            stamped = stamps_read_time((c.when for c in claims), now)
            before = self._stamp_state(group)
            if not stamped:
                if before is not None:  # real dates: believed again
                    self._put_stamp_state(group, None)
                continue
            if before is not None and now - before.read_at <= STAMP_TOLERANCE_SECS:
                reads, entries = before.reads, before.entries  # the same read again
            else:
                reads = 1 if before is None else before.reads + 1
                entries = stamped if before is None else before.entries + stamped
                self._put_stamp_state(group, StampedReads(reads, entries, now))
            if reads < 2 or entries < STAMP_MIN_ENTRIES:
                continue
            dropped.add(group)
            self.stat("fresh/providers/stamped", len(claims))
            # a structural refutation, in full: no visit needed (policy.trust)
            self._observe(group[0], group[1], Evidence.REFUTED)
            if group not in self._stamp_logged:
                self._stamp_logged.add(group)
                self.stat("fresh/providers/stamping", 1)
                host, kind = group
                logger.warning(
                    "The %s of %s dates every entry at the time it is read (%d reads in a "
                    "row, %d entries): its dates say nothing about its pages and are "
                    "ignored while it does so.",
                    kind,
                    host,
                    reads,
                    entries,
                )
        if not dropped:
            return signals
        host_of = self.host_of
        kept = [
            c
            for c in signals.past
            if c.signal not in STAMP_KINDS or (host_of(c.url), c.signal) not in dropped
        ]
        return Signals(
            past=kept,
            announced=signals.announced,
            quiet=signals.quiet,
            not_before=signals.not_before,
            sitemaps=signals.sitemaps,
            report=signals.report,
        )

    def _stamp_state(self, group: tuple[str, str]) -> StampedReads | None:
        """The stamped reads in a row of ``group``'s documents, from the store the first
        time (a cycle crawl reads a sitemap once per run)."""
        if group in self._stamped:
            self._stamped.move_to_end(group)
            return self._stamped[group]
        value = self.store.get_meta(STAMPED_NAMESPACE, group_key(group))
        state = None if value is None else StampedReads.from_meta(value)
        if len(self._stamped) >= MAX_HOST_RATES:
            self._stamped.popitem(last=False)
        self._stamped[group] = state
        return state

    def _put_stamp_state(self, group: tuple[str, str], state: StampedReads | None) -> None:
        self._stamped[group] = state
        if state is None:
            self.store.delete_meta(STAMPED_NAMESPACE, group_key(group))
        else:
            value = {"reads": state.reads, "entries": state.entries, "read_at": state.read_at}
            self.store.put_meta(STAMPED_NAMESPACE, group_key(group), value)

    def _caught(self, host: str) -> set[str]:
        """The announced kinds whose claims ``host`` must earn: all of them once any
        other kind of its signals is demoted (:func:`~scrapy_fresh.policy.trust.announced_probability`)."""
        ledger = self.ledger
        demoted = {k for k in ledger.kinds_in_use(host) if not ledger.trusted(host, k)}
        return {k for k in FUTURE_KINDS if demoted - {k}}

    def _hold(self, key: str, signals: Signals) -> None:
        held = self._pending.get(key)
        if held is None:
            if len(self._pending) >= MAX_PENDING:
                self._pending.popitem(last=False)
                self.stat("fresh/providers/pending_dropped", 1)
            self._pending[key] = held = Signals()
            self.stat("fresh/providers/pending", 1)
        held.extend(signals)

    def _remember(self, key: str, claims: list[tuple[str, float, float | None]]) -> None:
        if not claims:  # most visits: no entry, which would only push real claims out
            return
        known = self._claims.get(key)
        if known is None:
            if len(self._claims) >= MAX_CLAIMS:
                self._claims.popitem(last=False)
            self._claims[key] = known = []
        known.extend(claims)
        del known[:-MAX_CLAIMS_PER_PAGE]

    # -- judging claims ----------------------------------------------------------------

    def _check_claims(
        self,
        state: PageState,
        outcome: Outcome,
        visit: _Visit,
        own: Signals,
        now: float,
        quiet: QuietClaim | None = None,
    ) -> None:
        """Trust evidence from one judged visit (see :mod:`scrapy_fresh.policy.trust`)."""
        since = visit.prev_last_crawl
        if since is None:
            return
        host = state.host
        changed = outcome is Outcome.CHANGED
        ledger = self.ledger
        remembered = self._claims.pop(state.key, None)
        new_lm = parse_http_date(state.last_modified)
        past: dict[str, float] = {}
        future: dict[str, float] = {}
        # Most visits have no claim to judge: none remembered from this run, no update
        # on record from an earlier one, no date of the page's own but Last-Modified
        # (judged below).
        if remembered or visit.prev_past or visit.prev_future or _dated(own):
            past, future = self._claims_made(
                host, visit, own, remembered or [], since, now, new_lm
            )
        verdict = Evidence.CONFIRMED if changed else Evidence.REFUTED
        chance = self._chance(host, visit, changed, now - since)
        for kind, weight in sorted({**past, **future}.items()):
            self._observe(host, kind, verdict, weight, chance)
        if changed and not past:
            for kind in ledger.kinds_in_use(host, PAST_KINDS):
                entry = ledger.get(host, kind)
                if entry is not None and entry.last_claim_at > since:
                    self._observe(host, kind, Evidence.MISSED)
        # the page's own Last-Modified (a 304's tells nothing: not read)
        not_modified = outcome is Outcome.NOT_MODIFIED
        old_lm = None if not_modified else parse_http_date(visit.prev_last_modified)
        if old_lm is not None and new_lm is not None:
            if new_lm > old_lm:
                self._observe(
                    host,
                    "http-lastmod",
                    Evidence.CONFIRMED if changed else Evidence.REFUTED,
                    chance=chance,
                )
            elif changed:
                self._observe(host, "http-lastmod", Evidence.MISSED)
        # the quiet claim (max-age, Expires, ttl, skipHours/Days) made for this interval
        if quiet is not None:
            self._check_quiet(host, quiet, changed, since, now, new_lm, chance)

    def _claims_made(
        self,
        host: str,
        visit: _Visit,
        own: Signals,
        remembered: list[tuple[str, float, float | None]],
        since: float,
        now: float,
        new_lm: float | None,
    ) -> tuple[dict[str, float], dict[str, float]]:
        """The kinds of the claims about a page that its visit at ``now`` judges (those
        about ``(since, now]``, since its last crawl), each with the observation's
        weight: past updates (1), then announced ones."""
        ledger = self.ledger
        window = [(k, t, p) for k, t, p in remembered if since < t <= now]
        explained = {t for _, t, _ in window}
        # past updates claimed for this page since the last crawl, by kind
        past: dict[str, float] = {k: 1.0 for k, _, p in window if p is None}
        for claim in own.past:  # the page's own dates, read in this very visit
            if claim.signal != "http-lastmod" and since < claim.when <= now:
                past[claim.signal] = 1.0
        if any(since < t <= now and t != new_lm and t not in explained for t in visit.prev_past):
            for kind in ledger.kinds_in_use(host, PAST_KINDS):  # claims of an earlier run
                past.setdefault(kind, 1.0)
        # announced updates that were due by now, by kind: judged together, the chance
        # that at least one of the distinct instants came true (policy.trust,
        # any_announced), which is also the observation's weight
        instants: dict[str, dict[float, float]] = {}
        for k, t, p in window:
            if p is not None:
                at = instants.setdefault(k, {})
                at[t] = max(p, at.get(t, 0.0))
        future = {k: any_announced(at.values()) for k, at in instants.items()}
        earlier: dict[float, float] = {}
        for t, p in visit.prev_future:
            if since < t <= now and t not in explained:
                earlier[t] = max(p, earlier.get(t, 0.0))
        if earlier:
            for kind in ledger.kinds_in_use(host, FUTURE_KINDS):  # claims of an earlier run
                future.setdefault(kind, any_announced(earlier.values()))
        return past, future

    def _claim_in_force(self, key: str, host: str, since: float) -> QuietClaim | None:
        """The quiet claim made about ``key`` since its crawl at ``since`` that reached
        past the page's own due time: this run's, or one kept in the store by an earlier
        run (read only for hosts that make quiet claims)."""
        claim = self._quiet_claims.pop(key, None)
        if claim is None and self.ledger.get(host, QUIET_KIND) is not None:
            claim = self.ledger.quiet_claim(key)
        if claim is None or claim.claimed_at < since:
            return None  # a claim about an earlier interval, judged then
        if not claim.reaches_past(claim.own_due):
            return None  # it kept the page from nothing: not judged
        return claim

    def _check_quiet(
        self,
        host: str,
        claim: QuietClaim,
        changed: bool,
        since: float,
        now: float,
        last_modified: float | None,
        chance: float,
    ) -> None:
        """Judge the quiet ``claim`` about the interval ``(since, now]`` this visit
        covered (:func:`~scrapy_fresh.policy.trust.observe_quiet`): a change inside the
        claimed quiet time breaks it, none keeps it."""
        if now <= since:
            return
        fraction = min(1.0, claim.quiet_secs(since, now) / (now - since))
        if fraction <= 0.0:
            return
        if changed and last_modified is not None and since < last_modified <= now:
            if not claim.is_quiet(last_modified):
                return  # the newest change came when the claim allowed it: no news
            fraction = 1.0  # Last-Modified puts a change inside the quiet time
        if changed and fraction < 1.0:
            return  # it may have come after the quiet time: no news (policy.trust)
        before, after = self.ledger.observe_quiet(host, fraction, changed, chance)
        self.stat("fresh/trust/refuted" if changed else "fresh/trust/confirmed", 1)
        self.stat("fresh/trust/quiet/broken" if changed else "fresh/trust/quiet/kept", 1)
        self._trust_moved(host, QUIET_KIND, before, after)

    def _chance(self, host: str, visit: _Visit, changed: bool, elapsed: float) -> float:
        """How likely the page changed in the ``elapsed`` seconds since its last crawl
        anyway: a change it would have made without the claim confirms the claim less
        (:func:`scrapy_fresh.policy.trust.observe`). From the changes the page's own
        visits found; until they found one, from those the visits of the host's pages
        found in this run (as a new page's refresh rule starts from its site's, Sharma &
        Dixit's cold start). Then counts this visit for the host."""
        seen = self._host_seen.get(host)
        if seen is None:
            if len(self._host_seen) >= MAX_HOST_RATES:
                self._host_seen.popitem(last=False)
            seen = self._host_seen[host] = [0.0, 0.0]
        else:
            self._host_seen.move_to_end(host)
        if visit.prev_changes > 0:
            chance = change_chance(visit.prev_changes, visit.prev_watched, elapsed)
        else:
            chance = change_chance(seen[0], seen[1], elapsed)
        seen[0] += changed
        seen[1] += elapsed
        return chance

    def _observe(
        self, host: str, kind: str, evidence: Evidence, weight: float = 1.0, chance: float = 0.0
    ) -> None:
        before, after = self.ledger.observe(host, kind, evidence, weight, chance)
        self.stat(f"fresh/trust/{evidence.value}", 1)
        self._trust_moved(host, kind, before, after)

    def _trust_moved(self, host: str, kind: str, before: bool, after: bool) -> None:
        if after == before:
            return
        self.stat("fresh/trust/demoted" if after else "fresh/trust/restored", 1)
        if kind == QUIET_KIND:
            self.stat("fresh/trust/quiet/demoted" if after else "fresh/trust/quiet/restored", 1)
        if self.on_trust_change is not None:
            self.on_trust_change(host, kind, after, self.ledger.score(host, kind))

    # -- writing signals into one record -----------------------------------------------

    def _quiet_claim(
        self, state: PageState, signals: Signals, now: float, *, visited: bool
    ) -> QuietClaim | None:
        """The quiet claim in force for ``state`` until its next visit, given ``signals``
        (all about it): a visit's answer replaces the claim, signals between visits add
        to it. A claim that reaches past the page's own due time is also kept in the
        store (with trust on) for the next visit to judge, maybe in a later run."""
        key = state.key
        held = self._quiet_claims.get(key)
        if visited:
            held = None  # the claim about the interval before the visit was judged
            self._quiet_claims.pop(key, None)
        elif (
            held is not None
            and state.last_crawl is not None
            and (held.claimed_at < state.last_crawl)
        ):
            held = None
        if not (signals.not_before or signals.quiet):
            return held
        until = max((n.when for n in signals.not_before), default=None)
        window = signals.quiet[-1] if signals.quiet else None
        own_due = held.own_due if held is not None else state.next_due
        claimed_at = now
        if held is not None and held.until is not None and held.until >= now:
            # still quiet by the earlier claim: one quiet time from then on
            claimed_at = held.claimed_at
            until = held.until if until is None else max(until, held.until)
        claim = QuietClaim(
            claimed_at=claimed_at,
            own_due=own_due,
            until=until,
            hours=window.hours if window is not None else held.hours if held else frozenset(),
            days=window.days if window is not None else held.days if held else frozenset(),
        )
        if state.last_crawl is None:
            return None
        if len(self._quiet_claims) >= MAX_CLAIMS:
            self._quiet_claims.popitem(last=False)
        self._quiet_claims[key] = claim
        if claim.reaches_past(own_due):  # else nothing to defer: nothing to judge
            self.stat("fresh/providers/quiet/claims", 1)
            if self.trust_enabled:
                self.ledger.put_quiet_claim(key, claim)
        return claim

    def _absorb(self, state: PageState, signals: Signals, now: float, *, visited: bool) -> None:
        """Put ``signals`` (all about ``state``) into it; set its level and due time."""
        if len(signals):  # most visits carry none: nothing to note, remember or add
            self._take(state, signals, now)
        cache_ok = self.ledger.trusted(state.host, QUIET_KIND)
        claim = self._quiet_claim(state, signals, now, visited=visited)
        self._place(
            state,
            claim if cache_ok else None,
            now,
            cache_ok=cache_ok,
            # a not-before time moves the due time when it is said (later signals start
            # from the due time it gave); a quiet window holds until the next visit
            fresh_claim=bool(signals.not_before),
            visited=visited,
        )

    def _take(self, state: PageState, signals: Signals, now: float) -> None:
        """Note ``signals``' kinds for the host, remember their claims to judge at the
        next visit, and add the trusted past and announced updates to ``state``. (A
        page's own ``http-lastmod`` date is only noted: its visits judge and record it by
        the record's ``Last-Modified``.)"""
        host = state.host
        ledger = self.ledger
        kinds = {
            s.signal
            for said in (signals.past, signals.announced, signals.not_before, signals.quiet)
            for s in said
        }
        for kind in sorted(kinds):
            # when a claim came matters for the claims about other pages (a change
            # without one since the visit before is a miss), not for a page's own
            ledger.claimed(host, kind, now, when=kind in PAST_KINDS)
            self.stat(f"fresh/providers/claims/{kind}", 1)
            if not ledger.trusted(host, kind):
                self.stat("fresh/providers/untrusted_claims", 1)
        self._remember(
            state.key,
            [(s.signal, s.when, None) for s in signals.past if s.signal != "http-lastmod"]
            + [(a.signal, a.when, a.probability) for a in signals.announced],
        )
        # Claims of a demoted kind are remembered above (to be checked), not used.
        past = [
            s.when
            for s in signals.past
            if s.signal != "http-lastmod" and ledger.trusted(host, s.signal)
        ]
        if past:  # none: add_past would add nothing
            add_past(state, past)
        if signals.announced:  # none: add_announced would add nothing
            self._take_announced(state, signals, now)

    def _take_announced(self, state: PageState, signals: Signals, now: float) -> None:
        """Add ``signals``' announced updates (all about ``state``) to it."""
        host = state.host
        ledger = self.ledger
        # announced updates at P_update = trust x probability, or, for a host caught
        # publishing false signals of another kind, only the trust they earned
        # (policy.trust.announced_probability); believed as announced with trust off:
        # nothing is judged, every claim is taken at its word
        caught = self._caught(host) if self.trust_enabled else set()
        announced = [
            (
                a.when,
                announced_probability(
                    a.probability,
                    ledger.record(host, a.signal),
                    self.params,
                    caught=a.signal in caught,
                )
                if self.trust_enabled
                else a.probability,
            )
            for a in signals.announced
            if ledger.trusted(host, a.signal)
        ]
        if self.trust_enabled:
            # An upcoming instant announced again is weighed by the trust of now, not
            # kept at the most its host was ever believed: once the host is caught or
            # the kind demoted, its re-announced instants drop out (P = 0 says nothing).
            said = {a.when for a in signals.announced}
            state.future_updates = [
                (t, p) for t, p in state.future_updates if t <= now or t not in said
            ]
            announced = [(t, p) for t, p in announced if p > 0.0]
        add_announced(state, announced, now)

    def _kinds_trusted(self, host: str) -> tuple[bool, bool]:
        """Whether ``host``'s past updates and its announced ones are to be used: some
        kind of each it sends is trusted, or it sends none of that kind."""
        ledger = self.ledger
        used = ledger.kinds_in_use(host)
        past = [k for k in used if k in _PAST_OR_LASTMOD]
        future = [k for k in used if k in FUTURE_KINDS]
        past_ok = not past or any(ledger.trusted(host, k) for k in past)
        future_ok = not future or any(ledger.trusted(host, k) for k in future)
        return past_ok, future_ok

    def _place(
        self,
        state: PageState,
        quiet: QuietClaim | None,
        now: float,
        *,
        cache_ok: bool,
        fresh_claim: bool,
        visited: bool,
    ) -> None:
        """Set the level ``state``'s updates on record earn and its due time, given the
        quiet claim in force (None: none, or its host's quiet claims are not trusted);
        ``fresh_claim``: a not-before time was said now."""
        host = state.host
        ledger = self.ledger
        # Without updates on record neither the level (detected_level) nor the due time
        # (signal_due: use_past, use_future) depends on trust: nothing to read.
        past_ok = future_ok = True
        if state.past_updates or state.future_updates:
            past_ok, future_ok = self._kinds_trusted(host)
        fixed = self.fixed_level(state)
        if fixed is None and self.autodetect:
            level = detected_level(state, now, past_trusted=past_ok, future_trusted=future_ok)
            if level is not state.provider:
                self.stat(f"fresh/providers/level/{level.value}", 1)
                state.provider = level
        elif fixed is not None:
            state.provider = fixed
        if state.provider is Provider.NORMAL and not (cache_ok and self.autodetect):
            return
        if state.status is Status.GONE or (not visited and state.last_crawl is None):
            return
        use_past = state.provider is not Provider.NORMAL and past_ok
        use_future = state.provider is Provider.SUPER and future_ok
        # a quiet claim defers the page by the share of the claimed time its host earned
        # (believed in full without trust: nothing would ever be judged); without one the
        # share is not used
        weight = ledger.quiet_weight(host) if self.trust_enabled and quiet is not None else 1.0
        due = signal_due(
            state,
            now,
            not_before=quiet.until if quiet is not None and fresh_claim else None,
            quiet=quiet.window(state.url) if quiet is not None else None,
            use_past=use_past,
            use_future=use_future,
            max_wait_secs=self.max_wait_secs,
            quiet_weight=weight,
            own_due=quiet.own_due if quiet is not None else None,
        )
        if quiet is not None and weight > 0.0 and due > max(quiet.own_due, state.next_due):
            self.stat("fresh/providers/quiet/deferred", 1)
        if due <= now < state.next_due:
            self.stat("fresh/providers/due_now", 1)
        state.next_due = self.rules.due(state.url, state.host, state.last_crawl, due)
