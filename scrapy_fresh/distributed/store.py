"""The distributed store: URL records in one Redis server, shared by several crawl processes.

:class:`RedisStore` keeps every record in one hash, plus sorted sets that serve
:meth:`~RedisStore.due` (by next due time), :meth:`~RedisStore.release_in_flight` (by
lease time) and :meth:`~RedisStore.iterate` (by doc_id). Every write is one server-side
Lua script, so it is atomic and costs one round trip however many records it holds;
reads are one command or one pipeline. Records are JSON behind a short header the
scripts read (:mod:`scrapy_fresh.distributed._lua`); nothing is pickled.

The same keys carry the Redis frontier (:mod:`scrapy_fresh.distributed.frontier`):
every write keeps the hosts' ready queues in step, so the store API and the frontier
can be used side by side by any number of processes.

Connection: :meth:`RedisStore.from_settings` uses scrapy-redis's
``get_redis_from_settings`` (``REDIS_URL``, ``REDIS_PARAMS``, ``REDIS_HOST``, ...), so
AUTH (``redis://user:password@host/0``) and TLS (``rediss://``) come with the URL.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import random
import threading
import time
import uuid
from dataclasses import MISSING, fields
from itertools import islice
from typing import TYPE_CHECKING, Any

from scrapy_fresh.distributed import _lua as lua
from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.jsontext import compact_encoder
from scrapy_fresh.store._checks import (
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
from scrapy_fresh.store._legacy import is_legacy_site, meta_of_site
from scrapy_fresh.store.base import (
    ClosingStore,
    PageState,
    Provider,
    SiteState,
    Status,
    _bounded_future,
    _bounded_past,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    import redis

    from scrapy_fresh.store.base import MetaChange

__all__ = [
    "CAS_CLAIM_AFTER",
    "CAS_MAX_BACKOFF",
    "CAS_MAX_TRIES",
    "MAX_DOC_ID",
    "RedisStore",
    "decode_record",
    "decode_site",
    "encode_record",
    "encode_site",
    "record_bytes",
]

logger = logging.getLogger(__name__)

#: Largest doc_id the Redis store keeps exactly (sorted-set scores are doubles).
MAX_DOC_ID = 1 << 53
#: Tries of one compare-and-set (:meth:`RedisStore.compare_and_set`) before it is given
#: up (a safety net: an update that loses the race :data:`CAS_CLAIM_AFTER` times takes
#: the value's turn).
CAS_MAX_TRIES = 200
#: An update that lost the race this many times claims the value's turn.
CAS_CLAIM_AFTER = 8
#: Longest wait (seconds) before trying again a value another update has the turn of: a
#: random wait up to 0.2 ms, its bound doubled per wait up to this.
CAS_MAX_BACKOFF = 0.002
#: Meta values a store object keeps as last seen (the start of the next compare-and-set;
#: all forgotten when there would be more).
META_CACHE = 10_000
#: Records per write script call; a bigger call is split (see :meth:`RedisStore.put_many`).
WRITE_CHUNK = 20_000
#: Keys per read command or per mark/release script call.
READ_CHUNK = 1_000
#: Rounds of :meth:`RedisStore.make_due` for records that change while it writes them.
_MAKE_DUE_TRIES = 5
#: Doc ids per ``P:ids:<bucket>`` hash (small hashes are stored compactly by Redis).
_IDS_PER_BUCKET = 256

_STATUS_CODES = {Status.QUEUED: "0", Status.IDLE: "1", Status.IN_FLIGHT: "2", Status.GONE: "3"}
_STATUSES = {code.encode(): status for status, code in _STATUS_CODES.items()}

# Fields kept in the JSON part, by short name; only values other than the default
# (or of another type) are written.
_HEADER_FIELDS = frozenset({"key", "host", "doc_id", "status", "in_flight_since"})
_SHORT = {
    "url": "u", "provider": "pv", "first_seen": "fs", "last_crawl": "lc", "next_due": "nd",
    "refresh_secs": "rs", "p_l": "pl", "p_g": "pg", "visits": "v", "changes": "c",
    "p_c": "pc", "change_bucket": "cb", "change_rate": "cr", "errors": "e",
    "fingerprint": "fp", "etag": "et", "last_modified": "lm", "content_length": "cl",
    "access_count": "ac", "past_updates": "pu", "future_updates": "fu", "request": "rq",
    "field_hashes": "fh", "content_hash": "ch", "kept_items": "ki",
}  # fmt: skip
_LONG = {short: name for name, short in _SHORT.items()}
_DEFAULTS: dict[str, Any] = {}
for _f in fields(PageState):
    if _f.name not in _HEADER_FIELDS and _f.name != "url":
        _factory: Any = _f.default_factory
        _DEFAULTS[_f.name] = _f.default if _f.default is not MISSING else _factory()
_SCALAR_DEFAULTS = [(n, _SHORT[n], d, type(d)) for n, d in _DEFAULTS.items() if n not in
                    ("provider", "past_updates", "future_updates", "request",
                     "field_hashes", "kept_items")]  # fmt: skip

_dumps = compact_encoder(ensure_ascii=False)
_loads = json.loads
_new_object = object.__new__


def _float_text(value: float) -> str:
    return repr(float(value))


def default_priority(state: PageState) -> float:
    """The frontier priority of a record when nothing better is known: its request priority."""
    value = state.request.get("priority", 0) if isinstance(state.request, dict) else 0
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0


def encode_record(state: PageState, priority: float) -> tuple[bytes | str, ...]:
    """Return the 9 script arguments of ``state`` (see :data:`~._redis_lua.WRITE`).

    :raises ValueError, TypeError: for a record no backend can store (see ``check_state``).
    """
    check_state(state)
    if state.doc_id > MAX_DOC_ID:
        raise ValueError(
            f"doc_id ({state.doc_id!r}) of {state.key} is above 2**53, the largest doc_id "
            "the Redis store keeps exactly; pass doc_id=0 to get one from the store."
        )
    body: dict[str, Any] = {"u": state.url}
    data = state.__dict__
    for name, short, default, kind in _SCALAR_DEFAULTS:
        value = data[name]
        if value != default or type(value) is not kind:
            body[short] = value
    if type(state.next_due) is float:  # the header has it: read from there
        body.pop("nd", None)
        if type(state.first_seen) is float and state.first_seen == state.next_due:
            body["fs"] = "nd"  # a new URL is due when it is first seen: the time once
    if state.provider is not Provider.NORMAL:
        body["pv"] = Provider(state.provider).value
    if state.past_updates:
        body["pu"] = _bounded_past(state.past_updates)
    if state.future_updates:
        body["fu"] = _bounded_future(state.future_updates)
    if state.field_hashes:
        body["fh"] = state.field_hashes
    if state.kept_items is not None:
        body["ki"] = base64.b64encode(state.kept_items).decode("ascii")  # JSON has no bytes
    request = state.request
    if request:
        if request.get("url") == state.url:  # request_info() keeps the URL: keep it once
            request = {k: v for k, v in request.items() if k != "url"}
            body["ru"] = 1
        body["rq"] = request
    try:
        text = _dumps(body)
    except (TypeError, ValueError):
        copy_json(state.request, f"request of {state.key}")  # raises the clear TypeError
        raise
    if not math.isfinite(priority):
        priority = 0.0 if math.isnan(priority) else math.copysign(1e300, priority)
    since = state.in_flight_since
    return (
        bytes.fromhex(state.key),
        _STATUS_CODES[Status(state.status)],
        ("n" if state.last_crawl is None else "r") + ("0" if state.visits == 0 else "1"),
        str(state.doc_id),
        _float_text(state.next_due),
        "" if since is None else _float_text(since),
        _float_text(priority),
        state.host,
        text,
    )


def record_bytes(row: tuple[bytes | str, ...]) -> bytes:
    """The stored value of the record :func:`encode_record` gave ``row`` for (as the
    scripts build it, with the row's doc_id): what a compare-and-set expects after a
    write of that row."""
    status, flags, doc, due, since, priority, host, body = (
        v.decode() if isinstance(v, bytes) else v for v in row[1:]
    )
    head = "|".join((status, flags, doc, due, since, priority, str(len(host.encode()))))
    return f"{head}|{host}{body}".encode()


def decode_record(key: bytes, value: bytes) -> PageState:
    """Build the record stored under the 20-byte ``key`` from its stored ``value``."""
    status, _flags, doc_id, due, since, _priority, host_len, rest = value.split(b"|", 7)
    size = int(host_len)
    data = _loads(rest[size:])
    state: PageState = _new_object(PageState)
    attrs = dict(_DEFAULTS)
    attrs["next_due"] = float(due)
    attrs["past_updates"] = []
    attrs["future_updates"] = []
    attrs["request"] = {}
    attrs["field_hashes"] = []
    url_once = data.pop("ru", None)
    for short, item in data.items():
        attrs[_LONG[short]] = item
    if "ki" in data:
        attrs["kept_items"] = base64.b64decode(attrs["kept_items"])
    if url_once:
        attrs["request"] = {"url": attrs["url"], **attrs["request"]}
    if attrs["first_seen"] == "nd":
        attrs["first_seen"] = attrs["next_due"]
    attrs["provider"] = Provider(attrs["provider"])
    if data.get("fu"):
        attrs["future_updates"] = [(t, p) for t, p in attrs["future_updates"]]
    url = attrs.pop("url")
    state.__dict__.update(
        key=key.hex(),
        url=url,
        host=rest[:size].decode(),
        doc_id=int(doc_id),
        status=_STATUSES[status],
        in_flight_since=float(since) if since else None,
        **attrs,
    )
    return state


def decode_site(value: bytes | None) -> SiteState | None:
    """The site record stored as ``value`` (None for None)."""
    return None if value is None else SiteState.from_dict(_loads(value))


def encode_site(site: SiteState) -> bytes:
    """The stored value of ``site`` (JSON, after :func:`~._checks.check_site`)."""
    check_site(site)
    return _dumps(vars(site)).encode()  # a flat dataclass: vars() is to_dict(), faster


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


class RedisStore(ClosingStore):
    """:class:`~scrapy_fresh.store.base.StateStore` in Redis, shared by many crawl processes.

    :param client: a ``redis.Redis`` client (``decode_responses`` must be off).
    :param prefix: every key of this store starts with ``prefix + ":"``; one prefix per
        project or spider (:setting:`FRESH_REDIS_KEY`).
    :param priority: the frontier priority of a record, computed whenever it is written
        (the Redis frontier passes Xu et al.'s provider-aware score); by default the
        request priority.
    :param owns_client: close the client's connections in :meth:`close`.

    Every write call is one Lua script (atomic, one round trip) up to
    :data:`WRITE_CHUNK` records; a bigger ``put_many``/``add_many`` is split into
    atomic chunks after every record was checked. Writes are as durable as the server's
    persistence makes them (``appendonly yes`` for a crawl that must survive a Redis
    restart); :meth:`flush` has nothing to do. Doc ids go up to 2**53. Thread-safe:
    redis-py clients are, and every call is one atomic server-side step.

    Failures of Redis (connection, timeout, out of memory) raise
    :class:`~scrapy_fresh.exceptions.StoreError` naming the server.
    """

    def __init__(
        self,
        client: redis.Redis,
        prefix: str = "fresh",
        *,
        priority: Callable[[PageState], float] | None = None,
        owns_client: bool = False,
    ) -> None:
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"prefix ({prefix!r}) must be a non-empty string.")
        if client.get_connection_kwargs().get("decode_responses"):
            raise ValueError(
                "The Redis client decodes responses (decode_responses=True); the store needs "
                "raw bytes. Create the client without decode_responses."
            )
        self.client = client
        self.prefix = prefix
        self.priority: Callable[[PageState], float] = priority or default_priority
        self._owns_client = owns_client
        self._closed = False
        #: Writes refused because they would move a record back (see ``regresses``).
        self.regressions_refused = 0
        self._lock = threading.Lock()
        k = prefix + ":"
        self.k_pages, self.k_ids, self.k_due = k + "pages", k + "ids", k + "due"
        self.k_flight, self.k_counts, self.k_sites = k + "flight", k + "counts", k + "sites"
        self.k_blocked = k + "blocked"
        self._write = client.register_script(lua.WRITE)
        self._delete = client.register_script(lua.DELETE)
        self._due = client.register_script(lua.DUE)
        self._mark = client.register_script(lua.MARK)
        self._release = client.register_script(lua.RELEASE)
        self._write_if = client.register_script(lua.WRITE_IF)
        self._value_cas = client.register_script(lua.VALUE_CAS)
        self._index_gone = client.register_script(lua.INDEX_GONE)
        #: Updates of meta records run again because another process wrote in between.
        self.meta_retries = 0
        #: ``"<namespace>/<key>"`` -> its stored value as last seen (None: none).
        self._meta_values: dict[str, bytes | None] = {}
        self._claim_id = uuid.uuid4().hex[:16]
        self._claim_numbers = iter(range(1 << 62))

    @classmethod
    def from_settings(
        cls,
        settings: Any,
        prefix: str,
        *,
        priority: Callable[[PageState], float] | None = None,
    ) -> RedisStore:
        """Connect as scrapy-redis does (``REDIS_URL``, ``REDIS_PARAMS``, ...).

        Responses are always read as bytes, whatever ``REDIS_DECODE_RESPONSES`` says.
        Unless ``REDIS_PARAMS`` gives a ``retry``, a failed command is retried once at
        once (a dropped connection) and then fails: redis-py's default retries would
        block the crawl for seconds per call while Redis is down, and the crawl has its
        own back-off (:mod:`scrapy_fresh.distributed.shared`).
        """
        from redis.backoff import NoBackoff
        from redis.retry import Retry
        from scrapy_redis.connection import get_redis_from_settings

        client = get_redis_from_settings(settings)
        if "retry" not in settings.getdict("REDIS_PARAMS"):
            client.set_retry(Retry(NoBackoff(), 1))
        kwargs = client.get_connection_kwargs()
        if kwargs.get("decode_responses"):
            pool = client.connection_pool
            params = {**pool.connection_kwargs, "decode_responses": False}
            client = type(client)(
                connection_pool=type(pool)(connection_class=pool.connection_class, **params)
            )
            if "retry" not in settings.getdict("REDIS_PARAMS"):
                client.set_retry(Retry(NoBackoff(), 1))
        return cls(client, prefix, priority=priority, owns_client=True)

    # -- internals -------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("The RedisStore is closed; create a new store to use it again.")

    @property
    def where(self) -> str:
        """The server, as ``host:port`` (or its Unix socket path)."""
        kwargs = self.client.get_connection_kwargs()
        return str(kwargs.get("path") or f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}")

    def _error(self, action: str, exc: Exception) -> StoreError:
        where = self.where
        return StoreError(
            f"Redis store {self.prefix!r} at {where} failed to {action}: "
            f"{type(exc).__name__}: {exc}"
        )

    def _call(self, action: str, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        import redis

        self._check_open()
        try:
            return func(*args, **kwargs)
        except redis.exceptions.ResponseError as exc:
            text = str(exc)
            if text.startswith("DOCID "):
                _, doc_id, key, owner = text.split()[:4]
                raise StoreError(
                    f"doc_id {doc_id} of new record {key} is already used by {owner}; "
                    "pass doc_id=0 to get a new one."
                ) from None
            raise self._error(action, exc) from exc
        except redis.exceptions.RedisError as exc:
            raise self._error(action, exc) from exc

    def _run(self, script: Any, action: str, *args: Any) -> Any:
        return self._call(action, script, args=(self.prefix, *args))

    def _encode_all(self, states: Iterable[PageState]) -> list[tuple[bytes | str, ...]]:
        priority = self.priority
        return [encode_record(s, priority(s)) for s in states]

    def _writes(self, mode: str, rows: list[tuple[bytes | str, ...]]) -> list[int]:
        written: list[int] = []
        for start in range(0, len(rows), WRITE_CHUNK):
            chunk = rows[start : start + WRITE_CHUNK]
            args: list[bytes | str] = [mode]
            for row in chunk:
                args.extend(row)
            done = self._run(self._write, f"{mode} records", *args)
            written.extend(start + int(i) for i in done)
        return written

    # -- records ---------------------------------------------------------------

    def get(self, key: str) -> PageState | None:
        """Return the record of ``key``, or None."""
        raw = bytes.fromhex(check_key(key))
        value = self._call("get a record", self.client.hget, self.k_pages, raw)
        return None if value is None else decode_record(raw, value)

    def get_many(self, keys: Iterable[str]) -> dict[str, PageState]:
        """Return the records of ``keys`` that exist, by key (one pipeline)."""
        raws = list(dict.fromkeys(bytes.fromhex(check_key(k)) for k in keys))
        self._check_open()
        if not raws:
            return {}
        chunks = list(_chunks(raws, READ_CHUNK))

        def fetch() -> list[Any]:
            pipe = self.client.pipeline(transaction=False)
            for chunk in chunks:
                pipe.hmget(self.k_pages, chunk)
            return pipe.execute()

        out: dict[str, PageState] = {}
        for chunk, values in zip(chunks, self._call("get records", fetch), strict=True):
            for raw, value in zip(chunk, values, strict=True):
                if value is not None:
                    state = decode_record(raw, value)
                    out[state.key] = state
        return out

    def read_records(self, keys: Iterable[str]) -> dict[str, tuple[PageState, bytes]]:
        """Return the records of ``keys`` that exist with their stored values, by key.

        The read half of a compare-and-set (:meth:`RedisFrontier.write_records
        <scrapy_fresh.distributed.frontier.RedisFrontier.write_records>`).
        """
        raws = list(dict.fromkeys(bytes.fromhex(check_key(k)) for k in keys))
        self._check_open()
        out: dict[str, tuple[PageState, bytes]] = {}
        for chunk in _chunks(raws, READ_CHUNK):
            values = self._call("get records", self.client.hmget, self.k_pages, chunk)
            for raw, value in zip(chunk, values, strict=True):
                if value is not None:
                    out[raw.hex()] = (decode_record(raw, value), value)
        return out

    def put(self, state: PageState) -> None:
        """Insert or replace the record of ``state.key`` (see :meth:`put_many`)."""
        self.put_many((state,))

    def put_many(self, states: Iterable[PageState]) -> None:
        """Insert or replace records in one atomic script call: all of them or none.

        Every record is checked before anything is sent. Calls of more than
        :data:`WRITE_CHUNK` records are written in atomic chunks of that size.
        """
        self._check_open()
        states = list(states)
        rows = self._encode_all(states)
        if rows:
            written = set(self._writes("put", rows))
            if len(written) < len(rows):  # older than the stored record: ``regresses``
                refused = [s for i, s in enumerate(states) if i not in written]
                self.regressions_refused += len(refused)
                log_regressions(self, refused)

    def add_many(self, states: Iterable[PageState]) -> list[str]:
        """Insert the records whose key is absent; return their keys in input order."""
        self._check_open()
        rows = self._encode_all(states)
        if not rows:
            return []
        return [rows[i][0].hex() for i in self._writes("add", rows)]  # type: ignore[union-attr]

    def delete(self, key: str) -> bool:
        """Remove the record of ``key``; return whether there was one."""
        raw = bytes.fromhex(check_key(key))
        return bool(self._run(self._delete, "delete a record", raw))

    # -- scheduling ------------------------------------------------------------

    def due(self, now: float, limit: int) -> list[PageState]:
        """Return up to ``limit`` queued or idle records with ``next_due <= now``, most urgent first."""
        check_limit(limit)
        check_time("now", now)
        self._check_open()
        if limit == 0:
            return []
        flat = self._run(self._due, "read due records", _float_text(now), limit)
        return [decode_record(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]

    def next_due_time(self) -> float | None:
        """Return the earliest ``next_due`` of a queued or idle record, or None."""
        first = self._call(
            "read the next due time", self.client.zrange, self.k_due, 0, 0, withscores=True
        )
        return float(first[0][1]) if first else None

    def count_due(self, now: float) -> int:
        """How many queued or idle records are due at ``now`` (one ZCOUNT)."""
        check_time("now", now)
        return int(
            self._call(
                "count due records", self.client.zcount, self.k_due, "-inf", _float_text(now)
            )
        )

    def mark_in_flight(self, keys: Iterable[str], now: float) -> None:
        """Mark the records of ``keys`` in flight since ``now``; unknown keys are ignored."""
        check_time("now", now)
        raws = [bytes.fromhex(check_key(k)) for k in keys]
        self._check_open()
        since = _float_text(now)
        for chunk in _chunks(raws, WRITE_CHUNK):
            self._run(self._mark, "mark records in flight", since, *chunk)

    def release_in_flight(self, older_than: float | None = None) -> int:
        """Put in-flight records back to queued (never visited) or idle; return how many.

        Works through the leases :data:`READ_CHUNK` at a time (one atomic script each),
        so a big release never blocks the server for long.
        """
        if older_than is not None:
            check_time("older_than", older_than)
        self._check_open()
        bound = "" if older_than is None else _float_text(older_than)
        released = 0
        while True:
            looked, done = self._run(self._release, "release in-flight records", bound, READ_CHUNK)
            released += int(done)
            if int(looked) < READ_CHUNK or not done:
                return released

    # -- operator's controls ---------------------------------------------------

    def make_due(self, keys: Iterable[str], now: float) -> list[str]:
        """Make the queued or idle records of ``keys`` due at ``now``; return their keys.

        Each record is written only while it is as it was read (the frontier's
        compare-and-set script): one a worker leased or visited meanwhile is read again,
        and left alone if it is no longer queued or idle and due later.
        """
        check_time("now", now)
        wanted = list(dict.fromkeys(check_key(k) for k in keys))
        made: set[str] = set()
        for _ in range(_MAKE_DUE_TRIES):
            read = self.read_records(wanted)
            todo = [
                (state, value)
                for state, value in read.values()
                if state.status in (Status.QUEUED, Status.IDLE) and state.next_due > now
            ]
            if not todo:
                break
            args: list[bytes | str] = []
            for state, value in todo:
                state.next_due = now
                row = encode_record(state, self.priority(state))
                args += (row[0], value, *row[1:3], *row[4:])
            codes, _ = self._run(self._write_if, "make records due", *args)
            retry = []
            for (state, _value), code in zip(todo, codes, strict=True):
                if int(code) == 1:
                    made.add(state.key)
                elif int(code) == -2:  # changed since it was read: look again
                    retry.append(state.key)
            wanted = retry
            if not wanted:
                break
        return [k for k in dict.fromkeys(check_key(k) for k in keys) if k in made]

    def block_host(self, host: str, now: float) -> bool:
        """Block ``host`` from ``now`` on; False if it was blocked already."""
        check_time("now", now)
        return bool(
            self._call(
                "block a host", self.client.hsetnx, self.k_blocked, check_host(host),
                _float_text(now),
            )
        )  # fmt: skip

    def unblock_host(self, host: str) -> bool:
        """Unblock ``host``; return whether it was blocked."""
        return bool(
            self._call("unblock a host", self.client.hdel, self.k_blocked, check_host(host))
        )

    def blocked_hosts(self) -> dict[str, float]:
        """The blocked hosts, with when each was blocked."""
        raw = self._call("read the blocked hosts", self.client.hgetall, self.k_blocked)
        return {host.decode(): float(since) for host, since in raw.items()}

    def counts(self) -> dict[Status, int]:
        """Return the number of records per status (every status, zero included)."""
        codes = list(_STATUSES)
        values = self._call("read the counts", self.client.hmget, self.k_counts, codes)
        return {_STATUSES[c]: int(v or 0) for c, v in zip(codes, values, strict=True)}

    def iterate(self, batch_size: int = 1000) -> Iterator[PageState]:
        """Yield every record in ``doc_id`` order, reading ``batch_size`` at a time.

        Keyset pagination over the doc ids: records written during the iteration keep
        their doc_id and never come twice.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size ({batch_size!r}) must be 1 or more.")
        self._check_open()
        return self._iterate(batch_size)

    def _iterate(self, batch_size: int) -> Iterator[PageState]:
        last = self._call("iterate over records", self.client.get, f"{self.prefix}:lastid")
        buckets = range(int(last or 0) // _IDS_PER_BUCKET + 1)
        step = max(1, batch_size // _IDS_PER_BUCKET)
        for start in range(0, len(buckets), step):
            chunk = buckets[start : start + step]

            def read_ids(chunk: range = chunk) -> list[Any]:
                pipe = self.client.pipeline(transaction=False)
                for bucket in chunk:
                    pipe.hgetall(f"{self.k_ids}:{bucket}")
                return pipe.execute()

            ids: list[tuple[int, bytes]] = []
            for found in self._call("iterate over records", read_ids):
                ids.extend(sorted((int(doc), raw) for doc, raw in found.items()))
            for part in _chunks(ids, batch_size):
                raws = [raw for _, raw in part]
                values = self._call("iterate over records", self.client.hmget, self.k_pages, raws)
                for raw, value in zip(raws, values, strict=True):
                    if value is not None:
                        yield decode_record(raw, value)

    def __len__(self) -> int:
        return sum(self.counts().values())

    # -- sites -----------------------------------------------------------------

    def get_site(self, host: str) -> SiteState | None:
        """Return the site record of ``host``, or None."""
        value = self._call("read a site", self.client.hget, self.k_sites, host.encode())
        return decode_site(value)

    def read_sites(self, hosts: Iterable[str]) -> dict[str, bytes | None]:
        """Return the stored site values of ``hosts`` as bytes (None: no site record), by host.

        One command. With :func:`decode_site` this is the read half of a compare-and-set:
        :meth:`RedisFrontier.commit_visit
        <scrapy_fresh.distributed.frontier.RedisFrontier.commit_visit>` writes a site
        only while its stored value is still the one read.
        """
        names = list(dict.fromkeys(hosts))
        if not names:
            self._check_open()
            return {}
        values = self._call(
            "read sites", self.client.hmget, self.k_sites, [h.encode() for h in names]
        )
        return dict(zip(names, values, strict=True))

    def put_site(self, site: SiteState) -> None:
        """Insert or replace the site record of ``site.host`` (last writer wins: a crawl's
        visits update sites by compare-and-set through the Redis frontier instead)."""
        self._call(
            "write a site", self.client.hset, self.k_sites, site.host.encode(),
            encode_site(site),
        )  # fmt: skip

    def sites(self) -> Iterator[SiteState]:
        """Yield every site record once (in the server's order)."""
        self._check_open()
        return self._sites()

    def _sites(self) -> Iterator[SiteState]:
        seen: set[bytes] = set()
        for batch in self._hscan("read sites", self.k_sites):
            for host, value in batch.items():
                if host not in seen:
                    seen.add(host)
                    yield SiteState.from_dict(_loads(value))

    def _hscan(self, action: str, name: str) -> Iterator[dict[bytes, bytes]]:
        """The fields of the hash ``name`` in HSCAN batches (a field may come twice)."""
        cursor = 0
        while True:
            cursor, batch = self._call(action, self.client.hscan, name, cursor, count=1000)
            yield batch
            if not cursor:
                return

    # -- compare-and-set -------------------------------------------------------

    def compare_and_set(
        self, hash_name: str, field: str, turn: str,
        change: Callable[[bytes | None], bytes | None], known: dict[str, bytes | None], *,
        max_tries: int = CAS_MAX_TRIES, claim_after: int = CAS_CLAIM_AFTER,
    ) -> tuple[bool, int]:  # fmt: skip
        """Change the field ``field`` of the hash ``P:<hash_name>`` by compare-and-set
        (:data:`~scrapy_fresh.distributed._lua.VALUE_CAS`); return (written, retries).

        ``change(value)`` gets the stored value (None: there is none) and returns the new
        one, or None to leave it; it runs again on the new value when another process
        wrote in between, so it must compute from its argument only. ``known`` holds the
        values last seen (the first try starts there: one round trip when nobody else
        wrote); it is kept up to date. After ``claim_after`` lost races the update claims
        the value's turn (``P:sturn:<turn>``, COMMIT's), so it gets through however busy
        the value is; after ``max_tries`` it is given up (logged).
        """
        tries = waits = 0
        claim = ""
        while True:
            base = known.get(field)
            value = change(base)
            if value is None and not claim:
                return False, tries  # nothing to write (a turn claimed is handed back below)
            check: bytes | str = "?" if base is None else b"=" + base
            code, now_value = self._run(
                self._value_cas, f"update {hash_name} {field}", hash_name, field.encode(),
                turn, check, value or b"", claim,
            )  # fmt: skip
            known[field] = now_value or None
            code = int(code)
            if code == 1:
                return value is not None, tries
            tries += 1
            if tries >= max_tries:
                logger.warning(
                    "scrapy_fresh: %(what)s was busy for %(n)d tries; an update of it is "
                    "not written.",
                    {"what": f"{hash_name} {field}", "n": max_tries},
                )
                return False, tries
            if code == -3:
                waits += 1
                time.sleep(random.uniform(0.0, min(CAS_MAX_BACKOFF, 0.0001 * 2**waits)))
            elif tries >= claim_after and not claim:
                claim = f"{self._claim_id}:{next(self._claim_numbers)}"

    # -- meta records ----------------------------------------------------------

    def _k_meta(self, namespace: str) -> str:
        return f"{self.prefix}:meta:{namespace}"

    def get_meta(self, namespace: str, key: str) -> dict[str, Any] | None:
        """Return the meta record ``key`` of ``namespace``, or None."""
        check_meta_name(namespace, key)
        value = self._call("read a meta record", self.client.hget, self._k_meta(namespace), key)
        self._meta_values[f"{namespace}/{key}"] = value
        return None if value is None else decode_meta(value)

    def put_meta(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        """Insert or replace the meta record ``key`` of ``namespace`` (last writer wins;
        :meth:`update_meta` for records several processes change)."""
        text = encode_meta(namespace, key, value).encode()
        self._call("write a meta record", self.client.hset, self._k_meta(namespace), key, text)

    def update_meta(self, namespace: str, key: str, change: MetaChange) -> dict[str, Any] | None:
        """Write ``change(stored value)`` unless it is None, by compare-and-set
        (:meth:`compare_and_set`: concurrent updates from several workers all count);
        return what was written (None: nothing)."""
        check_meta_name(namespace, key)
        name = f"{namespace}/{key}"
        known = self._meta_values
        if name not in known:
            if len(known) >= META_CACHE:
                known.clear()
            known[name] = self._call(
                "read a meta record", self.client.hget, self._k_meta(namespace), key
            )
        written: list[bytes] = []

        def raw_change(base: bytes | None) -> bytes | None:
            new = change(None if base is None else decode_meta(base))
            if new is None:
                return None
            written[:] = [encode_meta(namespace, key, new).encode()]
            return written[0]

        cache = {key: known[name]}
        done, retries = self.compare_and_set(
            f"meta:{namespace}", key, f"meta:{name}", raw_change, cache
        )
        known[name] = cache[key]
        self.meta_retries += retries
        return decode_meta(written[0]) if done else None

    def delete_meta(self, namespace: str, key: str) -> bool:
        """Remove the meta record ``key`` of ``namespace``; return whether there was one."""
        check_meta_name(namespace, key)
        self._meta_values.pop(f"{namespace}/{key}", None)
        gone = self._call("delete a meta record", self.client.hdel, self._k_meta(namespace), key)
        return bool(gone)

    def meta(self, namespace: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield every meta record of ``namespace``, by key (read with HSCAN, sorted)."""
        check_meta_name(namespace, "-")
        self._check_open()
        found: dict[str, bytes] = {}
        for batch in self._hscan("read meta records", self._k_meta(namespace)):
            found.update((k.decode(), v) for k, v in batch.items())
        return ((key, decode_meta(found[key])) for key in sorted(found))

    def upgrade_legacy_sites(self) -> int:
        """Move the site records that were meta records (written before meta records
        existed: :mod:`scrapy_fresh.store._legacy`) into meta records; return how many.
        A meta record that exists already is kept (a newer worker wrote it)."""
        moved = 0
        for site in [s for s in self.sites() if is_legacy_site(s.host)]:
            target = meta_of_site(site)
            pipe = self.client.pipeline(transaction=True)
            if target is not None:
                namespace, key, value = target
                pipe.hsetnx(self._k_meta(namespace), key, encode_meta(namespace, key, value))
            pipe.hdel(self.k_sites, site.host.encode())
            self._call("move an old site record", pipe.execute)
            moved += 1
        if moved:
            logger.info(
                "Redis store %(prefix)s: moved %(n)d old trust, quiet-claim and run records "
                "from the site records to meta records.",
                {"prefix": self.prefix, "n": moved},
            )
        return moved

    def upgrade_gone_due(self) -> int:
        """Put gone records written before gone pages were checked again (they were
        left out of the due set, so never came due) in the due set, once per store
        (``P:upgraded`` notes it); return how many."""
        marker = f"{self.prefix}:upgraded"
        if self._call("read the upgrades", self.client.hget, marker, "gone_due"):
            return 0
        added = 0
        for batch in self._hscan("find gone records", self.k_pages):
            gone = [key for key, value in batch.items() if value.startswith(b"3|")]
            if gone:  # a key HSCAN gives twice is indexed once: the script checks
                added += int(self._run(self._index_gone, "index gone records", *gone))
        self._call("note the upgrade", self.client.hset, marker, "gone_due", "1")
        if added:
            logger.info(
                "Redis store %(prefix)s: %(n)d gone pages written by an earlier version "
                "are checked again from now on (put in the due set).",
                {"prefix": self.prefix, "n": added},
            )
        return added

    # -- lifecycle -------------------------------------------------------------

    def flush(self) -> None:
        """Nothing to do: every call is written when it returns."""
        self._check_open()

    def close(self) -> None:
        """Close the store (and the client's connections if the store made it)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._owns_client:
                self.client.close()

    def clear(self) -> int:
        """Delete every key of this store's prefix (tests, resets); return how many."""
        self._check_open()
        deleted = 0
        pattern = self.prefix.replace("[", "\\[").replace("*", "\\*").replace("?", "\\?")
        for keys in _chunks(self.client.scan_iter(match=pattern + ":*", count=1000), 500):
            deleted += self._call("clear the store", self.client.delete, *keys)
        return deleted

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<RedisStore {self.prefix!r} at {self.where} {state}>"
