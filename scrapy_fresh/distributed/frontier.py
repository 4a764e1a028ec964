"""The frontier in Redis: many crawl processes take due URLs from one shared frontier.

The same two-level scheme as :class:`~scrapy_fresh.frontier.Frontier` (Castillo's
site-then-page scheduling over Mercator's per-host back queues, seed
``clifton-web-crawling-lecture``), kept in Redis and changed only by server-side Lua
scripts (:mod:`scrapy_fresh.distributed._lua`), so that two workers never take the
same URL:

* the due-time sorted set is the store's (``P:due``); a watermark promotes every key
  that came due into the ready queue of its host, one queue per stream (``new`` for
  never-fetched URLs, ``refresh`` for re-crawls: WebFountain's two queues mixed by
  ``new_share``, seed ``edwards-adaptive-incremental-crawler-webfountain``);
* a ready queue is ordered by the record's provider-aware priority (Xu et al. eq. 4,
  5 and 7 via :func:`~scrapy_fresh.frontier.scoring.priority_score`), computed in
  Python for the moment the record comes due, whenever the record is written;
* per host, the next-allowed contact time (download delay, robots.txt Crawl-delay,
  ``Retry-After`` back-off) is shared by all workers: one URL per host per delay;
* a popped URL is leased (in flight since the pop, under a lease token unique to that
  pop: ``t<pop number>.<i>``);
  a lease older than ``lease_secs`` goes back to the frontier at the next pop of any
  worker, and a visit is committed (record, next due time, site, outcome count) by one
  script that refuses a lease the worker no longer holds;
* a visit's site aggregates are changed in Python and written by compare-and-set (the
  script writes a site only while it is as the worker read it, else the visit is done
  again on the current site), so concurrent visits to one host all count; meta records
  (trust, quiet claims) likewise
  (:meth:`~scrapy_fresh.distributed.store.RedisStore.update_meta`);
* a record written outside a visit (provider signals, request data:
  :meth:`RedisFrontier.write_records`) is written only while it is as the worker read
  it; else the worker's change is merged into the record as it is now
  (:func:`merge_write`) and written again, and a record another worker holds the lease
  of is not written at all (the caller writes it after that visit).

Like the in-process frontier it never reads the clock: every call takes ``now``.
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
import math
import random
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy_fresh.distributed import _lua as lua
from scrapy_fresh.distributed.store import (
    CAS_CLAIM_AFTER,
    CAS_MAX_BACKOFF,
    CAS_MAX_TRIES,
    RedisStore,
    decode_record,
    encode_record,
    encode_site,
    record_bytes,
)
from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.frontier.frontier import Stream
from scrapy_fresh.frontier.revisit import RevisitPolicy, record_visit
from scrapy_fresh.frontier.scoring import ScoreParams, priority_score
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.base import (
    MAX_FUTURE_UPDATES,
    MAX_PAST_UPDATES,
    PageState,
    SiteState,
    Status,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    #: ``apply(record, site)``: what a visit does to its record and its site, in place.
    Apply = Callable[[PageState, SiteState], None]

__all__ = [
    "CLAIM_AFTER",
    "MAX_RECORD_TRIES",
    "MAX_SITE_TRIES",
    "NO_LEASE",
    "Leased",
    "PopResult",
    "RedisFrontier",
    "Visit",
    "due_priority",
    "merge_write",
    "open_redis_store",
]

logger = logging.getLogger(__name__)

_BACK_OFF = r"""
local P, host, untl = ARGV[1], ARGV[2], ARGV[3]
local cur = tonumber(redis.call('HGET', P .. ':hnext', host) or '-inf')
if tonumber(untl) > cur then
  redis.call('HSET', P .. ':hnext', host, untl)
  redis.call('ZADD', P .. ':hh:n', 'XX', 'GT', untl, host)
  redis.call('ZADD', P .. ':hh:r', 'XX', 'GT', untl, host)
end
return 1
"""

_DEFAULT_PARAMS = ScoreParams()

#: Compare-and-set tries of one visit's site update (see :meth:`RedisFrontier.commit_visits`);
#: after that the visit is written without it rather than not at all (a safety net: a
#: visit that loses the race :data:`CLAIM_AFTER` times takes the site's turn).
MAX_SITE_TRIES = CAS_MAX_TRIES
#: A visit whose site update lost the race this many times claims the site's turn.
CLAIM_AFTER = CAS_CLAIM_AFTER
#: Longest wait (seconds) before trying again a site another visit has the turn of: a
#: random wait up to 0.2 ms, its bound doubled per wait up to this.
MAX_SITE_BACKOFF = CAS_MAX_BACKOFF
#: The lease token of a record not taken through the frontier: its commit checks no lease.
NO_LEASE = "*"
#: Compare-and-set tries of one record write outside a visit
#: (:meth:`RedisFrontier.write_records`); after that the write is given up (logged).
MAX_RECORD_TRIES = 50
#: Hosts whose last seen site value a frontier object keeps (the start of the next
#: compare-and-set; all forgotten when there would be more).
SITE_CACHE_HOSTS = 10_000


def due_priority(params: ScoreParams = _DEFAULT_PARAMS) -> Callable[[PageState], float]:
    """Return the scorer the Redis store writes: the priority of a record when it comes due.

    Xu et al.'s scores grow while a page waits; evaluated at ``next_due`` they rank the
    pages of a host by how urgent each is at the moment it may be fetched. New URLs
    score by their request priority, as in the in-process scheduler.
    """

    def score(state: PageState) -> float:
        when = state.next_due
        if not math.isfinite(when):
            return 0.0
        try:
            value = priority_score(state, when, params)
        except (ArithmeticError, ValueError):
            return 0.0
        return value if math.isfinite(value) else 0.0

    return score


def open_redis_store(
    settings: Any, prefix: str, params: ScoreParams = _DEFAULT_PARAMS
) -> RedisStore:
    """The Redis store of a crawl, connected through scrapy-redis's settings, scoring
    records for the frontier with :func:`due_priority`."""
    store = RedisStore.from_settings(settings, prefix, priority=due_priority(params))
    try:
        store.upgrade_legacy_sites()
        store.upgrade_gone_due()
    except StoreError as exc:  # Redis is not there yet: the next open does it
        logger.warning("scrapy_fresh: Redis store not upgraded: %s", exc)
    return store


@dataclass(frozen=True)
class Leased:
    """A URL a worker took: fetch it, then :meth:`RedisFrontier.commit_visit` (or give it back)."""

    state: PageState
    #: The lease token the pop gave (unique to the pop: ``t<pop number>.<i>``).
    token: str
    stream: Stream

    @property
    def key(self) -> str:
        return self.state.key


@dataclass(frozen=True)
class PopResult:
    """What one :meth:`RedisFrontier.pop` call gave."""

    leased: list[Leased]
    #: Leases of other workers that had run out and went back to the frontier.
    reaped: int
    #: When the earliest host with ready URLs may be contacted (None: no ready URL).
    next_host_time: float | None
    #: The earliest due time not promoted yet (None: nothing else is due later).
    next_due_time: float | None
    #: The host of :attr:`next_host_time` (None: no ready URL).
    next_host: str | None = None

    @property
    def next_time(self) -> float | None:
        """When a pop may give something again (None: the frontier is empty)."""
        times = [t for t in (self.next_host_time, self.next_due_time) if t is not None]
        return min(times) if times else None


@dataclass(frozen=True)
class Visit:
    """One visit to commit (:meth:`RedisFrontier.commit_visits`)."""

    leased: Leased
    #: Counted in the outcome counts (None: not counted).
    outcome: Outcome | None
    #: ``apply(record, site)`` changes the record and its site in place (e.g. with
    #: :func:`~scrapy_fresh.frontier.revisit.record_visit`). It runs again, on the record
    #: as it was and the current site, when another worker changed the site meanwhile, so
    #: it must only assign the record's fields (not change its lists in place) and must
    #: not count anything outside them.
    apply: Apply
    #: The record to start from (None: the leased one).
    state: PageState | None = None


def _time(raw: bytes | str) -> float | None:
    return float(raw) if raw else None


#: Fields of a record only a visit sets: a write whose base is unknown leaves them alone.
_VISIT_FIELDS = frozenset(
    {"first_seen", "last_crawl", "refresh_secs", "p_l", "p_g", "visits", "changes", "p_c",
     "change_bucket", "change_rate", "errors", "fingerprint", "etag", "last_modified",
     "content_length", "field_hashes", "content_hash"}
)  # fmt: skip
#: Fields a merge never takes from the writer: identity and lease.
_OWN_FIELDS = frozenset({"key", "url", "host", "doc_id", "status", "in_flight_since"})


def merge_write(base: PageState | None, new: PageState, current: PageState) -> PageState:
    """The record ``current`` with the change a worker made from ``base`` to ``new``.

    A three-way merge, field by field: a field the worker did not change keeps its
    current value (a visit another worker committed meanwhile stays whole: its visits,
    fingerprint, validators, due time); a field it changed takes its value, except:

    * ``past_updates`` (times providers said the page changed) get the times the worker
      added; ``future_updates`` (announced updates) lose the ones it dropped and get the
      ones it added (at most the newest
      :data:`~scrapy_fresh.store.base.MAX_PAST_UPDATES` / soonest
      :data:`~scrapy_fresh.store.base.MAX_FUTURE_UPDATES`);
    * ``next_due``: a due time the worker moved later (a claimed quiet time, a postponed
      sitemap) is kept as "no sooner than" (the later of the two); one it moved earlier
      (a provider said the page changed) is taken if sooner, unless a visit committed
      meanwhile came at or after it (that visit saw the change);
    * status, lease and identity are never the writer's.

    ``base`` None (the worker did not read the record): only the fields a provider
    signal or a request sets (``next_due``, ``provider``, the update lists,
    ``request``, ``access_count``) are taken.

    >>> base = PageState("ab", "u", next_due=100.0, visits=1, last_crawl=10.0)
    >>> new = PageState("ab", "u", next_due=50.0, visits=1, last_crawl=10.0, past_updates=[40.0])
    >>> now = PageState("ab", "u", next_due=500.0, visits=2, last_crawl=60.0)
    >>> m = merge_write(base, new, now)
    >>> m.visits, m.next_due, m.past_updates
    (2, 500.0, [40.0])
    """
    out = copy.copy(current)
    visit_fields: frozenset[str] = frozenset()
    if base is None:
        base = current
        visit_fields = _VISIT_FIELDS
    visited = current.last_crawl != base.last_crawl
    now_data, base_data, new_data = out.__dict__, base.__dict__, new.__dict__
    for name, value in new_data.items():
        if name in _OWN_FIELDS or name in visit_fields or value == base_data.get(name):
            continue
        if name == "past_updates":
            added = set(value) - set(base_data[name])
            out.past_updates = sorted(set(current.past_updates) | added)[-MAX_PAST_UPDATES:]
        elif name == "future_updates":
            old, mine = set(base_data[name]), set(value)
            kept = (set(current.future_updates) - (old - mine)) | (mine - old)
            out.future_updates = sorted(kept)[:MAX_FUTURE_UPDATES]
        elif name == "next_due":
            if value > base_data[name]:
                out.next_due = max(current.next_due, value)
            elif not (visited and current.last_crawl is not None and current.last_crawl >= value):
                out.next_due = min(current.next_due, value)
        else:
            now_data[name] = copy.deepcopy(value)
    return out


class RedisFrontier:
    """A frontier shared by every process that uses the same Redis store prefix.

    :param store: the Redis store (its client and prefix are used).
    :param lease_secs: a URL taken but not committed within this time goes back.
    :param default_delay: seconds between two requests to one host (``DOWNLOAD_DELAY``).
    :param new_share: share of pops that go to never-fetched URLs when both streams
        have work (counted over all workers).
    :param promote_batch: at most this many newly due keys promoted per pop.
    :param hold_secs: with a delay, a host whose URL was taken gets no other request
        until :meth:`host_done` (its answer came) or this many seconds passed (Castillo:
        never two connections to one site); ``lease_secs`` when None.
    """

    def __init__(
        self,
        store: RedisStore,
        *,
        lease_secs: float = 600.0,
        default_delay: float = 0.0,
        new_share: float = 0.2,
        promote_batch: int = 1000,
        hold_secs: float | None = None,
    ) -> None:
        if lease_secs <= 0:
            raise ValueError(f"lease_secs ({lease_secs!r}) must be more than 0.")
        if default_delay < 0:
            raise ValueError(f"default_delay ({default_delay!r}) must be at least 0.")
        if not 0.0 <= new_share <= 1.0:
            raise ValueError(f"new_share ({new_share!r}) must be within [0, 1].")
        if promote_batch < 1:
            raise ValueError(f"promote_batch ({promote_batch!r}) must be 1 or more.")
        self.store = store
        self.lease_secs = float(lease_secs)
        self.default_delay = float(default_delay)
        self.new_share = float(new_share)
        self.promote_batch = int(promote_batch)
        self.hold_secs = float(lease_secs if hold_secs is None else hold_secs)
        client = store.client
        self._pop = client.register_script(lua.POP)
        self._commit = client.register_script(lua.COMMIT)
        self._give_back = client.register_script(lua.GIVE_BACK)
        self._back_off = client.register_script(_BACK_OFF)
        self._host_done = client.register_script(lua.HOST_DONE)
        self._write_if = client.register_script(lua.WRITE_IF)
        self._prefix = store.prefix
        #: Visits sent again because another worker changed their site in between.
        self.site_retries = 0
        #: Visits written without their site update after :data:`MAX_SITE_TRIES` tries.
        self.site_given_up = 0
        #: Visits not written because their lease was lost.
        self.leases_lost = 0
        #: Record writes outside a visit merged into a record another worker changed.
        self.record_retries = 0
        #: When a dict: key -> the stored value of every record a commit wrote (the
        #: base of the next compare-and-set of that record; the caller takes them out).
        self.written: dict[str, bytes] | None = None
        #: Host -> its site value as the last commit saw it (None: no site record).
        self._site_values: dict[str, bytes | None] = {}
        self._claim_id = uuid.uuid4().hex[:16]
        self._claim_numbers = itertools.count()

    # -- filling -----------------------------------------------------------------------

    def add(self, states: Iterable[PageState]) -> list[str]:
        """Discovery: add never-seen URLs (known keys are left alone); return the added keys."""
        return self.store.add_many(states)

    def schedule(self, states: Iterable[PageState]) -> None:
        """Write records (a new due time, a new priority): the frontier follows at once."""
        self.store.put_many(states)

    # -- politeness ----------------------------------------------------------------------

    def set_delay(self, host: str, delay: float) -> None:
        """Set ``host``'s delay between requests (its robots.txt Crawl-delay), for all workers.

        The delay used is never below ``default_delay``.
        """
        if not delay >= 0:
            raise ValueError(f"delay ({delay!r}) for {host!r} must be at least 0.")
        self.store._call(
            "set a host delay", self.store.client.hset, f"{self._prefix}:hdelay",
            host.encode(), repr(float(delay)),
        )  # fmt: skip

    def delay(self, host: str) -> float:
        """The wait between two requests to ``host``."""
        raw = self.store._call(
            "read a host delay", self.store.client.hget, f"{self._prefix}:hdelay", host.encode()
        )
        return max(self.default_delay, float(raw) if raw else 0.0)

    def back_off(self, host: str, until: float) -> None:
        """Keep every worker away from ``host`` until ``until`` (429/503 ``Retry-After``)."""
        self.store._run(self._back_off, "back off a host", host.encode(), repr(float(until)))

    def host_done(self, host: str, now: float) -> None:
        """``host`` answered at ``now``: end its hold; its delay counts from now."""
        self.store._run(
            self._host_done, "free a host", host.encode(), repr(float(now)),
            repr(self.default_delay),
        )  # fmt: skip

    def ready_at(self, host: str) -> float:
        """The earliest time ``host`` may be contacted (``-inf`` if never contacted)."""
        raw = self.store._call(
            "read a host time", self.store.client.hget, f"{self._prefix}:hnext", host.encode()
        )
        return float(raw) if raw else -math.inf

    # -- taking and committing -----------------------------------------------------------

    def pop(self, now: float, n: int = 1, skip_hosts: Iterable[str] = ()) -> PopResult:
        """Take up to ``n`` URLs that may be fetched at ``now`` (one atomic script call).

        ``skip_hosts``: hosts this worker cannot contact yet (its own delay for them
        still runs); they are left to the other workers. A worker that takes a URL only
        when it can send the request at once keeps the moments of the requests to one
        host as far apart as the moments they were taken.
        """
        if n < 0:
            raise ValueError(f"n ({n!r}) must be 0 or more.")
        token = repr(float(now))
        flat, reaped, next_host, next_due, next_name = self.store._run(
            self._pop,
            "pop from the frontier",
            token,
            n,
            repr(self.lease_secs),
            repr(self.default_delay),
            repr(self.new_share),
            max(self.promote_batch, 2 * n),
            repr(self.hold_secs),
            *(host.encode() for host in skip_hosts),
        )
        leased = []
        for i in range(0, len(flat), 3):
            state = decode_record(flat[i], flat[i + 1])
            stream = Stream.NEW if state.last_crawl is None else Stream.REFRESH
            leased.append(Leased(state, flat[i + 2].decode(), stream))
        if reaped:
            logger.info(
                "scrapy_fresh: %(n)d expired leases went back to the Redis frontier "
                "(a worker died or hung for more than %(secs)g s)",
                {"n": reaped, "secs": self.lease_secs},
            )
        name = next_name.decode() if isinstance(next_name, bytes) else str(next_name)
        return PopResult(leased, int(reaped), _time(next_host), _time(next_due), name or None)

    def commit_visit(
        self, leased: Leased, outcome: Outcome | None, apply: Apply,
        state: PageState | None = None,
    ) -> bool:  # fmt: skip
        """Apply a visit to the leased record and its site, and write both atomically.

        ``apply(record, site)`` changes both in place (:func:`visit` passes
        :func:`~scrapy_fresh.frontier.revisit.record_visit`). ``state`` is the record to
        start from (the leased one by default); it ends as written. Returns False, writing
        nothing, if the lease was lost (it ran out and another worker took the URL, or the
        record was released or deleted). See :meth:`commit_visits`.
        """
        return self.commit_visits([Visit(leased, outcome, apply, state)])[0]

    def commit_visits(self, visits: Iterable[Visit]) -> list[bool]:
        """Commit visits: per visit the record (with its next due time), its site and
        its outcome count, lease-checked, in one script call (one round trip) when no
        other worker changed their sites meanwhile.

        The site aggregates (Sharma & Dixit's per-site p_c, the validator counters) are
        read, changed by ``apply`` in Python (the policy maths stays in one place) and
        written by compare-and-set: a visit whose site another worker changed after it
        was read is not written; its record is reset, ``apply`` runs again on the
        current site (which the script returned) and the visit is sent again. So
        concurrent visits to one host all count, each exactly once. The site value a
        visit starts from is the one the previous commit of this frontier object saw
        for the host (every commit returns it), read from Redis only the first time: an
        uncontended visit costs one round trip, and a value another process changed
        meanwhile costs one retry, never a lost update. A visit that loses the race
        :data:`CLAIM_AFTER` times claims the site's turn (the script holds the other
        visits' updates of that site back until it is written, at most
        :data:`~scrapy_fresh.distributed._lua.SITE_TURN_MS`), so no visit starves
        however busy a site is. After :data:`MAX_SITE_TRIES` tries (a safety net) a
        visit is written without its site update (logged) rather than not at all. A
        visit whose lease was lost is left out (False); the others are written (True).
        """
        visits = list(visits)
        records = [v.state if v.state is not None else v.leased.state for v in visits]
        for visit, record in zip(visits, records, strict=True):
            if record.key != visit.leased.key:
                raise ValueError(f"record {record.key} is not the leased URL {visit.leased.key}.")
        if not visits:
            return []
        # record_visit only reassigns fields: a shallow copy resets a record for a retry
        pristine = [copy.copy(r) for r in records]
        known = self._site_values
        missing = [r.host for r in records if r.host not in known]
        if missing:
            if len(known) + len(missing) > SITE_CACHE_HOSTS:
                known.clear()
            known.update(self.store.read_sites(missing))
        current = {r.host: known[r.host] for r in records}
        priority = self.store.priority
        done = [False] * len(visits)
        lost = 0
        todo = list(range(len(visits)))
        tries = [0] * len(visits)  # conflicts and waits for another visit's turn
        claims: dict[int, str] = {}
        waits = 0
        first = True
        rows: dict[int, tuple[bytes | str, ...]] = {}
        written = self.written
        while todo:
            args: list[bytes | str] = [self._prefix]
            chain = dict(current)  # visits of one host in one call build on each other
            decoded: dict[bytes, SiteState] = {}
            for i in todo:
                visit, record = visits[i], records[i]
                if not first:
                    record.__dict__.update(pristine[i].__dict__)
                host = record.host
                base = chain.get(host)
                if base is None:
                    site = SiteState(host)
                else:
                    if base not in decoded:
                        decoded[base] = SiteState.from_dict(json.loads(base))
                    site = copy.copy(decoded[base])
                    site.checks = dict(site.checks)
                before = {**vars(site), "checks": dict(site.checks)}
                visit.apply(record, site)
                value = b""
                if tries[i] >= MAX_SITE_TRIES:
                    check: bytes | str = "-"
                    self.site_given_up += 1
                    logger.warning(
                        "scrapy_fresh: the site record of %(host)s was busy for %(n)d tries "
                        "while a visit of %(url)s was being written; the visit is written "
                        "without its site update.",
                        {"host": host, "n": MAX_SITE_TRIES, "url": record.url},
                    )
                elif base is None:
                    check, value = "?", encode_site(site)
                elif vars(site) == before:
                    check = "-"  # nothing to add: no compare-and-set needed
                else:
                    check, value = b"=" + base, encode_site(site)
                if value:
                    chain[host] = value
                row = encode_record(record, priority(record))
                rows[i] = row
                outcome = "" if visit.outcome is None else Outcome(visit.outcome).value
                args += (row[0], visit.leased.token, *row[1:3], *row[4:],
                         host.encode(), check, value, outcome, claims.get(i, ""))  # fmt: skip
            first = False
            codes, sites = self.store._call("commit visits", self._commit, args=args)
            retry = []
            blocked = False
            for i, code, now_site in zip(todo, codes, sites, strict=True):
                code = int(code)
                host = records[i].host
                if code:  # the script read the host's site: the value for the next time
                    known[host] = current[host] = now_site or None
                if code == 1:
                    done[i] = True
                    if written is not None:
                        written[records[i].key] = record_bytes(rows[i])
                elif code in (-2, -3):
                    tries[i] += 1
                    retry.append(i)
                    if code == -3:
                        blocked = True
                    elif tries[i] >= CLAIM_AFTER and i not in claims:
                        claims[i] = f"{self._claim_id}:{next(self._claim_numbers)}"
                else:
                    lost += 1
            self.site_retries += len(retry)
            todo = retry
            if blocked:  # another visit has a site's turn: let it write first
                waits += 1
                time.sleep(random.uniform(0.0, min(MAX_SITE_BACKOFF, 0.0001 * 2**waits)))
        if lost:
            self.leases_lost += lost
            logger.warning(
                "scrapy_fresh: %(n)d visits were not written: their lease had run out and "
                "another worker took the URL (raise FRESH_REDIS_LEASE_SECS?)",
                {"n": lost},
            )
        return done

    def update_leased(self, leased: Leased, state: PageState) -> bool:
        """Write ``state`` (new request data, say) as the record of a URL still leased,
        keeping it in flight under the same lease; False, writing nothing, if the lease
        was lost. Nothing else (site, outcome counts) is touched."""
        if state.key != leased.key:
            raise ValueError(f"record {state.key} is not the leased URL {leased.key}.")
        record = copy.copy(state)
        record.status = Status.IN_FLIGHT
        if record.in_flight_since is None:  # the script keeps the lease's time anyway
            record.in_flight_since = leased.state.in_flight_since
        row = encode_record(record, self.store.priority(record))
        args = [self._prefix, row[0], leased.token, *row[1:3], *row[4:], b"", "-", b"", "", ""]
        codes, _ = self.store._call("update a leased record", self._commit, args=args)
        return int(codes[0]) == 1

    def write_records(
        self, writes: Iterable[tuple[bytes | None, PageState]]
    ) -> list[tuple[int, bytes | None, PageState]]:
        """Write records outside a visit, each only while it is as it was read.

        ``writes``: per record the stored value it was read as (None: not read; then
        every field :func:`merge_write` lets a writer own is taken as changed) and the
        new record. One script call per round; a record another worker changed since it
        was read gets the change merged into its current value (:func:`merge_write`,
        :attr:`record_retries`) and is sent again, up to :data:`MAX_RECORD_TRIES` times.

        Returns per write ``(code, value, record)``: code 1 written (value: as stored
        now), 0 no such record (nothing written), -5 older than the stored record
        (:func:`~scrapy_fresh.store.base.regresses`: nothing written), -4 in flight (a worker holds its
        lease: nothing written; ``record`` is the change merged into the record as it is
        now, ``value``, so the caller can write it after that visit) or -2 still
        conflicting after :data:`MAX_RECORD_TRIES` tries (nothing written).
        """
        items = [(raw, new) for raw, new in writes]
        results: list[tuple[int, bytes | None, PageState] | None] = [None] * len(items)
        raws = [raw for raw, _ in items]
        news = [new for _, new in items]
        todo = list(range(len(items)))
        tries = [0] * len(items)
        priority = self.store.priority
        while todo:
            args: list[bytes | str] = [self._prefix]
            for i in todo:
                row = encode_record(news[i], priority(news[i]))
                args += (row[0], raws[i] or b"", *row[1:3], *row[4:])
            codes, values = self.store._call("write records", self._write_if, args=args)
            retry = []
            for i, code, value in zip(todo, codes, values, strict=True):
                code = int(code)
                if code in (-2, -4) and value != raws[i]:
                    raw = raws[i]
                    key = bytes.fromhex(news[i].key)
                    base = None if raw is None else decode_record(key, raw)
                    current = decode_record(key, value)
                    news[i] = merge_write(base, news[i], current)
                    raws[i] = value
                    if code == -2:
                        tries[i] += 1
                        self.record_retries += 1
                        if tries[i] < MAX_RECORD_TRIES:
                            retry.append(i)
                            continue
                results[i] = (code, value or None, news[i])
            todo = retry
        return [r for r in results if r is not None]

    def visit(
        self, leased: Leased, outcome: Outcome, now: float, policy: RevisitPolicy,
        state: PageState | None = None, *, check_cost: float = 1.0,
    ) -> PageState | None:  # fmt: skip
        """Apply ``outcome`` to the leased record (and its site) and commit it.

        ``state`` is the record to start from (the leased one by default, e.g. with new
        validators and fingerprint set). Returns the committed record, or None if the
        lease was lost.
        """
        record = state if state is not None else leased.state

        def apply(page: PageState, site: SiteState) -> None:
            record_visit(page, outcome, now, policy, site, check_cost=check_cost)

        return record if self.commit_visit(leased, outcome, apply, record) else None

    def give_back(self, leased: Leased) -> bool:
        """Return a URL unvisited (it is due again at once); False if the lease was lost."""
        raw = bytes.fromhex(leased.key)
        return bool(self.store._run(self._give_back, "give back a lease", raw, leased.token))

    # -- numbers -------------------------------------------------------------------------

    def served(self) -> dict[Stream, int]:
        """Pops per stream so far, over all workers."""
        raw = self.store._call(
            "read the stream counts", self.store.client.hmget, f"{self._prefix}:served",
            ["n", "r"],
        )  # fmt: skip
        return {Stream.NEW: int(raw[0] or 0), Stream.REFRESH: int(raw[1] or 0)}

    def outcomes(self) -> dict[Outcome, int]:
        """Committed visits per outcome so far, over all workers."""
        raw = self.store._call(
            "read the outcome counts", self.store.client.hgetall, f"{self._prefix}:outcomes"
        )
        counts = dict.fromkeys(Outcome, 0)
        for name, value in raw.items():
            counts[Outcome(name.decode())] = int(value)
        return counts
