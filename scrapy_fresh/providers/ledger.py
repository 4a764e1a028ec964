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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from scrapy_fresh.policy.trust import (
    DEFAULT_TRUST_PARAMS,
    Evidence,
    TrustParams,
    TrustRecord,
    observe,
    trust_score,
)
from scrapy_fresh.providers.signals import SIGNAL_KINDS
from scrapy_fresh.store.base import SiteState, StateStore

__all__ = [
    "TRUST_PREFIX",
    "HostTrust",
    "TrustLedger",
    "is_trust_site",
    "iter_trust",
    "trust_site_key",
]

#: Prefix of the site keys that hold trust records.
TRUST_PREFIX = "trust/"


def trust_site_key(host: str, kind: str) -> str:
    """The site key of ``host``'s trust in signals of ``kind``.

    >>> trust_site_key("example.com", "sitemap")
    'trust/sitemap/example.com'
    """
    return f"{TRUST_PREFIX}{kind}/{host}"


def is_trust_site(host: str) -> bool:
    """Whether a site record's ``host`` is really a trust record."""
    return host.startswith(TRUST_PREFIX)


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

    def claimed(self, host: str, kind: str, now: float) -> None:
        """Note that ``host`` sent a claim of ``kind`` at ``now`` (creates the record)."""
        entry = self.get(host, kind)
        if entry is None:
            entry = self._cache[(host, kind)] = HostTrust(host, kind, TrustRecord(), now)
        elif now <= entry.last_claim_at:
            return
        entry.last_claim_at = now
        self.store.put_site(entry.to_site())

    def observe(
        self, host: str, kind: str, evidence: Evidence, weight: float = 1.0, chance: float = 0.0
    ) -> tuple[bool, bool]:
        """Add one observation (:func:`~scrapy_fresh.policy.trust.observe`); return
        (demoted before, demoted after)."""
        entry = self.get(host, kind)
        if entry is None:
            entry = self._cache[(host, kind)] = HostTrust(host, kind, TrustRecord())
        before = entry.record.demoted
        entry.record = observe(entry.record, evidence, self.params, weight, chance)
        self.store.put_site(entry.to_site())
        return before, entry.record.demoted

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
