"""The URL record (:class:`PageState`), the per-site record (:class:`SiteState`) and
the :class:`StateStore` protocol that every backend implements.

Stores deal in records and keys only, never in Scrapy ``Request``/``Response``
objects. Everything a record holds is JSON-serialisable (:meth:`PageState.to_dict`);
nothing is pickled.

The record follows Sharma & Dixit (seed ``sharma-dixit-self-adjusting-refresh-time``,
Section III, the URL record: doc id, refresh time, last crawl time, status, p_l, p_g,
fingerprint key) extended with what the conditional check (validators), the provider
levels of Xu et al. (past and announced future updates, access counts) and the
WebFountain change bucket need.
"""

from __future__ import annotations

import base64
import enum
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from scrapy_fresh.default_settings import FRESH_DEFAULT_REFRESH_SECS
from scrapy_fresh.policy.refresh import DEFAULT_P_G, DEFAULT_P_L

if TYPE_CHECKING:
    from types import TracebackType

    from typing_extensions import Self

    from scrapy_fresh.outcome import Outcome

__all__ = [
    "DUE_STATUSES",
    "MAX_FUTURE_UPDATES",
    "MAX_PAST_UPDATES",
    "ClosingStore",
    "CommitHookStore",
    "DueCursorStore",
    "LeasedVisitStore",
    "MetaChange",
    "PageState",
    "Provider",
    "SiteState",
    "StateStore",
    "Status",
    "moves_back",
    "regresses",
]

#: A change of one meta record (:meth:`StateStore.update_meta`): the stored value (None:
#: there is none) to the new one (None: leave it as it is).
MetaChange = Callable[[dict[str, Any] | None], dict[str, Any] | None]

#: At most this many known past update times are kept per record (newest kept).
MAX_PAST_UPDATES = 32
#: At most this many announced future updates are kept per record (earliest kept).
MAX_FUTURE_UPDATES = 32


class Status(str, enum.Enum):
    """Where a record stands in the crawl cycle."""

    #: Known but never fetched: waits in the discovery stream.
    QUEUED = "queued"
    #: Handed to the downloader; a crash leaves it here until it is released.
    IN_FLIGHT = "in_flight"
    #: Fetched at least once; waits for its next due time.
    IDLE = "idle"
    #: Confirmed gone (404/410); kept so that it is not rediscovered as new, and checked
    #: again after a back-off that doubles each time it is still gone.
    GONE = "gone"


#: Statuses whose records come due (a gone page is checked again after a back-off).
DUE_STATUSES = frozenset({Status.QUEUED, Status.IDLE, Status.GONE})


class Provider(str, enum.Enum):
    """Content-provider levels of Xu et al. (Section 3): what the crawler knows of updates."""

    #: Only what the crawler's own visits show.
    NORMAL = "normal"
    #: Past update times are known (Last-Modified, sitemap lastmod, feeds, pushes).
    SMART = "smart"
    #: Future update times are announced, each with a probability.
    SUPER = "super"


def _bounded_past(times: Iterable[float]) -> list[float]:
    return sorted(float(t) for t in times)[-MAX_PAST_UPDATES:]


def _bounded_future(updates: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    return sorted((float(t), float(p)) for t, p in updates)[:MAX_FUTURE_UPDATES]


@dataclass
class PageState:
    """The persistent record of one canonical URL.

    ``key`` is :func:`scrapy_fresh.keys.url_key` of the URL (Scrapy's request
    fingerprint). Times are Unix seconds (floats). ``fingerprint`` is an unsigned
    64-bit simhash (:mod:`scrapy_fresh.fingerprint.shingles`); ``field_hashes`` and
    ``content_hash`` are what the change verdict compares (:mod:`scrapy_fresh.fingerprint.verdict`). ``request`` holds what is needed
    to rebuild the request (``url``, ``method``, ``callback`` name, a JSON-safe
    ``meta`` subset, ``priority``) as plain JSON data.
    """

    key: str
    url: str
    host: str = ""
    doc_id: int = 0
    status: Status = Status.QUEUED
    provider: Provider = Provider.NORMAL
    first_seen: float = 0.0
    last_crawl: float | None = None
    next_due: float = 0.0
    in_flight_since: float | None = None
    refresh_secs: float = FRESH_DEFAULT_REFRESH_SECS
    p_l: float = DEFAULT_P_L
    p_g: float = DEFAULT_P_G
    visits: int = 0
    changes: int = 0
    p_c: float = 0.0
    change_bucket: int = 0
    change_rate: float | None = None
    errors: int = 0
    fingerprint: int | None = None
    etag: str | None = None
    last_modified: str | None = None
    content_length: int | None = None
    access_count: int = 0
    past_updates: list[float] = field(default_factory=list)
    future_updates: list[tuple[float, float]] = field(default_factory=list)
    request: dict[str, Any] = field(default_factory=dict)
    #: Per item the page yielded at its last visit, in order: the 64-bit hash of each
    #: counted field (:func:`scrapy_fresh.fingerprint.itemfields.item_hashes`). Empty for a page
    #: judged without items.
    field_hashes: list[dict[str, int]] = field(default_factory=list)
    #: Exact 64-bit digest of the page's normalised main content at its last visit, for
    #: pages judged without items (:class:`scrapy_fresh.fingerprint.verdict.PageContent`); None if
    #: the page was not judged by a digest.
    content_hash: int | None = None
    #: The items of the page's last visit, zlib-compressed JSON
    #: (:func:`scrapy_fresh.changes.compare.pack_items`), kept when :setting:`FRESH_KEEP_ITEMS`
    #: is True so that the next change can tell the previous values; None otherwise.
    kept_items: bytes | None = None

    # SQLiteStore rebuilds records it checked and normalised itself without calling
    # __init__ (sqlite._decode): keep __post_init__ to checks and normalisation.
    def __post_init__(self) -> None:
        # (a member as given is kept: an Enum call costs thousands of instructions,
        # and a crawl makes a record per new URL)
        if type(self.status) is not Status:
            self.status = Status(self.status)
        if type(self.provider) is not Provider:
            self.provider = Provider(self.provider)
        if not 0 <= self.change_bucket <= 255:
            raise ValueError(
                f"change_bucket ({self.change_bucket!r}) must fit in one byte (0..255)."
            )
        if self.fingerprint is not None and not 0 <= self.fingerprint < 1 << 64:
            raise ValueError(
                f"fingerprint ({self.fingerprint!r}) must be an unsigned 64-bit integer."
            )
        if self.kept_items is not None and not isinstance(self.kept_items, bytes):
            raise TypeError(f"kept_items ({self.kept_items!r:.60}) must be bytes or None.")
        if self.content_hash is not None and not 0 <= self.content_hash < 1 << 64:
            raise ValueError(
                f"content_hash ({self.content_hash!r}) must be an unsigned 64-bit integer."
            )
        # (an empty list needs no sorting; anything else is checked and sorted as given)
        past, future = self.past_updates, self.future_updates
        self.past_updates = [] if type(past) is list and not past else _bounded_past(past)
        self.future_updates = (
            [] if type(future) is list and not future else _bounded_future(future)
        )

    @property
    def is_new(self) -> bool:
        """True while the URL has never been fetched (it belongs to the discovery stream)."""
        return self.visits == 0

    def add_past_update(self, when: float) -> None:
        """Remember a known past update time, keeping the newest :data:`MAX_PAST_UPDATES`."""
        self.past_updates = _bounded_past([*self.past_updates, when])

    def add_future_update(self, when: float, probability: float) -> None:
        """Remember an announced update, keeping the earliest :data:`MAX_FUTURE_UPDATES`."""
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"probability ({probability!r}) must be within [0, 1].")
        self.future_updates = _bounded_future([*self.future_updates, (when, probability)])

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict (enums as their values, tuples as lists,
        ``kept_items`` as base64 text)."""
        data = asdict(self)
        if self.kept_items is not None:
            data["kept_items"] = base64.b64encode(self.kept_items).decode("ascii")
        data["status"] = self.status.value
        data["provider"] = self.provider.value
        data["future_updates"] = [[t, p] for t, p in self.future_updates]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PageState:
        """Build a record from :meth:`to_dict` output; unknown keys are ignored."""
        names = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        if "future_updates" in kwargs:
            kwargs["future_updates"] = [(t, p) for t, p in kwargs["future_updates"]]
        if "field_hashes" in kwargs:
            kwargs["field_hashes"] = [dict(h) for h in kwargs["field_hashes"]]
        if isinstance(kwargs.get("kept_items"), str):
            kwargs["kept_items"] = base64.b64decode(kwargs["kept_items"])
        return cls(**kwargs)


def regresses(stored: PageState, incoming: PageState) -> bool:
    """Whether writing ``incoming`` over ``stored`` would move the record back in time.

    A visit only ever moves ``visits`` and ``last_crawl`` forward (Sharma & Dixit's
    record: the last crawl time and the counts behind p_c, Section III), so a write with
    fewer visits or an older (or no) last crawl carries an older state of the record:
    a copy read before a visit was committed. Stores refuse such writes and count them
    (``regressions_refused``); in a correct crawl none is ever made.

    >>> old = PageState("0" * 40, "u", visits=2, last_crawl=50.0)
    >>> regresses(old, PageState("0" * 40, "u", visits=2, last_crawl=40.0))
    True
    >>> regresses(old, PageState("0" * 40, "u", visits=3, last_crawl=60.0))
    False
    """
    return moves_back((stored.visits, stored.last_crawl), (incoming.visits, incoming.last_crawl))


def moves_back(stored: tuple[int, float | None], incoming: tuple[int, float | None]) -> bool:
    """:func:`regresses` on ``(visits, last_crawl)`` pairs (what the stores compare: the
    SQLite store's waiting rows, its upsert's guard).

    >>> moves_back((2, 50.0), (2, 40.0)), moves_back((2, 50.0), (3, 60.0))
    (True, False)
    """
    visits, last = stored
    if incoming[0] < visits:
        return True
    return last is not None and (incoming[1] is None or incoming[1] < last)


@dataclass
class SiteState:
    """Aggregates of one host: the cold start of its new URLs (Sharma & Dixit p_c per site).

    ``visits`` and ``changes`` add up the visits of the host's pages; ``p_c`` is the
    site's (possibly decayed) degree of success and ``refresh_secs`` the refresh time
    a new URL of this host starts from. ``checks`` holds counters of how the host has
    answered validators (:class:`scrapy_fresh.validators.HostChecks`), so that what one
    run learned (conditionals ignored, ETags that change on every answer or lie) holds
    in the next.
    """

    host: str
    visits: int = 0
    changes: int = 0
    p_c: float = 0.0
    refresh_secs: float | None = None
    updated_at: float = 0.0
    checks: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SiteState:
        """Build a site record from :meth:`to_dict` output; unknown keys are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


class ClosingStore:
    """``with store: ...`` closes the store at the end (a base of the stores here)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@runtime_checkable
class StateStore(Protocol):
    """What every URL state store offers. Backends: memory (reference), SQLite (default).

    Semantics shared by all backends (the contract tests in ``tests/store_contract.py``
    check them):

    * One record per key. Keys are 40-character lower-case hex SHA-1 strings
      (:func:`scrapy_fresh.keys.url_key`); any other key raises ValueError.
    * ``put``/``put_many`` insert or replace whole records (upsert). An existing record
      keeps its ``doc_id`` whatever the new one says. A new record with ``doc_id`` 0
      gets one higher than every doc_id the store has given so far (doc ids are never
      reused; there may be gaps); a new record with a non-zero ``doc_id`` keeps it,
      unless another record has it (:class:`~scrapy_fresh.exceptions.StoreError`).
      The records passed in are not changed: read a record back to learn its doc_id.
    * ``put``/``put_many`` never move a record back: a record that :func:`regresses`
      against the stored one (fewer ``visits``, an older or no ``last_crawl``: a copy
      read before a visit was committed) is not written, the rest of the call is, and
      the store's ``regressions_refused`` counter goes up by one (a warning is logged).
    * ``add_many`` inserts only records whose key is absent and returns their keys, in
      input order (the first of duplicate keys wins); existing records are left
      untouched (discovery of a known URL changes nothing).
    * Records are copied in and out: changing a record after ``put`` or after ``get``
      changes nothing in the store until it is put again.
    * Each write call is all-or-nothing: a bad record (ValueError or TypeError: a NaN
      time, a fingerprint outside 0..2**64-1, an integer beyond 64 bits, a non-JSON
      ``request``, an unknown status) or a store failure leaves no part of the call
      behind. Lists are bounded as :class:`PageState` bounds them, and JSON data comes
      back as JSON gives it (tuples as lists).
    * ``due(now, limit)`` returns up to ``limit`` records with status queued, idle or gone
      (a gone page is checked again after a back-off) and
      ``next_due <= now``, most urgent (earliest ``next_due``, then key) first.
    * ``mark_in_flight`` sets status in-flight with ``in_flight_since = now``;
      ``release_in_flight`` puts in-flight records (all, or those leased before
      ``older_than``) back to queued/idle so a crashed run loses nothing.
    * ``make_due(keys, now)`` moves the ``next_due`` of the queued or idle records of
      ``keys`` that are due later than ``now`` to ``now`` (nothing else changes; in
      flight and gone records are left alone) and returns their keys: safe while a crawl
      runs, a visit committed meanwhile is never overwritten.
    * ``block_host``/``unblock_host``/``blocked_hosts`` keep the hosts an operator
      blocked (``scrapy-fresh block``), with when; a crawl sends no request to them.
    * Meta records are what the crawl learns beside pages and sites (trust in a host's
      signals, quiet claims, the run cadence): JSON objects under a ``namespace``
      (lower-case letters, digits, ``_``, ``-``, ``.``; 1-64 characters) and a ``key``
      (a non-empty string of at most 1024 characters, no NUL). ``put_meta`` inserts or
      replaces one, ``delete_meta`` removes it, ``meta(namespace)`` yields every
      ``(key, value)`` of a namespace once (ordered by key), and ``update_meta`` runs
      ``change(value)`` on the stored value and writes what it returns (None: nothing)
      atomically: a backend shared by processes (Redis) runs it again on the new value
      when another process wrote in between, so ``change`` must compute from its
      argument only. Values are copied in and out as a JSON round trip would; a value
      JSON cannot hold (NaN, bytes, a non-object) raises ValueError or TypeError and
      writes nothing. Meta records are neither page nor site records: ``len``,
      ``iterate`` and ``sites`` never show them.
    * Writes are durable once the call returns (after ``flush`` for batched backends).
      Failures of the store itself raise :class:`~scrapy_fresh.exceptions.StoreError`;
      so does any call after ``close``.
    """

    def get(self, key: str) -> PageState | None:
        """Return the record of ``key``, or None if there is none."""
        ...

    def get_many(self, keys: Iterable[str]) -> dict[str, PageState]:
        """Return the records of ``keys`` that exist, by key (missing keys are left out)."""
        ...

    def put(self, state: PageState) -> None:
        """Insert or replace the record of ``state.key``."""
        ...

    def put_many(self, states: Iterable[PageState]) -> None:
        """Insert or replace records, all of them or (on an error) none."""
        ...

    def add_many(self, states: Iterable[PageState]) -> list[str]:
        """Insert the records whose key is absent; return their keys in input order."""
        ...

    def delete(self, key: str) -> bool:
        """Remove the record of ``key``; return whether there was one."""
        ...

    def due(self, now: float, limit: int) -> list[PageState]:
        """Return up to ``limit`` (0 or more) queued, idle or gone records with
        ``next_due <= now``.

        Ordered by ``next_due``, then key. The records stay where they are: mark them
        in flight to take them out of later results.
        """
        ...

    def next_due_time(self) -> float | None:
        """Return the earliest ``next_due`` of a queued, idle or gone record, or None."""
        ...

    def count_due(self, now: float) -> int:
        """Return how many queued, idle or gone records have ``next_due <= now`` (the
        backlog)."""
        ...

    def mark_in_flight(self, keys: Iterable[str], now: float) -> None:
        """Set status in-flight and ``in_flight_since = now``; unknown keys are ignored."""
        ...

    def release_in_flight(self, older_than: float | None = None) -> int:
        """Put in-flight records back: queued if never visited, else idle; return how many.

        :param older_than: release only the records with ``in_flight_since`` before this
            time (strictly) or unset; None releases all of them.
        """
        ...

    def make_due(self, keys: Iterable[str], now: float) -> list[str]:
        """Make the queued or idle records of ``keys`` due at ``now`` (if due later);
        return the keys changed, in input order."""
        ...

    def block_host(self, host: str, now: float) -> bool:
        """Block ``host`` from ``now`` on; return False if it was blocked already."""
        ...

    def unblock_host(self, host: str) -> bool:
        """Unblock ``host``; return whether it was blocked."""
        ...

    def blocked_hosts(self) -> dict[str, float]:
        """Return the blocked hosts, each with when it was blocked."""
        ...

    def counts(self) -> dict[Status, int]:
        """Return the number of records per status, every status present (0 if none)."""
        ...

    def iterate(self, batch_size: int = 1000) -> Iterator[PageState]:
        """Yield every record once, reading ``batch_size`` (1 or more) at a time.

        The order is the backend's. Records written during the iteration never come
        twice; records added during it may or may not come.
        """
        ...

    def __len__(self) -> int:
        """Return the number of page records (site records are not counted)."""
        ...

    def get_site(self, host: str) -> SiteState | None:
        """Return the site record of ``host``, or None."""
        ...

    def put_site(self, site: SiteState) -> None:
        """Insert or replace the site record of ``site.host``."""
        ...

    def sites(self) -> Iterator[SiteState]:
        """Yield every site record once."""
        ...

    def get_meta(self, namespace: str, key: str) -> dict[str, Any] | None:
        """Return the meta record ``key`` of ``namespace``, or None."""
        ...

    def put_meta(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        """Insert or replace the meta record ``key`` of ``namespace``."""
        ...

    def update_meta(self, namespace: str, key: str, change: MetaChange) -> dict[str, Any] | None:
        """Write ``change(stored value)`` unless it is None, atomically; return what was
        written (None: nothing)."""
        ...

    def delete_meta(self, namespace: str, key: str) -> bool:
        """Remove the meta record ``key`` of ``namespace``; return whether there was one."""
        ...

    def meta(self, namespace: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield every ``(key, value)`` of ``namespace`` once, by key."""
        ...

    def flush(self) -> None:
        """Make every write so far durable (commit what a batching backend holds)."""
        ...

    def close(self) -> None:
        """Flush and release the store; closing again does nothing."""
        ...


@runtime_checkable
class DueCursorStore(Protocol):
    """A store that can page through its due records (optional; memory and SQLite do).

    :class:`~scrapy_fresh.crawl.scheduler.FreshScheduler` reads a cycle's due records in
    batches with it, so that a run never holds every due record at once. A store
    without it is read with :meth:`StateStore.iterate` instead (every record, the
    backend's order).
    """

    def due_after(
        self, now: float, after: tuple[float, str] | None, limit: int
    ) -> list[PageState]:
        """Return up to ``limit`` queued, idle or gone records with ``next_due <= now`` that
        come after ``after`` in due order.

        Due order is :meth:`StateStore.due`'s: ``(next_due, key)`` ascending; ``after``
        is the ``(next_due, key)`` of the last record of the previous page (None: from
        the start), and only records strictly after it are returned; fewer than
        ``limit`` means there are no more. Paging on from the last record returned
        yields each record at most once while nothing is written; a record whose
        ``next_due`` changes between calls comes again if its new place is after the
        cursor (callers filter what they have seen).
        """
        ...


@runtime_checkable
class CommitHookStore(Protocol):
    """A store that makes its writes visible in batches (optional; SQLite does, above all
    when it writes behind: :setting:`FRESH_COMMIT_SECS`).

    It calls each of :attr:`before_commit` just before it commits, so that what must
    never lag the store can be written out then and buffered in between: the visit log
    (:mod:`scrapy_fresh.crawl.visitlog`) holds its lines until the store commits the
    visits they tell. A store without it is taken to write each call at once.
    """

    #: Called, in order, before each commit; a callable that raises is logged and the
    #: commit goes on.
    before_commit: list[Callable[[], None]]


@runtime_checkable
class LeasedVisitStore(Protocol):
    """A store shared by several crawl processes that writes each visit under the lease
    of its URL (optional; the Redis store does: see
    :meth:`~scrapy_fresh.distributed.shared.OutageSafeStore.commit_visit`).

    The crawl's runtime writes a visit through :meth:`commit_visit` when the store has
    it, so that a worker whose lease ran out writes nothing, and concurrent visits to one
    host all count in its site record.
    """

    def commit_visit(
        self, state: PageState, outcome: Outcome,
        apply: Callable[[PageState, SiteState], None], *,
        lost: Callable[[], None] | None = None, retried: Callable[[int], None] | None = None,
    ) -> bool:  # fmt: skip
        """Apply the visit (``apply(record, site)``) to the stored record and its site
        and write both, if this worker still holds the URL's lease. Returns False,
        writing nothing, if the lease was lost (``lost()`` is then called)."""
        ...
