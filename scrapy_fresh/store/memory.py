"""The in-memory store: the reference implementation of the store protocol.

:class:`MemoryStore` keeps records in dicts and a due-time heap. It is what the
contract tests compare other backends with, what the simulator and unit tests use,
and a fine choice for short crawls that need no state between runs. Nothing
survives the process.
"""

from __future__ import annotations

import heapq
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.store._checks import (
    DUE_STATUSES,
    WAITING_STATUSES,
    check_host,
    check_key,
    check_limit,
    check_meta_name,
    check_site,
    check_state,
    check_time,
    copy_json,
    decode_meta,
    encode_meta,
    log_regressions,
)
from scrapy_fresh.store.base import ClosingStore, PageState, SiteState, Status, regresses

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from scrapy_fresh.store.base import MetaChange


__all__ = ["MemoryStore"]

logger = logging.getLogger(__name__)


def _copy_site(site: SiteState) -> SiteState:
    return replace(site, checks=dict(site.checks))


def _copy(state: PageState) -> PageState:
    # replace() runs __post_init__, which builds new past/future lists.
    return replace(
        state,
        request=copy_json(state.request),
        field_hashes=[dict(hashes) for hashes in state.field_hashes],
    )


class MemoryStore(ClosingStore):
    """Dict-backed :class:`~scrapy_fresh.store.base.StateStore`: the reference backend.

    Records are copied on the way in and on the way out, so changing a record you
    passed to :meth:`put` or got from :meth:`get` never changes the store. ``due`` and
    ``next_due_time`` use a heap with lazy deletion: ``due(now, limit)`` costs
    O(limit · log n), not a scan of every record. Writes take effect at once;
    :meth:`flush` does nothing. Not thread-safe: use one store from one thread.
    """

    def __init__(self) -> None:
        self._pages: dict[str, PageState] = {}
        self._doc_keys: dict[int, str] = {}
        self._last_doc_id = 0
        self._sites: dict[str, SiteState] = {}
        self._blocked: dict[str, float] = {}
        #: namespace -> key -> the value as JSON text (copied in and out by encoding).
        self._meta: dict[str, dict[str, str]] = {}
        # (next_due, key) entries; an entry is live when the record is due-able with
        # that next_due. Every due-able record has at least one live entry.
        self._heap: list[tuple[float, str]] = []
        self._counts: dict[Status, int] = dict.fromkeys(Status, 0)
        self._closed = False
        #: Writes refused because they would move a record back (see ``regresses``).
        self.regressions_refused = 0

    # -- internals -------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("The MemoryStore is closed; create a new store to use it again.")

    def _live(self, entry: tuple[float, str]) -> bool:
        state = self._pages.get(entry[1])
        return state is not None and state.status in DUE_STATUSES and state.next_due == entry[0]

    def _assign_doc_ids(self, copies: Iterable[PageState]) -> None:
        """Give each new record its doc_id, in order, before anything is stored.

        Existing records keep theirs; a new record keeps an explicit doc_id unless
        another record has it (then the whole batch is refused), and gets one more
        than the highest doc_id ever used otherwise.
        """
        last = self._last_doc_id
        new: dict[str, int] = {}
        taken: dict[int, str] = {}
        for state in copies:
            old = self._pages.get(state.key)
            if old is not None:
                state.doc_id = old.doc_id
            elif state.key in new:
                state.doc_id = new[state.key]
            else:
                if not state.doc_id:
                    state.doc_id = last + 1
                else:
                    owner = self._doc_keys.get(state.doc_id) or taken.get(state.doc_id)
                    if owner is not None:
                        raise StoreError(
                            f"doc_id {state.doc_id} of new record {state.key} is already "
                            f"used by {owner}; pass doc_id=0 to get a new one."
                        )
                new[state.key] = state.doc_id
                taken[state.doc_id] = state.key
                last = max(last, state.doc_id)

    def _store(self, state: PageState) -> None:
        """Insert or replace ``state``: a private copy with its doc_id assigned."""
        old = self._pages.get(state.key)
        if old is not None:
            self._counts[old.status] -= 1
        else:
            self._last_doc_id = max(self._last_doc_id, state.doc_id)
            self._doc_keys[state.doc_id] = state.key
        self._pages[state.key] = state
        self._counts[state.status] += 1
        if state.status in DUE_STATUSES and not (
            old is not None and old.status in DUE_STATUSES and old.next_due == state.next_due
        ):
            heapq.heappush(self._heap, (state.next_due, state.key))
            if len(self._heap) > 2 * len(self._pages) + 1024:
                self._rebuild_heap()

    def _rebuild_heap(self) -> None:
        self._heap = [
            (s.next_due, s.key) for s in self._pages.values() if s.status in DUE_STATUSES
        ]
        heapq.heapify(self._heap)

    def _prune_heap(self) -> None:
        heap = self._heap
        while heap and not self._live(heap[0]):
            heapq.heappop(heap)

    # -- records ---------------------------------------------------------------

    def get(self, key: str) -> PageState | None:
        """Return a copy of the record of ``key``, or None."""
        self._check_open()
        state = self._pages.get(check_key(key))
        return None if state is None else _copy(state)

    def get_many(self, keys: Iterable[str]) -> dict[str, PageState]:
        """Return copies of the records of ``keys`` that exist, by key."""
        self._check_open()
        out: dict[str, PageState] = {}
        for key in keys:
            state = self._pages.get(check_key(key))
            if state is not None:
                out[key] = _copy(state)
        return out

    def put(self, state: PageState) -> None:
        """Insert or replace the record of ``state.key``."""
        self.put_many((state,))

    def put_many(self, states: Iterable[PageState]) -> None:
        """Insert or replace records; all of them or, on a bad record, none."""
        self._check_open()
        copies: list[PageState] = []
        refused: list[PageState] = []
        latest: dict[str, PageState] = {}  # a key written twice in one call: the last wins
        for state in states:
            check_state(state)
            old = latest.get(state.key) or self._pages.get(state.key)
            if old is not None and regresses(old, state):
                refused.append(state)
                continue
            latest[state.key] = state
            copies.append(_copy(state))
        if refused:
            self.regressions_refused += len(refused)
            log_regressions(self, refused)
        self._assign_doc_ids(copies)
        for copy in copies:
            self._store(copy)

    def add_many(self, states: Iterable[PageState]) -> list[str]:
        """Insert the records whose key is absent; return their keys in input order."""
        self._check_open()
        fresh: dict[str, PageState] = {}
        for state in states:
            check_state(state)
            if state.key not in self._pages and state.key not in fresh:
                fresh[state.key] = _copy(state)
        self._assign_doc_ids(fresh.values())
        for copy in fresh.values():
            self._store(copy)
        return list(fresh)

    def delete(self, key: str) -> bool:
        """Remove the record of ``key``; return whether there was one."""
        self._check_open()
        state = self._pages.pop(check_key(key), None)
        if state is None:
            return False
        del self._doc_keys[state.doc_id]
        self._counts[state.status] -= 1
        return True

    # -- scheduling ------------------------------------------------------------

    def due(self, now: float, limit: int) -> list[PageState]:
        """Return up to ``limit`` queued or idle records with ``next_due <= now``, most urgent first."""
        self._check_open()
        check_limit(limit)
        heap = self._heap
        taken: list[tuple[float, str]] = []
        seen: set[str] = set()
        out: list[PageState] = []
        while heap and len(out) < limit and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            if entry[1] in seen or not self._live(entry):
                continue
            seen.add(entry[1])
            taken.append(entry)
            out.append(_copy(self._pages[entry[1]]))
        for entry in taken:
            heapq.heappush(heap, entry)
        return out

    def due_after(
        self, now: float, after: tuple[float, str] | None, limit: int
    ) -> list[PageState]:
        """Return up to ``limit`` queued or idle records with ``next_due <= now`` after
        ``after`` in ``(next_due, key)`` order
        (:class:`~scrapy_fresh.store.base.DueCursorStore`).

        A scan of the heap keeping the ``limit`` smallest entries: O(n log limit) time,
        O(limit) memory.
        """
        self._check_open()
        check_limit(limit)
        out: list[PageState] = []
        cursor = after
        while len(out) < limit:
            want = limit - len(out)
            floor = cursor
            entries = heapq.nsmallest(
                want,
                (
                    e
                    for e in self._heap
                    if e[0] <= now and (floor is None or e > floor) and self._live(e)
                ),
            )
            for entry in entries:  # ascending: a duplicate entry follows its twin
                if cursor is None or entry > cursor:
                    out.append(_copy(self._pages[entry[1]]))
                    cursor = entry
            if len(entries) < want:
                break
        return out

    def next_due_time(self) -> float | None:
        """Return the earliest ``next_due`` of a queued or idle record, or None."""
        self._check_open()
        self._prune_heap()
        return self._heap[0][0] if self._heap else None

    def count_due(self, now: float) -> int:
        """How many queued or idle records are due at ``now`` (a scan)."""
        self._check_open()
        check_time("now", now)
        return sum(s.status in DUE_STATUSES and s.next_due <= now for s in self._pages.values())

    def mark_in_flight(self, keys: Iterable[str], now: float) -> None:
        """Mark the records of ``keys`` in flight since ``now``; unknown keys are ignored."""
        self._check_open()
        check_time("now", now)
        for key in keys:
            state = self._pages.get(check_key(key))
            if state is not None:
                self._counts[state.status] -= 1
                state.status = Status.IN_FLIGHT
                state.in_flight_since = now
                self._counts[Status.IN_FLIGHT] += 1

    def release_in_flight(self, older_than: float | None = None) -> int:
        """Put in-flight records (leased before ``older_than``, or all) back; return how many."""
        self._check_open()
        if older_than is not None:
            check_time("older_than", older_than)
        released = 0
        for state in self._pages.values():
            if state.status is not Status.IN_FLIGHT:
                continue
            since = state.in_flight_since
            if older_than is not None and since is not None and since >= older_than:
                continue
            state.status = Status.QUEUED if state.visits == 0 else Status.IDLE
            state.in_flight_since = None
            self._counts[Status.IN_FLIGHT] -= 1
            self._counts[state.status] += 1
            heapq.heappush(self._heap, (state.next_due, state.key))
            released += 1
        if len(self._heap) > 2 * len(self._pages) + 1024:
            self._rebuild_heap()
        return released

    def counts(self) -> dict[Status, int]:
        """Return the number of records per status (every status, zero included)."""
        self._check_open()
        return dict(self._counts)

    def iterate(self, batch_size: int = 1000) -> Iterator[PageState]:
        """Yield copies of every record in ``doc_id`` order.

        Records added during the iteration may or may not be yielded; deleted ones are
        skipped. ``batch_size`` has no effect here.
        """
        self._check_open()
        if batch_size < 1:
            raise ValueError(f"batch_size ({batch_size!r}) must be 1 or more.")
        return self._iterate()

    def _iterate(self) -> Iterator[PageState]:
        for doc_id in sorted(self._doc_keys):
            self._check_open()
            key = self._doc_keys.get(doc_id)
            if key is not None:
                yield _copy(self._pages[key])

    def __len__(self) -> int:
        self._check_open()
        return len(self._pages)

    # -- operator's controls ---------------------------------------------------

    def make_due(self, keys: Iterable[str], now: float) -> list[str]:
        """Make the queued or idle records of ``keys`` due at ``now``; return their keys."""
        self._check_open()
        check_time("now", now)
        made: list[str] = []
        for key in dict.fromkeys(check_key(k) for k in keys):
            state = self._pages.get(key)
            if state is None or state.status not in WAITING_STATUSES or state.next_due <= now:
                continue
            state.next_due = now
            heapq.heappush(self._heap, (now, key))
            made.append(key)
        return made

    def block_host(self, host: str, now: float) -> bool:
        """Block ``host`` from ``now`` on; False if it was blocked already."""
        self._check_open()
        check_time("now", now)
        if check_host(host) in self._blocked:
            return False
        self._blocked[host] = now
        return True

    def unblock_host(self, host: str) -> bool:
        """Unblock ``host``; return whether it was blocked."""
        self._check_open()
        return self._blocked.pop(check_host(host), None) is not None

    def blocked_hosts(self) -> dict[str, float]:
        """The blocked hosts, with when each was blocked."""
        self._check_open()
        return dict(self._blocked)

    # -- sites -----------------------------------------------------------------

    def get_site(self, host: str) -> SiteState | None:
        """Return a copy of the site record of ``host``, or None."""
        self._check_open()
        site = self._sites.get(host)
        return None if site is None else _copy_site(site)

    def put_site(self, site: SiteState) -> None:
        """Insert or replace the site record of ``site.host``."""
        self._check_open()
        check_site(site)
        self._sites[site.host] = _copy_site(site)

    def sites(self) -> Iterator[SiteState]:
        """Yield copies of every site record, by host."""
        self._check_open()
        return (_copy_site(self._sites[host]) for host in sorted(self._sites))

    # -- meta records ----------------------------------------------------------

    def get_meta(self, namespace: str, key: str) -> dict[str, Any] | None:
        """Return a copy of the meta record ``key`` of ``namespace``, or None."""
        self._check_open()
        check_meta_name(namespace, key)
        text = self._meta.get(namespace, {}).get(key)
        return None if text is None else decode_meta(text)

    def put_meta(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        """Insert or replace the meta record ``key`` of ``namespace``."""
        self._check_open()
        self._meta.setdefault(namespace, {})[key] = encode_meta(namespace, key, value)

    def update_meta(self, namespace: str, key: str, change: MetaChange) -> dict[str, Any] | None:
        """Write ``change(stored value)`` unless it is None; return what was written."""
        new = change(self.get_meta(namespace, key))
        if new is None:
            return None
        self.put_meta(namespace, key, new)
        return decode_meta(self._meta[namespace][key])

    def delete_meta(self, namespace: str, key: str) -> bool:
        """Remove the meta record ``key`` of ``namespace``; return whether there was one."""
        self._check_open()
        check_meta_name(namespace, key)
        return self._meta.get(namespace, {}).pop(key, None) is not None

    def meta(self, namespace: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield copies of every meta record of ``namespace``, by key."""
        self._check_open()
        check_meta_name(namespace, "-")
        records = dict(self._meta.get(namespace, {}))
        return ((key, decode_meta(records[key])) for key in sorted(records))

    # -- lifecycle -------------------------------------------------------------

    def flush(self) -> None:
        """Nothing to do: writes take effect at once."""
        self._check_open()

    def close(self) -> None:
        """Close the store; later calls raise :class:`~scrapy_fresh.exceptions.StoreError`."""
        self._closed = True

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._pages)} records"
        return f"<MemoryStore {state}>"
