"""Trust records per host and signal kind, kept in the store beside the site records.

The :class:`~scrapy_fresh.store.base.StateStore` protocol has page and site records
only; a trust record (:class:`~scrapy_fresh.policy.trust.TrustRecord`) is stored as a
:class:`~scrapy_fresh.store.base.SiteState` whose ``host`` is ``trust/<kind>/<host>``
(a ``/`` never occurs in a host name, so it cannot collide with a real site) and whose
fields hold:

=================  ==============================================
``visits``         observations (evidence events)
``changes``        1 if the host's signals of this kind are demoted
``p_c``            confirmed evidence weight (decayed)
``refresh_secs``   refuted evidence weight (decayed)
``updated_at``     when a claim of this kind was last received
=================  ==============================================

So every backend keeps trust without a schema change, in the same transactions as the
rest of the crawl state. A record exists once the host has sent a claim of that kind:
its existence says the host *uses* that kind of signal.

A quiet claim that reaches past a page's own due time (:class:`QuietClaim`: a
``max-age``, ``Expires`` or ``<ttl>`` later than the refresh rule's due time, or a
``<skipHours>``/``<skipDays>`` window that due time falls in) is judged at the page's
next visit (:func:`~scrapy_fresh.policy.trust.observe_quiet`), which may come in a later
run. It is kept the same way, as a site record ``quiet/<page key>``:

=================  ==============================================
``updated_at``     when the claim was made
``p_c``            the page's own due time then (the refresh rule's)
``refresh_secs``   the claimed not-before time (None: a window only)
``checks``         ``hours`` and ``days`` of the quiet window, as bit masks
=================  ==============================================

One record per page whose claims ever reached that far, overwritten by its next such
claim; a record older than the page's last crawl is stale and ignored, so none needs
deleting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

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
from scrapy_fresh.store.base import SiteState, StateStore

__all__ = [
    "QUIET_KIND",
    "QUIET_PREFIX",
    "TRUST_PREFIX",
    "HostTrust",
    "QuietClaim",
    "TrustLedger",
    "is_ledger_site",
    "is_trust_site",
    "iter_trust",
    "quiet_site_key",
    "trust_site_key",
]

#: Prefix of the site keys that hold trust records.
TRUST_PREFIX = "trust/"
#: Prefix of the site keys that hold a page's quiet claim (:class:`QuietClaim`).
QUIET_PREFIX = "quiet/"
#: The signal kind of quiet claims (``max-age``, ``Expires``, ``<ttl>``, skip windows).
QUIET_KIND = "cache"


def quiet_site_key(key: str) -> str:
    """The site key of the quiet claim about the page of record key ``key``.

    >>> quiet_site_key("ab12")
    'quiet/ab12'
    """
    return f"{QUIET_PREFIX}{key}"


def _mask(values: frozenset[int]) -> int:
    return sum(1 << v for v in values)


def _unmask(mask: int, width: int) -> frozenset[int]:
    return frozenset(v for v in range(width) if mask >> v & 1)


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
    >>> QuietClaim.from_site(c.to_site("ab12")) == c
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

    def to_site(self, key: str) -> SiteState:
        return SiteState(
            quiet_site_key(key),
            p_c=self.own_due,
            refresh_secs=self.until,
            updated_at=self.claimed_at,
            checks={"hours": _mask(self.hours), "days": _mask(self.days)},
        )

    @classmethod
    def from_site(cls, site: SiteState) -> QuietClaim | None:
        if not site.host.startswith(QUIET_PREFIX):
            return None
        checks = site.checks or {}
        return cls(
            claimed_at=float(site.updated_at),
            own_due=float(site.p_c),
            until=None if site.refresh_secs is None else float(site.refresh_secs),
            hours=_unmask(int(checks.get("hours", 0)), 24),
            days=_unmask(int(checks.get("days", 0)), 7),
        )


def trust_site_key(host: str, kind: str) -> str:
    """The site key of ``host``'s trust in signals of ``kind``.

    >>> trust_site_key("example.com", "sitemap")
    'trust/sitemap/example.com'
    """
    return f"{TRUST_PREFIX}{kind}/{host}"


def is_trust_site(host: str) -> bool:
    """Whether a site record's ``host`` is really a trust record."""
    return host.startswith(TRUST_PREFIX)


def is_ledger_site(host: str) -> bool:
    """Whether a site record is the ledger's (trust or quiet claim), not a real host's.

    >>> is_ledger_site("trust/sitemap/example.com"), is_ledger_site("example.com")
    (True, False)
    """
    return host.startswith((TRUST_PREFIX, QUIET_PREFIX))


@dataclass
class HostTrust:
    """One host's trust in one kind of signal, as stored."""

    host: str
    kind: str
    record: TrustRecord
    last_claim_at: float = 0.0

    def to_site(self) -> SiteState:
        r = self.record
        return SiteState(
            trust_site_key(self.host, self.kind),
            visits=r.observations,
            changes=int(r.demoted),
            p_c=r.confirmed,
            refresh_secs=r.refuted,
            updated_at=self.last_claim_at,
        )

    @classmethod
    def from_site(cls, site: SiteState) -> HostTrust | None:
        if not is_trust_site(site.host):
            return None
        kind, sep, host = site.host[len(TRUST_PREFIX) :].partition("/")
        if not sep or kind not in SIGNAL_KINDS:
            return None
        record = TrustRecord(
            confirmed=max(0.0, float(site.p_c)),
            refuted=max(0.0, float(site.refresh_secs or 0.0)),
            demoted=bool(site.changes),
            observations=max(0, int(site.visits)),
        )
        return cls(host, kind, record, float(site.updated_at))


class TrustLedger:
    """Read-through, write-through cache of the trust records of one store."""

    def __init__(self, store: StateStore, params: TrustParams = DEFAULT_TRUST_PARAMS) -> None:
        self.store = store
        self.params = params
        self._cache: dict[tuple[str, str], HostTrust | None] = {}

    def get(self, host: str, kind: str) -> HostTrust | None:
        """The trust of ``host`` in ``kind``, or None if it never sent such a claim."""
        key = (host, kind)
        if key not in self._cache:
            site = self.store.get_site(trust_site_key(host, kind))
            self._cache[key] = HostTrust.from_site(site) if site is not None else None
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
        """The kinds among ``kinds`` that ``host`` has sent claims of."""
        return [k for k in kinds if self.get(host, k) is not None]

    def _update(
        self, host: str, kind: str, change: Callable[[HostTrust, bool], bool]
    ) -> HostTrust:
        """Apply ``change(entry, new)`` (True: write it) to the trust record and write it.

        A store with ``update_site`` (the shared Redis store,
        :meth:`~scrapy_fresh.distributed.shared.OutageSafeStore.update_site`) runs ``change`` on
        the stored record by compare-and-set, so that the evidence several workers add
        to one host's record concurrently all counts; other stores write the cached
        record (one process owns it)."""
        update = getattr(self.store, "update_site", None)
        if update is None:
            entry = self.get(host, kind)
            new = entry is None
            if entry is None:
                entry = self._cache[(host, kind)] = HostTrust(host, kind, TrustRecord())
            if change(entry, new):
                self.store.put_site(entry.to_site())
            return entry
        seen: list[HostTrust] = []

        def apply(site: SiteState | None) -> SiteState | None:
            found = HostTrust.from_site(site) if site is not None else None
            entry = found or HostTrust(host, kind, TrustRecord())
            seen[:] = [entry]
            return entry.to_site() if change(entry, found is None) else None

        update(trust_site_key(host, kind), apply)
        self._cache[(host, kind)] = seen[0]
        return seen[0]

    def claimed(self, host: str, kind: str, now: float) -> None:
        """Note that ``host`` sent a claim of ``kind`` at ``now`` (creates the record)."""

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
        site = self.store.get_site(quiet_site_key(key))
        return QuietClaim.from_site(site) if site is not None else None

    def put_quiet_claim(self, key: str, claim: QuietClaim) -> None:
        """Keep ``claim`` for the next visit of the page of record key ``key`` (with
        ``update_site``, unless a later claim is stored already)."""
        update = getattr(self.store, "update_site", None)
        if update is None:
            self.store.put_site(claim.to_site(key))
            return

        def change(site: SiteState | None) -> SiteState | None:
            if site is not None and site.updated_at > claim.claimed_at:
                return None
            return claim.to_site(key)

        update(quiet_site_key(key), change)

    def score(self, host: str, kind: str) -> float:
        return trust_score(self.record(host, kind), self.params)

    def forget_cache(self) -> None:
        """Drop cached records (another process may have written)."""
        self._cache.clear()


def iter_trust(store: StateStore) -> Iterator[HostTrust]:
    """Every trust record of ``store`` (for ``scrapy-fresh status``)."""
    for site in store.sites():
        entry = HostTrust.from_site(site)
        if entry is not None:
            yield entry
