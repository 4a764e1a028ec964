"""The crawl's one door to page records outside a visit: discovery and leasing.

A page record has two kinds of fields. Its *visit fields* (``last_crawl``, ``visits``,
``changes``, ``p_c``, ``fingerprint``, validators, ``next_due``...) are written only by
the visit that holds the page's lease (:meth:`VisitRecorder.record_fetch
<scrapy_fresh.crawl.visits.VisitRecorder.record_fetch>` and ``record_outcome``). What a
*sighting* of the URL says (a spider's request: its rebuild data, the provider level it
names, its popularity) is merged here, into the record as the store has it at that
moment, and nothing else of it is written: whatever the order of sightings and visits, a
committed visit is never overwritten by a copy read before it (DESIGN.md, invariants;
the stores refuse such writes as a second line, ``regressions_refused``).

:class:`CrawlRecords` also keeps the run's new records until they are written in one
batch (``add_many``), and the keys this run is done with (:attr:`CrawlRecords.settled`),
so that a URL seen again in the same run is a duplicate, as Scrapy's dupefilter makes it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.store.base import PageState, Provider, Status

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from scrapy_fresh.store.base import StateStore

__all__ = ["NEW_RECORD_BATCH", "SETTLED_MAX", "CrawlRecords", "Sighting"]

logger = logging.getLogger(__name__)

#: New records written to the store in one call (see :meth:`CrawlRecords.add`).
NEW_RECORD_BATCH = 512
#: Keys remembered as done with in one run; past this the memory is cleared (a URL
#: seen again is then looked up in the store: slower, never wrong).
SETTLED_MAX = 2_000_000


@dataclass
class Sighting:
    """What one request says about its page: the discovery fields of its record.

    ``info`` builds the request's rebuild data relative to a record URL
    (:func:`~scrapy_fresh.crawl.requestinfo.request_info`); ``provider`` is the level the
    request, the spider or the settings give (None: the record keeps its own);
    ``accesses`` the popularity the request names, if any.
    """

    info: Callable[[str], dict[str, Any]]
    provider: Callable[[Provider], Provider]
    accesses: int | None = None
    _infos: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def info_for(self, url: str) -> dict[str, Any]:
        info = self._infos.get(url)
        if info is None:
            info = self._infos[url] = self.info(url)
        return info

    def apply(self, state: PageState) -> bool:
        """Set ``state``'s discovery fields from this sighting; return whether any changed."""
        changed = False
        info = self.info_for(state.url)
        if info != state.request:
            state.request = info
            changed = True
        provider = self.provider(state.provider)
        if provider is not state.provider:
            state.provider = provider
            changed = True
        if self.accesses is not None and self.accesses != state.access_count:
            state.access_count = self.accesses
            changed = True
        return changed


class CrawlRecords:
    """Page records outside a visit: new ones queued, sightings merged, leases taken.

    :param store: called for the store (opened on first use).
    :param error: called as ``error(action, exc, url)`` on a store failure (logged,
        counted; the crawl goes on).
    """

    def __init__(
        self,
        store: Callable[[], StateStore],
        error: Callable[[str, Exception, str], None],
    ) -> None:
        self._store = store
        self._error = error
        #: New records not written yet, by key.
        self.pending: dict[str, PageState] = {}
        #: Keys this run is done with: visited, or seen and not due (not fetched again
        #: in this run; a sighting of one is a duplicate).
        self.settled: set[str] = set()
        #: Called with the queued new records the store knew already (see :meth:`flush`).
        self.known_listeners: list[Callable[[list[PageState]], None]] = []
        #: Called with the keys of new records a store failure kept out (not fetched).
        self.dropped_listeners: list[Callable[[str], object]] = []

    @property
    def store(self) -> StateStore:
        return self._store()

    def lookup(self, key: str) -> PageState | None:
        """The record of ``key``: a queued new one, else the store's (which may raise)."""
        state = self.pending.get(key)
        return state if state is not None else self.store.get(key)

    def settle(self, key: str) -> None:
        """This run is done with ``key``: a later sighting in the run is a duplicate."""
        if len(self.settled) >= SETTLED_MAX:
            self.settled.clear()
        self.settled.add(key)

    def add(self, state: PageState) -> None:
        """Queue a new record; it is written with up to :data:`NEW_RECORD_BATCH` others
        in one call, at the latest before any visit is recorded (:meth:`flush`), so the
        links a page yields are in the store before the page's own visit is."""
        self.pending[state.key] = state
        if len(self.pending) >= NEW_RECORD_BATCH:
            self.flush()

    def flush(self) -> bool:
        """Write the queued new records (``add_many``: a record the store has already is
        left as it is, and the known listeners get the queued copies to sort out).
        Returns False, keeping them, if the store failed."""
        if not self.pending:
            return True
        records = list(self.pending.values())
        try:
            added = set(self.store.add_many(records))
        except StoreError as exc:
            self._error(f"add {len(records)} new records to", exc, "")
            return False
        except (ValueError, TypeError):  # a record the store cannot take: find it
            added = set()
            for record in records:
                try:
                    added.update(self.store.add_many([record]))
                except (ValueError, TypeError) as exc:  # noqa: PERF203  # rare path
                    self._error("add", exc, record.url)
                    added.add(record.key)
                    for drop in list(self.dropped_listeners):
                        drop(record.key)  # not fetched: it could not be recorded
                except StoreError as exc:
                    self._error("add", exc, record.url)
                    return False
        self.pending.clear()
        if len(added) < len(records):
            known = [r for r in records if r.key not in added]
            for listener in list(self.known_listeners):
                listener(known)
        return True

    def merge(self, state: PageState, seen: Sighting) -> bool:
        """Merge a sighting into the record of ``state.key`` (``state`` gets it too).

        A queued new record takes it in memory. A stored one is read again and only its
        discovery fields are written: never a visit field of a copy read earlier.
        Returns whether anything changed.
        """
        if not seen.apply(state):
            return False
        if self.pending.get(state.key) is state:
            return True
        try:
            current = self.store.get(state.key)
            if current is not None and seen.apply(current):
                self.store.put(current)
        except StoreError as exc:
            self._error("update", exc, state.url)
        return True

    def set_provider(self, states: Iterable[tuple[PageState, Provider]]) -> None:
        """Give stored records another provider level (discovery field only)."""
        for state, provider in states:
            state.provider = provider
            try:
                current = self.store.get(state.key)
                if current is not None and current.provider is not provider:
                    current.provider = provider
                    self.store.put(current)
            except StoreError as exc:
                self._error("update", exc, state.url)

    def take(self, states: list[PageState], now: float) -> bool:
        """Mark records in flight for this run's leases (the status alone is written);
        False if the store failed (nothing leased)."""
        stored: list[str] = []
        for state in states:
            state.status = Status.IN_FLIGHT
            state.in_flight_since = now
            if self.pending.get(state.key) is not state:
                stored.append(state.key)
        if not stored:
            return True
        try:
            self.store.mark_in_flight(stored, now)
        except StoreError as exc:
            self._error("lease", exc, states[0].url if states else "")
            return False
        return True
