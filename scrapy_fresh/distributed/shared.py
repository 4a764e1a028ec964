"""Several crawl processes on one Redis: the shared frontier seen from one worker.

With :setting:`FRESH_STORE` ``"redis"``, :class:`~scrapy_fresh.crawl.scheduler.FreshScheduler`
takes its due pages from the :class:`~scrapy_fresh.distributed.frontier.RedisFrontier`
shared by every worker (a few at a time, leased), instead of loading all due records
into its own frontier: two workers never take the same URL, a dead worker's URLs come
back when their lease runs out, and the per-host delays hold across workers. URLs the
spider yields are written to the store as queued and handed out by the shared frontier
too, so a URL two workers discover is still fetched once.

:class:`OutageSafeStore` keeps a crawl going through a Redis outage: writes that fail
because Redis cannot be reached are kept in memory and written, in order, when it
answers again; reads of leased records fall back to the copy taken with the lease.
A visit of a leased URL is written by :meth:`OutageSafeStore.commit_visit`: only while
this worker still holds the lease, with the site aggregates updated by compare-and-set
(:meth:`~scrapy_fresh.distributed.frontier.RedisFrontier.commit_visits`). Every other
write of a record (provider signals, request data) is a compare-and-set against the
value this worker read (:meth:`~scrapy_fresh.distributed.frontier.RedisFrontier.write_records`),
and a meta record's update (trust, quiet claims) goes through
:meth:`OutageSafeStore.update_meta`.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from typing import TYPE_CHECKING, Any

from scrapy import Request

from scrapy_fresh.config import score_params
from scrapy_fresh.distributed.frontier import (
    MAX_RECORD_TRIES,
    NO_LEASE,
    Leased,
    RedisFrontier,
    merge_write,
    open_redis_store,
)
from scrapy_fresh.distributed.store import RedisStore, decode_record
from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.frontier.frontier import Stream
from scrapy_fresh.store._checks import encode_meta, log_regressions
from scrapy_fresh.store.base import SiteState, Status

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from scrapy_fresh.config import FreshConfig
    from scrapy_fresh.distributed.frontier import Apply
    from scrapy_fresh.outcome import Outcome
    from scrapy_fresh.store.base import MetaChange, PageState, StateStore

__all__ = [
    "FreshStartUrlsMixin",
    "OutageSafeStore",
    "SharedFrontier",
    "is_outage",
    "open_shared_store",
]

logger = logging.getLogger(__name__)

#: First wait after a failed Redis call; doubled per failure up to :data:`MAX_BACKOFF_SECS`.
FIRST_BACKOFF_SECS = 0.5
MAX_BACKOFF_SECS = 5.0
#: URLs a worker takes from the shared frontier at a time.
PULL_BATCH = 64
#: While other workers hold leases, look at the shared frontier this often (seconds).
POLL_SECS = 0.05
#: Stored values of records read or written that a worker keeps as the bases of its
#: next compare-and-set writes (all forgotten when there would be more).
RECORD_CACHE = 100_000
#: Record writes held back while another worker holds the URL are tried again this often
#: (seconds), while the worker pulls.
DEFER_RETRY_SECS = 1.0
#: Record writes a worker holds back at most (beyond: the oldest dropped, counted).
MAX_DEFERRED = 10_000


def _no_stat(name: str, count: int = 1) -> None:
    """The default stats sink: nothing."""


def is_outage(exc: BaseException) -> bool:
    """True if ``exc`` (a StoreError) comes from Redis being unreachable, not from bad data."""
    import redis

    cause = exc.__cause__
    return isinstance(cause, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError))


class _Backoff:
    """Exponential back-off with one log line per outage and one when it ends."""

    def __init__(self, what: str, where: str = "?") -> None:
        self.what = what
        self.where = where
        self.failures = 0
        self.retry_at = 0.0

    def ready(self) -> bool:
        return time.monotonic() >= self.retry_at

    def wait(self) -> float:
        """Seconds until the next try (0: now)."""
        return max(0.0, self.retry_at - time.monotonic())

    def failed(self, exc: BaseException, detail: str = "") -> None:
        wait = min(MAX_BACKOFF_SECS, FIRST_BACKOFF_SECS * 2**self.failures)
        self.failures += 1
        self.retry_at = time.monotonic() + wait
        if self.failures == 1:
            logger.warning(
                "scrapy_fresh: Redis at %(where)s is unreachable (%(exc)s); %(what)s backs off "
                "and retries, %(detail)s",
                {
                    "where": self.where,
                    "exc": exc.__cause__ or exc,
                    "what": self.what,
                    "detail": detail or "nothing lost",
                },
            )

    def succeeded(self) -> None:
        if self.failures:
            logger.warning(
                "scrapy_fresh: Redis at %(where)s answers again; %(what)s carries on after "
                "%(n)d failed tries.",
                {"where": self.where, "what": self.what, "n": self.failures},
            )
        self.failures = 0
        self.retry_at = 0.0


class OutageSafeStore:
    """A :class:`~scrapy_fresh.distributed.store.RedisStore` that outlives Redis outages.

    Writes (``put``, ``put_many``, ``add_many``, ``put_site``, ``mark_in_flight``) that
    fail because Redis is unreachable are kept (copies, in call order) and written before
    the next call once Redis answers; they count as done for the caller, and
    ``add_many`` then reports every record as added. ``get`` of a record leased by this
    worker and ``get_site`` of a site read before fall back to the copies kept. Other
    reads raise :class:`~scrapy_fresh.exceptions.StoreError` as before. :meth:`flush`
    and :meth:`close` wait up to ``outage_wait`` seconds for Redis to take what is kept.

    Records leased by this worker (:attr:`leased`, filled by :class:`SharedFrontier`)
    are written under their lease: a visit with :meth:`commit_visit`, a ``put`` that
    keeps one in flight (new request data) only while the lease is still held. Nothing
    is written for a URL whose lease ran out and went to another worker.

    Every other ``put``/``put_many`` (provider signals moving due times, request data,
    the provider middleware's write after a visit) is a compare-and-set against the
    value this worker last read or wrote for that record: if another worker changed it
    meanwhile, the change is merged into its current value
    (:func:`~scrapy_fresh.distributed.frontier.merge_write`, stat
    ``fresh/redis/record_retries``); a record another worker holds the lease of is not
    written until that visit is (stat ``fresh/redis/record_deferred``; tried again every
    :data:`DEFER_RETRY_SECS` while pulling, dropped at the end of the run if the lease
    is still held: ``fresh/redis/record_dropped``). ``stat(name, count)`` counts them.
    """

    def __init__(
        self, inner: RedisStore, *, outage_wait: float = 60.0,
        stat: Callable[[str, int], None] = _no_stat,
    ) -> None:  # fmt: skip
        self.inner = inner
        self.outage_wait = outage_wait
        self.pending: list[tuple[str, tuple[Any, ...]]] = []
        #: Records leased by this worker, with their lease tokens, until their visit is written.
        self.leased: dict[str, tuple[PageState, str]] = {}
        self._sites: dict[str, SiteState] = {}
        #: ``"<namespace>/<key>"`` -> the meta record as this worker last saw it.
        self._meta: dict[str, dict[str, Any]] = {}
        self._backoff = _Backoff("the store", inner.where)
        #: Writes the visits (lease-checked, sites by compare-and-set).
        self.frontier = RedisFrontier(inner)
        self.frontier.written = {}
        self.stat = stat
        #: key -> the record's stored value as this worker last read or wrote it.
        self._raw: dict[str, bytes] = {}
        #: key -> (stored value, record) of writes held back: another worker has the URL.
        self.deferred: dict[str, tuple[bytes | None, PageState]] = {}
        self._deferred_at = 0.0

    def backoff_wait(self) -> float:
        """Seconds until this store tries Redis again after a failure (0: now)."""
        return self._backoff.wait()

    @property
    def regressions_refused(self) -> int:
        """Writes the store refused because they would move a record back."""
        return self.inner.regressions_refused

    # -- the write queue ---------------------------------------------------------------

    def replay(self) -> bool:
        """Write what an outage kept; return True when nothing is left. Then try again
        (at most every :data:`DEFER_RETRY_SECS`) the record writes held back while other
        workers held their URLs."""
        while self.pending:
            method, args = self.pending[0]
            try:
                self._target(method)(*args)
            except StoreError as exc:
                if not is_outage(exc):
                    logger.error(
                        "scrapy_fresh: a write kept during a Redis outage failed: %(exc)s",
                        {"exc": exc},
                    )
                    self.pending.pop(0)
                    continue
                self._backoff.failed(exc)
                return False
            self.pending.pop(0)
        self._backoff.succeeded()
        if self.deferred and time.monotonic() >= self._deferred_at + DEFER_RETRY_SECS:
            self._deferred_at = time.monotonic()
            try:
                self._write_deferred()
            except StoreError as exc:
                if not is_outage(exc):
                    raise
                self._backoff.failed(exc)
                return False
        return True

    def _before(self) -> None:
        if self.pending and self._backoff.ready():
            self.replay()

    def _target(self, method: str) -> Callable[..., Any]:
        """A write kept as ``method``: the inner store's, or (``_name``) one of ours."""
        target: Callable[..., Any] = getattr(self if method[0] == "_" else self.inner, method)
        return target

    def _write(self, method: str, *args: Any) -> Any:
        self._before()
        if not self.pending:
            try:
                result = self._target(method)(*args)
            except StoreError as exc:
                if not is_outage(exc):
                    raise
                self._backoff.failed(exc, "keeping the writes in memory until it is back")
            else:
                self._backoff.succeeded()
                return result
        self.pending.append((method, copy.deepcopy(args)))
        return None

    def _read(self, method: str, *args: Any) -> Any:
        self._before()
        return getattr(self.inner, method)(*args)

    # -- the StateStore protocol --------------------------------------------------------

    def get(self, key: str) -> PageState | None:
        kept = self.leased.get(key)
        if kept is not None:  # leased by this worker: nobody else changes it meanwhile
            return copy.deepcopy(kept[0])
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, PageState]:
        """Read records, keeping their stored values as the bases of their next writes."""
        found: dict[str, tuple[PageState, bytes]] = self._read("read_records", list(keys))
        self._remember({key: raw for key, (_, raw) in found.items()})
        return {key: state for key, (state, _) in found.items()}

    def _remember(self, values: dict[str, bytes]) -> None:
        raw = self._raw
        if len(raw) + len(values) > RECORD_CACHE:
            raw.clear()
        raw.update(values)

    def put(self, state: PageState) -> None:
        self.put_many([state])

    def put_many(self, states: Iterable[PageState]) -> None:
        """Write records; one this worker leased and that stays in flight is written only
        while the lease is held (:meth:`RedisFrontier.update_leased
        <scrapy_fresh.distributed.frontier.RedisFrontier.update_leased>`); one it
        leased and that leaves flight is written as it is (its lease ends with it); any
        other by compare-and-set (see the class docstring)."""
        plain: list[PageState] = []
        own: list[PageState] = []
        for state in states:
            kept = self.leased.get(state.key)
            if kept is not None and state.status is Status.IN_FLIGHT:
                self.leased[state.key] = (copy.deepcopy(state), kept[1])
                self._write("_update_leased", state, kept[1])
            elif kept is not None:  # this worker ends its own lease: nobody else writes it
                del self.leased[state.key]
                own.append(state)
            else:
                plain.append(state)
        if own:
            self._write("put_many", own)
        if plain:
            self._write("_write_records", plain)

    def _write_records(self, states: list[PageState]) -> None:
        """Write records by compare-and-set against the values this worker last saw
        (see the class docstring); a write behind one held back waits behind it."""
        deferred = self.deferred
        writes: list[tuple[bytes | None, PageState]] = []
        for state in states:
            if state.key in deferred:  # still held back: this one builds on it
                raw, earlier = deferred[state.key]
                base = self._raw.get(state.key)
                merged = merge_write(
                    None if base is None else decode_record(bytes.fromhex(state.key), base),
                    state,
                    earlier,
                )
                deferred[state.key] = (raw, merged)
                continue
            writes.append((self._raw.get(state.key), state))
        if writes:
            self._apply_writes(writes)

    def _write_deferred(self) -> None:
        writes = list(self.deferred.values())
        self.deferred.clear()
        self._apply_writes(writes, again=True)

    def _apply_writes(
        self, writes: list[tuple[bytes | None, PageState]], *, again: bool = False
    ) -> None:
        frontier = self.frontier
        before = frontier.record_retries
        try:
            results = frontier.write_records(writes)
        finally:
            if frontier.record_retries > before:
                self.stat("fresh/redis/record_retries", frontier.record_retries - before)
        absent: list[PageState] = []
        for (raw, _), (code, value, record) in zip(writes, results, strict=True):
            key = record.key
            if code == 1 and value is not None:
                self._remember({key: value})
            elif code == -4:
                if len(self.deferred) >= MAX_DEFERRED:
                    self.deferred.pop(next(iter(self.deferred)))
                    self.stat("fresh/redis/record_dropped", 1)
                self.deferred[key] = (value, record)
                if not again:
                    self.stat("fresh/redis/record_deferred", 1)
            elif code == -5:  # an older state of the record: never written
                self.inner.regressions_refused += 1
                log_regressions(self, [record])
            elif code == 0 and raw is None:
                absent.append(record)  # never read: a new record
            else:
                self._raw.pop(key, None)
                if code == -2:
                    self.stat("fresh/redis/record_dropped", 1)
                    logger.warning(
                        "scrapy_fresh: %(url)s was changed by other workers %(n)d times "
                        "while this one wrote it; its write is dropped.",
                        {"url": record.url, "n": MAX_RECORD_TRIES},
                    )
        if absent:
            added = set(self.inner.add_many(absent))
            again_: list[tuple[bytes | None, PageState]] = [
                (None, r) for r in absent if r.key not in added
            ]
            if again_:  # added by another worker meanwhile: merge into it
                self._apply_writes(again_, again=again)

    # -- meta records -------------------------------------------------------------------

    def get_meta(self, namespace: str, key: str) -> dict[str, Any] | None:
        """The meta record, or (Redis unreachable) the copy this worker last saw."""
        value: dict[str, Any] | None = self._read_kept(
            self._meta, f"{namespace}/{key}", "get_meta", namespace, key
        )
        return value

    def put_meta(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        encode_meta(namespace, key, value)  # a bad value fails now, not at the replay
        self._meta[f"{namespace}/{key}"] = copy.deepcopy(value)
        self._write("put_meta", namespace, key, value)

    def update_meta(self, namespace: str, key: str, change: MetaChange) -> dict[str, Any] | None:
        """Change a meta record by compare-and-set
        (:meth:`~scrapy_fresh.distributed.store.RedisStore.update_meta`; stat
        ``fresh/redis/meta_retries``). While Redis is unreachable ``change`` is applied
        to the last copy seen, and applied again to the stored value when Redis is back."""
        name = f"{namespace}/{key}"
        self._before()
        if not self.pending:
            inner = self.inner
            before = inner.meta_retries
            try:
                result = inner.update_meta(namespace, key, change)
            except StoreError as exc:
                if not is_outage(exc):
                    raise
                self._backoff.failed(exc, "keeping the writes in memory until it is back")
            else:
                self._backoff.succeeded()
                if result is not None:
                    self._meta[name] = copy.deepcopy(result)
                return result
            finally:
                if inner.meta_retries > before:
                    self.stat("fresh/redis/meta_retries", inner.meta_retries - before)
        result = change(copy.deepcopy(self._meta.get(name)))
        if result is not None:
            encode_meta(namespace, key, result)
            self._meta[name] = copy.deepcopy(result)
        self.pending.append(("update_meta", (namespace, key, change)))
        return result

    def delete_meta(self, namespace: str, key: str) -> bool:
        self._meta.pop(f"{namespace}/{key}", None)
        return bool(self._write("delete_meta", namespace, key))

    def meta(self, namespace: str) -> Iterator[tuple[str, dict[str, Any]]]:
        result: Iterator[tuple[str, dict[str, Any]]] = self._read("meta", namespace)
        return result

    def _update_leased(self, state: PageState, token: str) -> None:
        if not self.frontier.update_leased(Leased(state, token, Stream.NEW), state):
            self.leased.pop(state.key, None)
            logger.info(
                "scrapy_fresh: %(url)s was not updated: its lease had run out and another "
                "worker took it.",
                {"url": state.url},
            )

    def commit_visit(
        self, state: PageState, outcome: Outcome, apply: Apply, *,
        lost: Callable[[], None] | None = None, retried: Callable[[int], None] | None = None,
    ) -> bool:  # fmt: skip
        """Write the visit of ``state`` under this worker's lease of it.

        ``apply(record, site)`` applies the visit to the record and its site (see
        :class:`~scrapy_fresh.distributed.frontier.Visit`); ``state`` ends as applied.
        Returns False, writing nothing, if the lease was lost (the URL's lease ran out
        and another worker took it, or its record is gone); ``lost()`` is then called.
        ``retried(n)`` is told how many times the visit was done again because another
        worker changed the site meanwhile. While Redis is unreachable the visit is
        applied to the last copy of the site seen, kept, and committed (lease-checked,
        on the site as it is then) when Redis is back: True is returned at once, and
        ``lost()`` is called then if the lease has gone meanwhile. A record not leased
        through the shared frontier is written without a lease check.
        """
        kept = self.leased.pop(state.key, None)
        token = NO_LEASE if kept is None else kept[1]
        pristine = copy.copy(state)  # apply only assigns fields (Visit.apply)
        self._before()
        if not self.pending:
            try:
                written = self._commit(state, token, outcome, apply, lost, retried)
            except StoreError as exc:
                if not is_outage(exc):
                    raise
                self._backoff.failed(exc, "keeping the writes in memory until it is back")
                state.__dict__.update(pristine.__dict__)
            else:
                self._backoff.succeeded()
                return written
        replay = (copy.deepcopy(pristine), token, outcome, apply, lost, retried)
        site = copy.deepcopy(self._sites.get(state.host)) or SiteState(state.host)
        apply(state, site)
        self._sites[state.host] = site
        self.pending.append(("_replay_commit", replay))
        return True

    def _commit(
        self, state: PageState, token: str, outcome: Outcome, apply: Apply,
        lost: Callable[[], None] | None, retried: Callable[[int], None] | None,
    ) -> bool:  # fmt: skip
        frontier = self.frontier
        before = frontier.site_retries
        try:
            written = frontier.commit_visit(
                Leased(state, token, Stream.NEW), outcome, apply, state
            )
        finally:
            if retried is not None and frontier.site_retries > before:
                retried(frontier.site_retries - before)
        if frontier.written:
            self._remember(frontier.written)
            frontier.written.clear()
        if not written and lost is not None:
            lost()
        return written

    def _replay_commit(
        self, pristine: PageState, token: str, outcome: Outcome, apply: Apply,
        lost: Callable[[], None] | None, retried: Callable[[int], None] | None,
    ) -> None:  # fmt: skip
        self._commit(copy.copy(pristine), token, outcome, apply, lost, retried)

    def add_many(self, states: Iterable[PageState]) -> list[str]:
        states = list(states)
        added: list[str] | None = self._write("add_many", states)
        if added is None:
            return list(dict.fromkeys(s.key for s in states))
        return added

    def delete(self, key: str) -> bool:
        result: bool = self._read("delete", key)
        return result

    def due(self, now: float, limit: int) -> list[PageState]:
        result: list[PageState] = self._read("due", now, limit)
        return result

    def next_due_time(self) -> float | None:
        result: float | None = self._read("next_due_time")
        return result

    def mark_in_flight(self, keys: Iterable[str], now: float) -> None:
        self._write("mark_in_flight", list(keys), now)

    def release_in_flight(self, older_than: float | None = None) -> int:
        result: int = self._read("release_in_flight", older_than)
        return result

    def count_due(self, now: float) -> int:
        result: int = self._read("count_due", now)
        return result

    def make_due(self, keys: Iterable[str], now: float) -> list[str]:
        result: list[str] = self._read("make_due", list(keys), now)
        return result

    def block_host(self, host: str, now: float) -> bool:
        result: bool = self._read("block_host", host, now)
        return result

    def unblock_host(self, host: str) -> bool:
        result: bool = self._read("unblock_host", host)
        return result

    def blocked_hosts(self) -> dict[str, float]:
        result: dict[str, float] = self._read("blocked_hosts")
        return result

    def counts(self) -> dict[Status, int]:
        result: dict[Status, int] = self._read("counts")
        return result

    def iterate(self, batch_size: int = 1000) -> Iterator[PageState]:
        result: Iterator[PageState] = self._read("iterate", batch_size)
        return result

    def __len__(self) -> int:
        self._before()
        return len(self.inner)

    def get_site(self, host: str) -> SiteState | None:
        site: SiteState | None = self._read_kept(self._sites, host, "get_site", host)
        return site

    def _read_kept(self, kept: dict[str, Any], name: str, method: str, *args: Any) -> Any:
        """Read through the inner store, keeping a copy of what is found under ``name``
        in ``kept``; while Redis is unreachable, give the copy kept (else raise)."""
        try:
            value = self._read(method, *args)
        except StoreError as exc:
            if name not in kept or not is_outage(exc):
                raise
            return copy.deepcopy(kept[name])
        if value is not None:
            kept[name] = copy.deepcopy(value)
        return value

    def put_site(self, site: SiteState) -> None:
        self._sites[site.host] = copy.deepcopy(site)
        self._write("put_site", site)

    def sites(self) -> Iterator[SiteState]:
        result: Iterator[SiteState] = self._read("sites")
        return result

    def flush(self) -> None:
        """Wait (up to ``outage_wait`` seconds) until the writes kept are written; try
        the held-back record writes once more (those whose URL another worker still
        holds are dropped, counted in ``fresh/redis/record_dropped``)."""
        deadline = time.monotonic() + self.outage_wait
        while self.pending and not self.replay():
            if time.monotonic() >= deadline:
                logger.error(
                    "scrapy_fresh: Redis at %(where)s did not come back within %(secs)g s; "
                    "%(n)d kept writes are lost (their pages are due again at the next run).",
                    {"where": self.inner.where, "secs": self.outage_wait, "n": len(self.pending)},
                )
                self.pending.clear()
                break
            time.sleep(max(0.05, min(1.0, self._backoff.retry_at - time.monotonic())))
        if self.deferred and not self.pending:
            try:
                self._write_deferred()
            except StoreError as exc:
                if not is_outage(exc):
                    raise
            if self.deferred:
                logger.info(
                    "scrapy_fresh: %(n)d record updates were not written: other workers "
                    "still hold their URLs (their visits decide the records).",
                    {"n": len(self.deferred)},
                )
                self.stat("fresh/redis/record_dropped", len(self.deferred))
                self.deferred.clear()
        self.inner.flush()

    def close(self) -> None:
        if not self.inner._closed:
            try:
                self.flush()
            finally:
                self.inner.close()

    def __repr__(self) -> str:
        return f"<OutageSafeStore {self.inner!r}, {len(self.pending)} writes kept>"


class SharedFrontier:
    """One worker's side of the shared Redis frontier (see the module docstring).

    :param store: the crawl's store (an :class:`OutageSafeStore` around a Redis store).
    :param lease_secs: :setting:`FRESH_REDIS_LEASE_SECS`.
    :param default_delay: ``DOWNLOAD_DELAY``.
    :param new_share: :setting:`FRESH_NEW_URL_SHARE`.
    :param max_wait: cycle mode (:setting:`FRESH_CYCLE_MAX_WAIT_SECS`): a host that may
        not be contacted for longer than this and than its own delay (a shared
        ``Retry-After`` back-off, a host a worker paused as unreachable; not a long
        Crawl-delay, waited for as with the other stores) does not keep the run
        waiting: its pages stay due for the next run. None (continuous mode): every
        host is waited for.
    """

    def __init__(
        self, store: OutageSafeStore, *, lease_secs: float, default_delay: float,
        new_share: float, hold_secs: float | None = None, max_wait: float | None = None,
    ) -> None:  # fmt: skip
        self.store = store
        self.max_wait = max_wait
        self.frontier = RedisFrontier(
            store.inner, lease_secs=lease_secs, default_delay=default_delay,
            new_share=new_share, hold_secs=hold_secs,
        )  # fmt: skip
        #: When the shared frontier may give something again (None: nothing to wait for).
        self.next_time: float | None = None
        #: The earliest due time in the shared frontier at the last pull (None: none);
        #: a continuous-mode worker wakes for it.
        self.next_due: float | None = None
        #: True while URLs are due, leased by other workers or held back by an outage:
        #: a cycle-mode crawl stays open while this is True.
        self.waiting = False
        #: True from a pull that could not reach Redis to the next that does: then
        #: :attr:`next_time` is the outage back-off's next try, and :attr:`next_due`
        #: (from before the outage) wakes nobody.
        self.outage = False
        self._backoff = _Backoff("the shared frontier", store.inner.where)
        self._last_pull = -math.inf
        #: Hosts answered while Redis could not be told, with when (told when it is back).
        self._done: dict[str, float] = {}

    @classmethod
    def for_crawl(
        cls, store: StateStore, config: FreshConfig, settings: Any
    ) -> SharedFrontier | None:
        """The shared frontier of a crawl whose store is Redis, else None."""
        if not isinstance(store, OutageSafeStore):
            return None
        lease = config.redis_lease_secs
        tries = 1 + max(0, settings.getint("RETRY_TIMES")) * settings.getbool("RETRY_ENABLED")
        return cls(
            store,
            lease_secs=lease,
            default_delay=max(0.0, settings.getfloat("DOWNLOAD_DELAY")),
            new_share=config.new_url_share,
            hold_secs=min(lease, settings.getfloat("DOWNLOAD_TIMEOUT", 180.0) * tries),
            max_wait=None if config.mode == "continuous" else config.cycle_max_wait_secs,
        )

    def pull(
        self, now: float, lease: Callable[[PageState, Stream, float, float], None],
        score: Callable[[PageState], float], n: int = PULL_BATCH,
        busy_hosts: Iterable[str] = (),
    ) -> int:  # fmt: skip
        """Take up to ``n`` due URLs; ``lease(state, stream, score, now)`` each. Return how many.

        ``busy_hosts``: hosts this worker cannot send to yet (see RedisFrontier.pop).
        """
        if (
            self.waiting
            and now < self._last_pull + POLL_SECS
            and (self.next_time is None or now < self.next_time)
        ):
            return 0  # asked again too soon: nothing new can be due yet
        self._last_pull = now
        wait = self.backoff_wait()
        if wait > 0:  # Redis failed a moment ago: try again at the back-off's pace
            return self._hold(now, wait)
        if not self.store.replay():
            return self._hold(now, self.store.backoff_wait())
        self._flush_done()
        try:
            popped = self.frontier.pop(now, n, busy_hosts)
            in_flight = self.store.inner.counts()
            host_time = popped.next_host_time
            if not self._waits_for(host_time, popped.next_host, now):
                host_time = None  # the host's pages wait for the next run
        except StoreError as exc:
            if not is_outage(exc):
                raise
            self._backoff.failed(exc)
            return self._hold(now, self._backoff.wait())
        self._backoff.succeeded()
        self.outage = False
        others = in_flight[Status.IN_FLIGHT] - len(self.store.leased) - len(popped.leased)
        self.next_due = popped.next_due_time
        times = [host_time]
        if popped.next_due_time is not None and popped.next_due_time <= now:
            times.append(popped.next_due_time)
        if others > 0:  # a lease of another worker may run out, or its finds come in
            times.append(now + POLL_SECS)
        waits = [t for t in times if t is not None]
        self.next_time = min(waits) if waits else None
        self.waiting = bool(popped.leased) or bool(waits)
        for leased in popped.leased:
            state = leased.state
            self.store.leased[state.key] = (copy.deepcopy(state), leased.token)
            lease(state, leased.stream, score(state), now)
        return len(popped.leased)

    def _waits_for(self, host_time: float | None, host: str | None, now: float) -> bool:
        """Whether the run waits for ``host``, the next one the shared frontier may
        contact, at ``host_time`` (see ``max_wait``: not for a back-off or a pause
        longer than it, but for the host's own delay)."""
        if host_time is None or self.max_wait is None or host_time <= now + self.max_wait:
            return True
        return host is not None and host_time <= now + self.frontier.delay(host)

    def backoff_wait(self) -> float:
        """Seconds until this worker tries Redis again after a failed call (0: now)."""
        return max(self._backoff.wait(), self.store.backoff_wait())

    def _hold(self, now: float, wait: float) -> int:
        """Redis cannot be reached: nothing pulled; pull again in ``wait`` seconds (the
        outage back-off), and the run stays open meanwhile."""
        self.outage = True
        self.waiting = True
        self.next_time = now + wait
        return 0

    def wake_time(self, *, due: bool) -> float | None:
        """When this worker should pull again: :attr:`next_time`, and with ``due``
        (continuous mode) :attr:`next_due`, unless Redis could not be reached at the
        last pull: then only the back-off's next try (a due time passed meanwhile would
        wake the worker at once, again and again, for the whole outage)."""
        times = [self.next_time]
        if due and not self.outage:
            times.append(self.next_due)
        waits = [t for t in times if t is not None]
        return min(waits) if waits else None

    def set_delay(self, host: str, delay: float) -> None:
        """Share a robots.txt Crawl-delay with every worker (best effort)."""
        try:
            self.frontier.set_delay(host, delay)
        except StoreError as exc:
            logger.warning("scrapy_fresh: cannot share the Crawl-delay of %s: %s", host, exc)

    def back_off(self, host: str, until: float) -> None:
        """Share a ``Retry-After`` back-off with every worker (best effort)."""
        try:
            self.frontier.back_off(host, until)
        except StoreError as exc:
            logger.warning("scrapy_fresh: cannot share the back-off of %s: %s", host, exc)

    def host_done(self, host: str, now: float) -> None:
        """A visit to ``host`` was recorded: other workers may contact it after the delay."""
        self._done[host] = now
        self._flush_done()

    def _flush_done(self) -> None:
        while self._done:
            host, when = next(iter(self._done.items()))
            try:
                self.frontier.host_done(host, when)
            except StoreError as exc:
                if not is_outage(exc):
                    raise
                self._backoff.failed(exc)
                return
            del self._done[host]

    def give_back(self, keys: Iterable[str]) -> int:
        """Return the leases of ``keys`` (not visited in this run) to the shared frontier."""
        given = 0
        for key in keys:
            kept = self.store.leased.pop(key, None)
            if kept is None:
                continue
            state, token = kept
            try:
                given += self.frontier.give_back(Leased(state, token, Stream.NEW))
            except StoreError as exc:
                logger.warning(
                    "scrapy_fresh: cannot give back %(url)s (%(exc)s); its lease runs out "
                    "and another worker takes it.",
                    {"url": state.url, "exc": exc},
                )
                break
        return given


class FreshStartUrlsMixin:
    """Put before scrapy-redis's ``RedisSpider`` so that start URLs fed through its Redis
    key are managed by scrapy_fresh::

        class NewsSpider(FreshStartUrlsMixin, RedisSpider):
            name = "news"
            redis_key = "news:start_urls"

    ``RedisSpider`` makes its requests with ``dont_filter=True``, and FreshScheduler
    lets such requests bypass freshness (fetched every time, never recorded). The mixin
    makes them ordinary requests: a known URL is fetched when it is due, a new one is
    added to the shared frontier.
    """

    def make_request_from_data(self, data: bytes) -> Any:
        made = super().make_request_from_data(data)  # type: ignore[misc]
        if isinstance(made, Request):
            return made.replace(dont_filter=False)
        return [r.replace(dont_filter=False) if isinstance(r, Request) else r for r in made]


def open_shared_store(config: FreshConfig, crawler: Any) -> OutageSafeStore:
    """:setting:`FRESH_STORE` ``"redis"``: the store every worker of the crawl shares,
    connected through scrapy-redis's ``REDIS_URL``/``REDIS_PARAMS``, under
    :setting:`FRESH_REDIS_KEY`."""
    prefix = config.redis_key % {"spider": getattr(crawler.spidercls, "name", "spider")}

    def stat(name: str, count: int = 1) -> None:
        stats = getattr(crawler, "stats", None)
        if stats is not None:
            stats.inc_value(name, count)

    inner = open_redis_store(crawler.settings, prefix, score_params(config))
    return OutageSafeStore(inner, stat=stat)
