"""Trust records per host and signal kind, kept in the store as meta records.

A trust record (:class:`~scrapy_fresh.policy.trust.TrustRecord`) is the meta record
(:meth:`~scrapy_fresh.store.base.StateStore.update_meta`) ``<kind>/<host>`` of the
namespace ``trust``:

=================  ==============================================
``observations``   evidence events
``demoted``        whether the host's signals of this kind are demoted
``confirmed``      confirmed evidence weight (decayed)
``refuted``        refuted evidence weight (decayed)
``last_claim_at``  when a claim of this kind was last received
=================  ==============================================

So every backend keeps trust in the same transactions as the rest of the crawl state,
and the shared Redis store updates it by compare-and-set (the evidence several workers
add to one host's record all counts). A record exists once the host has sent a claim of
that kind: its existence says the host *uses* that kind of signal.

A quiet claim that reaches past a page's own due time (:class:`QuietClaim`: a
``max-age``, ``Expires`` or ``<ttl>`` later than the refresh rule's due time, or a
``<skipHours>``/``<skipDays>`` window that due time falls in) is judged at the page's
next visit (:func:`~scrapy_fresh.policy.trust.observe_quiet`), which may come in a later
run. It is kept as the meta record ``<page key>`` of the namespace ``quiet``:

=================  ==============================================
``claimed_at``     when the claim was made
``own_due``        the page's own due time then (the refresh rule's)
``until``          the claimed not-before time (null: a window only)
``hours``          the quiet window's hours (0-23 UTC)
``days``           the quiet window's days (0 = Monday)
=================  ==============================================

One record per page whose claims ever reached that far, overwritten by its next such
claim; a record older than the page's last crawl is stale and ignored, so none needs
deleting. (Stores written before meta records kept both as site rows ``trust/...`` and
``quiet/...``; opening such a store moves them: :mod:`scrapy_fresh.store._legacy`.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from scrapy_fresh.policy.trust import (
    DEFAULT_TRUST_PARAMS,
    Evidence,
    TrustParams,
    TrustRecord,
    observe,
    observe_quiet,
    quiet_seconds,
    quiet_weight,
    trust_score,
)
from scrapy_fresh.providers.signals import SIGNAL_KINDS, QuietWindow
from scrapy_fresh.store.base import StateStore

__all__ = [
    "QUIET_KIND",
    "QUIET_NAMESPACE",
    "TRUST_NAMESPACE",
    "HostTrust",
    "QuietClaim",
    "TrustLedger",
    "iter_trust",
    "trust_key",
]

#: The meta namespace of trust records (:class:`HostTrust`).
TRUST_NAMESPACE = "trust"
#: The meta namespace of the pages' quiet claims (:class:`QuietClaim`).
QUIET_NAMESPACE = "quiet"
#: The signal kind of quiet claims (``max-age``, ``Expires``, ``<ttl>``, skip windows).
QUIET_KIND = "cache"


def _float(value: Any, default: float = 0.0) -> float:
    """A number read from a meta record (anything else: ``default``)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return default


def _ints(values: Any, width: int) -> frozenset[int]:
    if not isinstance(values, list):
        return frozenset()
    return frozenset(v for v in values if type(v) is int and 0 <= v < width)


@dataclass(frozen=True)
class QuietClaim:
    """What a page's provider said about when the page stays quiet, to be judged at the
    page's next visit (:func:`~scrapy_fresh.policy.trust.observe_quiet`).

    ``claimed_at``: when it was said; ``own_due``: the page's own due time then (the
    refresh rule's, before any signal); ``until``: the not-before time (``max-age``,
    ``Expires``, ``<ttl>``), if any; ``hours`` (0-23 UTC) and ``days`` (0 = Monday):
    the quiet window (``<skipHours>``, ``<skipDays>``), if any.

    >>> c = QuietClaim(100.0, 200.0, until=1100.0)
    >>> c.reaches_past(200.0), c.quiet_secs(100.0, 600.0)
    (True, 500.0)
    >>> QuietClaim.from_meta(c.to_meta()) == c
    True
    """

    claimed_at: float
    own_due: float
    until: float | None = None
    hours: frozenset[int] = frozenset()
    days: frozenset[int] = frozenset()

    def window(self, url: str) -> QuietWindow | None:
        """The quiet window as :func:`~scrapy_fresh.providers.apply.signal_due` takes it."""
        if not (self.hours or self.days):
            return None
        return QuietWindow(url, self.hours, self.days, QUIET_KIND)

    def is_quiet(self, t: float) -> bool:
        """Whether the claim said the page would not change at ``t``."""
        if self.until is not None and self.claimed_at < t <= self.until:
            return True
        return bool(self.hours or self.days) and QuietWindow(
            "", self.hours, self.days, QUIET_KIND
        ).is_quiet(t)

    def reaches_past(self, due: float) -> bool:
        """Whether the claim would keep a page due at ``due`` from being fetched then."""
        if self.until is not None and self.until > due:
            return True
        window = self.window("")
        return window is not None and window.end_of_quiet(due) > due

    def quiet_secs(self, start: float, end: float) -> float:
        """Seconds of ``(start, end]`` the claim said were quiet
        (:func:`~scrapy_fresh.policy.trust.quiet_seconds`)."""
        return quiet_seconds(
            start,
            end,
            claimed_at=self.claimed_at,
            until=self.until,
            hours=self.hours,
            days=self.days,
        )

    def to_meta(self) -> dict[str, Any]:
        """The claim as its meta record's value (the module docstring: the fields)."""
        return {
            "claimed_at": self.claimed_at,
            "own_due": self.own_due,
            "until": self.until,
            "hours": sorted(self.hours),
            "days": sorted(self.days),
        }

    @classmethod
    def from_meta(cls, value: dict[str, Any]) -> QuietClaim:
        until = value.get("until")
        return cls(
            claimed_at=_float(value.get("claimed_at")),
            own_due=_float(value.get("own_due")),
            until=None if until is None else _float(until),
            hours=_ints(value.get("hours"), 24),
            days=_ints(value.get("days"), 7),
        )


def trust_key(host: str, kind: str) -> str:
    """The meta key of ``host``'s trust in signals of ``kind`` (namespace ``trust``).

    >>> trust_key("example.com", "sitemap")
    'sitemap/example.com'
    """
    return f"{kind}/{host}"


@dataclass
class HostTrust:
    """One host's trust in one kind of signal, as stored."""

    host: str
    kind: str
    record: TrustRecord
    last_claim_at: float = 0.0

    def to_meta(self) -> dict[str, Any]:
        """The record as its meta value (the module docstring: the fields)."""
        r = self.record
        return {
            "observations": r.observations,
            "demoted": r.demoted,
            "confirmed": r.confirmed,
            "refuted": r.refuted,
            "last_claim_at": self.last_claim_at,
        }

    @classmethod
    def from_meta(cls, key: str, value: dict[str, Any]) -> HostTrust | None:
        """The record of meta key ``key`` (None: not a known kind's)."""
        kind, sep, host = key.partition("/")
        if not sep or kind not in SIGNAL_KINDS:
            return None
        observations = value.get("observations")
        record = TrustRecord(
            confirmed=max(0.0, _float(value.get("confirmed"))),
            refuted=max(0.0, _float(value.get("refuted"))),
            demoted=value.get("demoted") is True,
            observations=max(0, observations if type(observations) is int else 0),
        )
        return cls(host, kind, record, _float(value.get("last_claim_at")))


class TrustLedger:
    """Read-through, write-through cache of the trust records of one store."""

    def __init__(self, store: StateStore, params: TrustParams = DEFAULT_TRUST_PARAMS) -> None:
        self.store = store
        self.params = params
        self._cache: dict[tuple[str, str], HostTrust | None] = {}
        #: host -> the kinds of :data:`SIGNAL_KINDS` it sends, by the cached records (so
        #: as good as they are until one of the host's is written or the cache dropped)
        self._in_use: dict[str, frozenset[str]] = {}

    def get(self, host: str, kind: str) -> HostTrust | None:
        """The trust of ``host`` in ``kind``, or None if it never sent such a claim."""
        key = (host, kind)
        if key not in self._cache:
            value = self.store.get_meta(TRUST_NAMESPACE, trust_key(host, kind))
            self._cache[key] = (
                None if value is None else HostTrust.from_meta(f"{kind}/{host}", value)
            )
        return self._cache[key]

    def trusted(self, host: str, kind: str) -> bool:
        """Whether ``host``'s claims of ``kind`` are used (unknown hosts are trusted)."""
        entry = self.get(host, kind)
        return entry is None or not entry.record.demoted

    def record(self, host: str, kind: str) -> TrustRecord:
        """The trust record (the prior if there is none)."""
        entry = self.get(host, kind)
        return entry.record if entry is not None else TrustRecord()

    def kinds_in_use(self, host: str, kinds: tuple[str, ...] = SIGNAL_KINDS) -> list[str]:
        """The kinds among ``kinds`` that ``host`` has sent claims of.

        Asked at every visit of a page with updates on record: once every kind's record
        of the host is cached, the answer is kept until one is written (no record is
        read from the store sooner than it would be)."""
        in_use = self._in_use.get(host)
        if in_use is None:
            if kinds != SIGNAL_KINDS:
                return [k for k in kinds if self.get(host, k) is not None]
            in_use = frozenset(k for k in SIGNAL_KINDS if self.get(host, k) is not None)
            self._in_use[host] = in_use
        return [k for k in kinds if k in in_use]

    def _update(
        self, host: str, kind: str, change: Callable[[HostTrust, bool], bool]
    ) -> HostTrust:
        """Apply ``change(entry, new)`` (True: write it) to the stored trust record with
        :meth:`~scrapy_fresh.store.base.StateStore.update_meta`: on the shared Redis store
        it is a compare-and-set, so the evidence several workers add to one host's
        record concurrently all counts."""
        seen: list[HostTrust] = []

        def apply(value: dict[str, Any] | None) -> dict[str, Any] | None:
            found = None if value is None else HostTrust.from_meta(f"{kind}/{host}", value)
            entry = found or HostTrust(host, kind, TrustRecord())
            seen[:] = [entry]
            return entry.to_meta() if change(entry, found is None) else None

        self.store.update_meta(TRUST_NAMESPACE, trust_key(host, kind), apply)
        self._cache[(host, kind)] = seen[0]
        self._in_use.pop(host, None)
        return seen[0]

    def claimed(self, host: str, kind: str, now: float, *, when: bool = True) -> None:
        """Note that ``host`` sent a claim of ``kind`` at ``now`` (creates the record).
        ``when=False``: only that it uses the kind (the record is created, and its
        ``last_claim_at`` not moved on: no write per claim for kinds whose claims are
        judged at their own page's visit)."""
        if not when and self.get(host, kind) is not None:
            return

        def change(entry: HostTrust, new: bool) -> bool:
            if not new and now <= entry.last_claim_at:
                return False
            entry.last_claim_at = now
            return True

        entry = self.get(host, kind)
        if entry is not None and now <= entry.last_claim_at:
            return
        self._update(host, kind, change)

    def observe(
        self, host: str, kind: str, evidence: Evidence, weight: float = 1.0, chance: float = 0.0
    ) -> tuple[bool, bool]:
        """Add one observation (:func:`~scrapy_fresh.policy.trust.observe`); return
        (demoted before, demoted after)."""
        demoted = [False]

        def change(entry: HostTrust, new: bool) -> bool:
            demoted[0] = entry.record.demoted
            entry.record = observe(entry.record, evidence, self.params, weight, chance)
            return True

        entry = self._update(host, kind, change)
        return demoted[0], entry.record.demoted

    def observe_quiet(
        self, host: str, quiet_fraction: float, changed: bool, chance: float = 0.0
    ) -> tuple[bool, bool]:
        """Judge one quiet claim of ``host``
        (:func:`~scrapy_fresh.policy.trust.observe_quiet`); return (demoted before,
        demoted after)."""
        demoted = [False]

        def change(entry: HostTrust, new: bool) -> bool:
            demoted[0] = entry.record.demoted
            entry.record = observe_quiet(
                entry.record, quiet_fraction, changed, self.params, chance
            )
            return True

        entry = self._update(host, QUIET_KIND, change)
        return demoted[0], entry.record.demoted

    def quiet_weight(self, host: str) -> float:
        """The share of a claimed quiet time ``host``'s claims may defer a page by
        (:func:`~scrapy_fresh.policy.trust.quiet_weight`; 0 for a host never judged)."""
        return quiet_weight(self.record(host, QUIET_KIND), self.params)

    def quiet_claim(self, key: str) -> QuietClaim | None:
        """The quiet claim stored for the page of record key ``key``, if any."""
        value = self.store.get_meta(QUIET_NAMESPACE, key)
        return None if value is None else QuietClaim.from_meta(value)

    def put_quiet_claim(self, key: str, claim: QuietClaim) -> None:
        """Keep ``claim`` for the next visit of the page of record key ``key``, unless a
        later claim is stored already."""

        def change(value: dict[str, Any] | None) -> dict[str, Any] | None:
            if value is not None and QuietClaim.from_meta(value).claimed_at > claim.claimed_at:
                return None
            return claim.to_meta()

        self.store.update_meta(QUIET_NAMESPACE, key, change)

    def score(self, host: str, kind: str) -> float:
        return trust_score(self.record(host, kind), self.params)

    def forget_cache(self) -> None:
        """Drop cached records (another process may have written)."""
        self._cache.clear()
        self._in_use.clear()


def iter_trust(store: StateStore) -> Iterator[HostTrust]:
    """Every trust record of ``store`` (for ``scrapy-fresh status``)."""
    for key, value in store.meta(TRUST_NAMESPACE):
        entry = HostTrust.from_meta(key, value)
        if entry is not None:
            yield entry
