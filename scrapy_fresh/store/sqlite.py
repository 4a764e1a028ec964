"""The embedded default store: one SQLite file in WAL mode.

:class:`SQLiteStore` keeps one row per canonical URL in a single file, with an
index that serves :meth:`~SQLiteStore.due` without scanning the table, batched
writes inside transactions, and a schema version checked on open. Everything is a
plain column or JSON text; nothing is pickled.

.. warning::

   The file layout (tables, columns, codes) is internal and may change between
   versions; the schema version stored in the file guards against reading a file
   with the wrong layout. Use the store API, or the ``pages_view`` view for
   read-only inspection with the ``sqlite3`` shell.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import sqlite3
import threading
import time
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy_fresh.exceptions import SchemaVersionError, StoreError
from scrapy_fresh.jsontext import compact_encoder
from scrapy_fresh.store._checks import (
    check_host,
    check_key,
    check_limit,
    check_meta_name,
    check_site,
    check_state,
    check_time,
    decode_meta,
    encode_meta,
    log_regressions,
)
from scrapy_fresh.store._file_keys import FileKeys
from scrapy_fresh.store._legacy import meta_of_site
from scrapy_fresh.store._waiting import Waiting
from scrapy_fresh.store.base import (
    ClosingStore,
    PageState,
    Provider,
    SiteState,
    Status,
    _bounded_future,
    _bounded_past,
    moves_back,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
    from os import PathLike

    from scrapy_fresh.store.base import MetaChange


__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "SQLiteStore"]

logger = logging.getLogger(__name__)

#: ``PRAGMA application_id`` of a scrapy_fresh store file ("FRSH").
APPLICATION_ID = 0x46525348
#: ``PRAGMA user_version`` of the files this code writes and reads.
SCHEMA_VERSION = 7

#: Integer codes of :class:`~scrapy_fresh.store.base.Status` in the ``status`` column.
STATUS_CODES: dict[Status, int] = {
    Status.QUEUED: 0,
    Status.IDLE: 1,
    Status.IN_FLIGHT: 2,
    Status.GONE: 3,
}
#: Integer codes of :class:`~scrapy_fresh.store.base.Provider` in the ``provider`` column.
PROVIDER_CODES: dict[Provider, int] = {Provider.NORMAL: 0, Provider.SMART: 1, Provider.SUPER: 2}
_STATUSES = {code: status for status, code in STATUS_CODES.items()}
_IN_FLIGHT = STATUS_CODES[Status.IN_FLIGHT]
_PROVIDERS = {code: provider for provider, code in PROVIDER_CODES.items()}

_U64 = 1 << 64
_I64_MAX = (1 << 63) - 1
_CHUNK = 2048  # records per executemany() call inside one transaction
_IN_CHUNK = 500  # keys per "IN (...)" lookup
_PRAGMA_NAME = re.compile(r"[a-z_]+")
_PRAGMA_VALUE = re.compile(r"[a-z_]+|-?[0-9]+(\.[0-9]+)?")

# The columns of ``pages`` in PageState field order (doc_id moved first in the table).
_PAGE_COLUMNS = (
    "key",
    "url",
    "host_id",
    "doc_id",
    "status",
    "provider",
    "first_seen",
    "last_crawl",
    "next_due",
    "in_flight_since",
    "refresh_secs",
    "p_l",
    "p_g",
    "visits",
    "changes",
    "p_c",
    "change_bucket",
    "change_rate",
    "errors",
    "fingerprint",
    "etag",
    "last_modified",
    "content_length",
    "access_count",
    "past_updates",
    "future_updates",
    "request",
    "field_hashes",
    "content_hash",
    "kept_items",
)
# Positions in a page row of what a write may not move back (base.moves_back).
_VISITS, _LAST_CRAWL = _PAGE_COLUMNS.index("visits"), _PAGE_COLUMNS.index("last_crawl")
_SELECT_PAGES = f"SELECT {', '.join(_PAGE_COLUMNS)} FROM pages"
_INSERT_PAGES = (
    f"INSERT INTO pages ({', '.join(_PAGE_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_PAGE_COLUMNS))})"
)
_ADD_PAGES = f"{_INSERT_PAGES} ON CONFLICT (key) DO NOTHING"
# An upsert never moves a record back (base.regresses): fewer visits, or an older or
# no last crawl, leaves the stored row as it is (and out of the row count).
_UPSERT_PAGES = (
    f"{_INSERT_PAGES} ON CONFLICT (key) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _PAGE_COLUMNS if c not in ("key", "doc_id"))
    + " WHERE excluded.visits >= pages.visits AND (pages.last_crawl IS NULL OR "
    "excluded.last_crawl >= pages.last_crawl)"
)
_SELECT_SITES = "SELECT host, visits, changes, p_c, refresh_secs, updated_at, checks FROM sites"
_REPLACE_SITES = (
    "INSERT OR REPLACE INTO sites (host, visits, changes, p_c, refresh_secs, updated_at, "
    "checks) VALUES (?, ?, ?, ?, ?, ?, ?)"
)

_BLOCKED_TABLE = (
    "CREATE TABLE blocked_hosts (host TEXT PRIMARY KEY, since REAL NOT NULL) WITHOUT ROWID"
)
# queued, idle and gone records come due (a gone page is checked again after a back-off)
_DUE_INDEX = "CREATE INDEX pages_due ON pages (next_due, key) WHERE status IN (0, 1, 3)"
_META_TABLE = (
    "CREATE TABLE meta (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, "
    "PRIMARY KEY (namespace, key)) WITHOUT ROWID"
)
_SCHEMA = (
    """CREATE TABLE hosts (
        host_id INTEGER PRIMARY KEY,
        host TEXT NOT NULL UNIQUE
    )""",
    """CREATE TABLE pages (
        doc_id INTEGER PRIMARY KEY AUTOINCREMENT,
        key BLOB NOT NULL UNIQUE,
        url TEXT NOT NULL,
        host_id INTEGER NOT NULL,
        status INTEGER NOT NULL,
        provider INTEGER NOT NULL,
        first_seen REAL NOT NULL,
        last_crawl REAL,
        next_due REAL NOT NULL,
        in_flight_since REAL,
        refresh_secs REAL NOT NULL,
        p_l REAL NOT NULL,
        p_g REAL NOT NULL,
        visits INTEGER NOT NULL,
        changes INTEGER NOT NULL,
        p_c REAL NOT NULL,
        change_bucket INTEGER NOT NULL,
        change_rate REAL,
        errors INTEGER NOT NULL,
        fingerprint INTEGER,
        etag TEXT,
        last_modified TEXT,
        content_length INTEGER,
        access_count INTEGER NOT NULL,
        past_updates TEXT,
        future_updates TEXT,
        request TEXT,
        field_hashes TEXT,
        content_hash INTEGER,
        kept_items BLOB
    )""",
    # due(): the most urgent queued/idle records, in (next_due, key) order, read
    # straight off the index (key included so that ties need no sort).
    _DUE_INDEX,
    # release_in_flight(): only in-flight records are indexed, so it costs nothing else.
    "CREATE INDEX pages_in_flight ON pages (in_flight_since) WHERE status = 2",
    """CREATE TABLE sites (
        host TEXT PRIMARY KEY,
        visits INTEGER NOT NULL,
        changes INTEGER NOT NULL,
        p_c REAL NOT NULL,
        refresh_secs REAL,
        updated_at REAL NOT NULL,
        checks TEXT
    ) WITHOUT ROWID""",
    # counts() and len() in O(1): one row per status, kept by triggers.
    "CREATE TABLE status_counts (status INTEGER PRIMARY KEY, n INTEGER NOT NULL)",
    "INSERT INTO status_counts (status, n) VALUES (0, 0), (1, 0), (2, 0), (3, 0)",
    """CREATE TRIGGER pages_count_insert AFTER INSERT ON pages BEGIN
        UPDATE status_counts SET n = n + 1 WHERE status = new.status;
    END""",
    """CREATE TRIGGER pages_count_delete AFTER DELETE ON pages BEGIN
        UPDATE status_counts SET n = n - 1 WHERE status = old.status;
    END""",
    """CREATE TRIGGER pages_count_update AFTER UPDATE OF status ON pages
    WHEN old.status IS NOT new.status BEGIN
        UPDATE status_counts SET n = n - 1 WHERE status = old.status;
        UPDATE status_counts SET n = n + 1 WHERE status = new.status;
    END""",
    # Hosts an operator blocked (scrapy-fresh block): no request goes to them.
    _BLOCKED_TABLE,
    # What the crawl learns beside pages and sites (trust, quiet claims, run cadence).
    _META_TABLE,
    # For people: the records with readable keys, hosts, statuses and fingerprints.
    """CREATE VIEW pages_view AS SELECT
        doc_id, lower(hex(key)) AS key, url, hosts.host AS host,
        CASE status WHEN 0 THEN 'queued' WHEN 1 THEN 'idle' WHEN 2 THEN 'in_flight'
            WHEN 3 THEN 'gone' END AS status,
        CASE provider WHEN 0 THEN 'normal' WHEN 1 THEN 'smart' WHEN 2 THEN 'super'
            END AS provider,
        datetime(first_seen, 'unixepoch') AS first_seen,
        datetime(last_crawl, 'unixepoch') AS last_crawl,
        datetime(next_due, 'unixepoch') AS next_due,
        datetime(in_flight_since, 'unixepoch') AS in_flight_since,
        refresh_secs, p_l, p_g, visits, changes, p_c, change_bucket, change_rate, errors,
        printf('%016x', fingerprint) AS fingerprint, etag, last_modified, content_length,
        access_count, past_updates, future_updates, request, field_hashes,
        printf('%016x', content_hash) AS content_hash
    FROM pages JOIN hosts USING (host_id)""",
)


def _move_legacy_sites(conn: sqlite3.Connection) -> None:
    """Move the site rows that were meta records into the meta table
    (:mod:`scrapy_fresh.store._legacy`)."""
    rows = conn.execute(f"{_SELECT_SITES} WHERE instr(host, '/') > 0").fetchall()
    for row in rows:
        site = _site(row)
        moved = meta_of_site(site)
        if moved is not None:
            conn.execute(
                "INSERT OR REPLACE INTO meta (namespace, key, value) VALUES (?, ?, ?)",
                (moved[0], moved[1], encode_meta(*moved)),
            )
        conn.execute("DELETE FROM sites WHERE host = ?", (site.host,))


#: Schema migrations: ``_MIGRATIONS[v]`` turns a version ``v`` file into ``v + 1``; a
#: step is an SQL statement or a function of the connection.
_MIGRATIONS: dict[int, tuple[str | Callable[[sqlite3.Connection], None], ...]] = {
    # 2: sites keep what was learned about the host's validators (SiteState.checks).
    1: ("ALTER TABLE sites ADD COLUMN checks TEXT",),
    # 3: pages keep what the change verdict compares: per-item field hashes and the
    # exact content digest (scrapy_fresh.fingerprint.verdict); the view shows them.
    2: (
        "ALTER TABLE pages ADD COLUMN field_hashes TEXT",
        "ALTER TABLE pages ADD COLUMN content_hash INTEGER",
        "DROP VIEW IF EXISTS pages_view",
        _SCHEMA[-1],
    ),
    # 4: the hosts an operator blocked (scrapy-fresh block).
    3: (_BLOCKED_TABLE,),
    # 5: pages keep the items of their last visit (FRESH_KEEP_ITEMS, compressed).
    4: ("ALTER TABLE pages ADD COLUMN kept_items BLOB",),
    # 6: trust, quiet claims and the run cadence are meta records, not site rows.
    5: (_META_TABLE, _move_legacy_sites),
    # 7: gone records come due too (checked again after a back-off).
    6: ("DROP INDEX pages_due", _DUE_INDEX),
}

_dumps = compact_encoder(ensure_ascii=False)
_raw_decode = json.JSONDecoder().raw_decode  # our JSON has no surrounding whitespace
_new_object = object.__new__


def _site(row: tuple[Any, ...]) -> SiteState:
    host, visits, changes, p_c, refresh_secs, updated_at, checks = row
    if type(checks) is dict:  # a waiting row's (see _file_site_row)
        return SiteState(host, visits, changes, p_c, refresh_secs, updated_at, dict(checks))
    decoded = _raw_decode(checks)[0] if checks else {}
    return SiteState(host, visits, changes, p_c, refresh_secs, updated_at, decoded)


def _file_site_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A site row as the file holds it: a waiting row keeps its ``checks`` as a dict
    (a copy) and is encoded here, once per write of the waiting rows rather than at
    every visit of the host (a visit's site write is the latest of many)."""
    checks = row[6]
    if type(checks) is not dict:
        return row
    return (*row[:6], _dumps(checks))


def _doc_id(rows: dict[bytes, tuple[Any, ...]], blob: bytes) -> int | None:
    row = rows.get(blob)
    return None if row is None else row[3]


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


class _Reading:
    """``with store._reading(op)``: the store's lock held, its connection given, an
    ``sqlite3.Error`` raised as a :class:`StoreError` naming ``op``; the write-behind rows
    are written first unless the call reads them itself (``waiting_ok``). A class, not a
    generator context manager: several are entered per visit, and a generator's costs
    about three times as much."""

    __slots__ = ("_op", "_store", "_waiting_ok")

    def __init__(self, store: SQLiteStore, op: str, waiting_ok: bool) -> None:
        self._store = store
        self._op = op
        self._waiting_ok = waiting_ok

    def __enter__(self) -> sqlite3.Connection:
        store = self._store
        store._lock.acquire()
        try:
            conn = store._connection()
            if store._waiting and not self._waiting_ok:
                store._write_waiting(conn)
        except sqlite3.Error as exc:
            store._lock.release()
            raise store._error(self._op, exc) from exc
        except BaseException:
            store._lock.release()
            raise
        return conn

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        self._store._lock.release()
        if isinstance(exc, sqlite3.Error):
            raise self._store._error(self._op, exc) from exc


class _Group:
    """``with store.grouped()``: the write calls inside are committed once, at the end
    (see :meth:`SQLiteStore.grouped`). A class for the reason :class:`_Reading` is one."""

    __slots__ = ("_store",)

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    def __enter__(self) -> None:
        store = self._store
        store._lock.acquire()
        store._grouped += 1

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        store = self._store
        try:
            store._grouped -= 1
            conn = store._conn
            if (
                not store._grouped
                and conn is not None
                and conn.in_transaction
                and store._commit_due()
            ):
                try:
                    with store._reading("commit", waiting_ok=True):
                        store._commit(conn)
                except BaseException:
                    # rolled back: rows read or marked inside it are not the file's
                    store._waiting.forget_reads()
                    raise
            if not store._grouped and conn is not None:
                store._written_behind()
        finally:
            store._lock.release()


class SQLiteStore(ClosingStore):
    """:class:`~scrapy_fresh.store.base.StateStore` in one SQLite file: the embedded default.

    :param path: the database file (``str`` or path); missing parent directories are
        created. ``":memory:"`` gives a private in-memory database (no WAL).
    :param batch_size: commit once this many records have been written since the last
        commit (every write call ends a batch check; ``1`` commits after every call).
        Whatever the batch size, one call (``put_many``, ``add_many``, ...) is never
        split across transactions: after a crash it is there entirely or not at all.
        :meth:`flush` and :meth:`close` commit what is pending.
    :param commit_secs: above 0, write behind: the records and sites given to
        :meth:`put`, :meth:`put_many`, :meth:`add_many` and :meth:`put_site` wait in
        memory (this store's reads see them) and are written in one short transaction
        once this many seconds have passed since the oldest, once ``batch_size`` are
        waiting, before any other call that uses the file, on :meth:`flush` and on
        :meth:`close` (:mod:`scrapy_fresh.store._waiting`). A write that would move a
        record back is refused when it is given, as always. A new record reads back
        with the doc id the file would give it next, given when it is written behind;
        if another process added records meanwhile, it gets the next free one when
        written. The crawl writes this way
        (:setting:`FRESH_COMMIT_SECS`), and calls :meth:`flush` on a timer.
    :param synchronous: ``PRAGMA synchronous``: ``"NORMAL"`` (default) survives a killed
        process; ``"FULL"`` also survives power loss and OS crashes, at an fsync per commit.
    :param cache_size_kib: SQLite page cache of this connection, in KiB (256 MiB by
        default; memory is taken only as pages are read, so small stores use little).
    :param timeout: seconds to wait for another connection's write lock.
    :param pragmas: more ``PRAGMA name = value`` pairs to set on the connection.

    The connection runs in WAL journal mode: readers in other processes see committed
    data and never block the writer. One connection writes at a time; a second process
    that writes to the same file waits up to ``timeout`` seconds for the lock, which a
    store holds while it has uncommitted writes. For several crawl processes use the
    Redis store.

    Thread safety: a store may be shared between threads; a lock serialises calls.
    Scrapy calls it from the reactor thread only.

    Durability: a call's writes are committed when ``pending`` reaches ``batch_size``
    (or, writing behind, as ``commit_secs`` says), on :meth:`flush` and on :meth:`close`. Committed data survives the process being
    killed (even with ``SIGKILL``): WAL frames are written before the commit returns,
    and an interrupted transaction is rolled back when the file is next opened.
    """

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        batch_size: int = 1,
        commit_secs: float = 0.0,
        synchronous: str = "NORMAL",
        cache_size_kib: int = 262144,
        timeout: float = 5.0,
        pragmas: Mapping[str, str | int | float] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size ({batch_size!r}) must be 1 or more.")
        if not 0 <= commit_secs < math.inf:
            raise ValueError(f"commit_secs ({commit_secs!r}) must be a number of seconds >= 0.")
        if str(synchronous).upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(
                f"synchronous ({synchronous!r}) must be one of 'OFF', 'NORMAL', 'FULL', 'EXTRA'."
            )
        self.path: str = str(path)
        self.batch_size: int = batch_size
        self.commit_secs: float = commit_secs
        self._pending = 0
        self._began = 0.0  # time.monotonic() when the open write transaction began
        self._grouped = 0
        self._reads_checked = 0.0  # time.monotonic() of the last _check_reads
        self._waiting = Waiting()  # write-behind rows (commit_secs > 0)
        self._file_keys = FileKeys()  # every key of a file this store alone wrote
        #: Writes refused because they would move a record back (see ``regresses``).
        self.regressions_refused = 0
        #: Called before each commit of records (:class:`~scrapy_fresh.store.base.CommitHookStore`).
        self.before_commit: list[Callable[[], None]] = []
        self._lock = threading.RLock()
        self._host_ids: dict[str, int] = {}
        self._host_names: dict[int, str] = {}
        self._conn: sqlite3.Connection | None = None
        in_memory = self.path == ":memory:"
        if not in_memory:
            target = Path(path)
            if target.is_dir():
                raise StoreError(
                    f"SQLite store path {self.path!r} is a directory; expected a file path "
                    f"such as {str(target / 'fresh.sqlite')!r}."
                )
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"Cannot create the directory of SQLite store {self.path!r}: {exc}"
                ) from exc
        try:
            conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot open SQLite store {self.path!r}: {exc}") from exc
        try:
            self._open(conn, in_memory, synchronous, cache_size_kib, pragmas or {})
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    # -- opening ---------------------------------------------------------------

    def _open(
        self,
        conn: sqlite3.Connection,
        in_memory: bool,
        synchronous: str,
        cache_size_kib: int,
        pragmas: Mapping[str, str | int | float],
    ) -> None:
        try:
            app_id, version, tables = self._identify(conn)
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.path!r} is not an SQLite database ({exc}); expected a scrapy_fresh "
                "store file, or a path where a new one can be created."
            ) from exc
        self._check_identity(app_id, version, tables)
        try:
            if not in_memory:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    logger.warning(
                        "SQLite store %(path)s runs in journal mode %(mode)s, not WAL: "
                        "readers will block the writer.",
                        {"path": self.path, "mode": mode},
                    )
                conn.execute("PRAGMA journal_size_limit = 67108864")
            conn.execute(f"PRAGMA synchronous = {str(synchronous).upper()}")
            conn.execute(f"PRAGMA cache_size = -{int(cache_size_kib)}")
            conn.execute("PRAGMA temp_store = MEMORY")
            for name, value in pragmas.items():
                if not _PRAGMA_NAME.fullmatch(name):
                    raise ValueError(f"pragmas key ({name!r}) must be a PRAGMA name.")
                if not _PRAGMA_VALUE.fullmatch(str(value).lower()):
                    raise ValueError(
                        f"pragmas[{name!r}] ({value!r}) must be a number or a keyword."
                    )
                conn.execute(f"PRAGMA {name} = {value}")
            if not tables or version < SCHEMA_VERSION:
                self._create_or_migrate(conn)
        except sqlite3.Error as exc:
            raise self._error("open", exc) from exc
        logger.debug(
            "Opened SQLite store %(path)s (schema version %(version)s)",
            {"path": self.path, "version": SCHEMA_VERSION},
        )

    def _create_or_migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Again under the write lock: another process may have done it meanwhile.
            app_id, version, tables = self._identify(conn)
            self._check_identity(app_id, version, tables)
            if not tables:
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                logger.info("Created SQLite store %(path)s", {"path": self.path})
            elif version < SCHEMA_VERSION:
                self._migrate(conn, version)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _identify(conn: sqlite3.Connection) -> tuple[int, int, list[str]]:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        return app_id, version, tables

    def _check_identity(self, app_id: int, version: int, tables: list[str]) -> None:
        if app_id == 0 and version == 0 and not tables:
            return  # a new (empty) database
        if app_id != APPLICATION_ID:
            raise StoreError(
                f"{self.path!r} is an SQLite database but not a scrapy_fresh store "
                f"(application_id {app_id:#x}, expected {APPLICATION_ID:#x}; tables: "
                f"{', '.join(tables) or 'none'}). Choose another path."
            )
        if version == SCHEMA_VERSION or (version < SCHEMA_VERSION and self._can_migrate(version)):
            return
        if version > SCHEMA_VERSION:
            hint = "it was written by a newer scrapy_fresh: upgrade scrapy_fresh to open it"
        else:
            hint = (
                "no migration from that version exists: open it with the scrapy_fresh "
                "version that wrote it, or start a new store"
            )
        raise SchemaVersionError(
            f"SQLite store {self.path!r} has schema version {version}, but this "
            f"scrapy_fresh reads version {SCHEMA_VERSION}; {hint}."
        )

    @staticmethod
    def _can_migrate(version: int) -> bool:
        return all(v in _MIGRATIONS for v in range(version, SCHEMA_VERSION))

    def _migrate(self, conn: sqlite3.Connection, version: int) -> None:
        for v in range(version, SCHEMA_VERSION):
            for step in _MIGRATIONS[v]:
                if isinstance(step, str):
                    conn.execute(step)
                else:
                    step(conn)
            logger.info(
                "Migrated SQLite store %(path)s from schema version %(old)s to %(new)s",
                {"path": self.path, "old": v, "new": v + 1},
            )
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # -- connection, transactions, errors --------------------------------------

    @property
    def pending(self) -> int:
        """Records written since the last commit, or waiting to be written (0 when
        everything is committed)."""
        return self._pending + len(self._waiting)

    @property
    def write_behind(self) -> bool:
        """Whether record and site writes wait in memory first (``commit_secs`` > 0)."""
        return self.commit_secs > 0

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(
                f"SQLite store {self.path!r} is closed; open a new SQLiteStore to use it."
            )
        return self._conn

    def _error(self, op: str, exc: sqlite3.Error) -> StoreError:
        message = str(exc)
        if isinstance(exc, sqlite3.IntegrityError) and "doc_id" in message:
            return StoreError(
                f"{op} on SQLite store {self.path!r}: a new record's doc_id is already used "
                "by another record; pass doc_id=0 to get a new one."
            )
        if "locked" in message or "busy" in message:
            message += (
                " (another connection holds the write lock: one process writes to an SQLite "
                "store at a time; use the Redis store for several crawl processes)"
            )
        return StoreError(f"{op} on SQLite store {self.path!r} failed: {message}")

    def _reading(self, op: str, *, waiting_ok: bool = False) -> _Reading:
        """Run one call that reads (or commits); the write-behind rows are written
        first unless the call reads them itself (``waiting_ok``)."""
        return _Reading(self, op, waiting_ok)

    @contextmanager
    def _writing(self, op: str, *, forgets: bool = True) -> Iterator[sqlite3.Connection]:
        """Run one write call atomically; commit once ``batch_size`` records are pending.

        The rows kept in memory (:attr:`Waiting.read`) are dropped unless the call keeps
        them as the file's rows itself (``forgets`` False).

        A call that starts a transaction is undone by rolling it back. A call that joins
        a transaction holding earlier uncommitted writes runs in a savepoint, so that
        undoing it keeps them. (Savepoints are not used otherwise: SQLite copies every
        page a savepoint touches to a sub-journal, which makes big batches slow.)
        """
        with self._lock:
            conn = self._connection()
            try:
                if self._waiting:
                    self._write_waiting(conn)
                if forgets:
                    self._waiting.forget_reads()  # this write may change a row read before
                savepoint = conn.in_transaction
                conn.execute("SAVEPOINT fresh_write" if savepoint else "BEGIN IMMEDIATE")
                if not savepoint:
                    self._began = time.monotonic()
                try:
                    yield conn
                except BaseException:
                    self._undo(conn, savepoint)
                    raise
                if savepoint:
                    conn.execute("RELEASE fresh_write")
                if not self._grouped and self._commit_due():
                    self._commit(conn)
            except sqlite3.Error as exc:
                # its commit may have failed: rows it marked or read are not the file's
                self._waiting.forget_reads()
                raise self._error(op, exc) from exc

    def _commit_due(self) -> bool:
        """Whether the open transaction is to be committed now: nothing pending (a call
        that wrote nothing), ``batch_size`` records pending, or writing behind (a call
        that is not written behind commits at once, so the lock is never held long)."""
        return self.write_behind or self._pending == 0 or self._pending >= self.batch_size

    def _write_waiting(self, conn: sqlite3.Connection) -> None:
        """Write the write-behind rows in one transaction of their own, or, inside a
        group, in the group's transaction (a savepoint if it is open), committed when
        the group ends with the rest of it (one visit stays one write); they stay
        waiting if it fails."""
        savepoint = False
        if not self._grouped:
            self._commit(conn)
        elif conn.in_transaction:
            savepoint = True
        waiting = self._waiting
        conn.execute("SAVEPOINT fresh_waiting" if savepoint else "BEGIN IMMEDIATE")
        try:
            # In a group's transaction, rows written into it already and not given again
            # since are not written again: the file holds them, and an in-flight mark
            # made since (mark_in_flight) would be undone.
            before = waiting.uncommitted_pages
            self._renumber_if_taken(conn, before)
            pages = waiting.pages
            if before:
                pages = {b: r for b, r in pages.items() if before.get(b) is not r}
            rows: Collection[tuple[Any, ...]] = pages.values()
            forgotten = 0
            moved: dict[bytes, tuple[Any, ...]] = {}  # rows merged with another's changes
            # (in this transaction, which holds the write lock: no other process writes
            # the file between this and the commit)
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            changed = version != waiting.data_version
            if changed:  # a row kept may be older than the file (read again, even in a group)
                waiting.outdated()
            if waiting.base and (changed or waiting.merge):
                # another process wrote the file meanwhile: merge with what it wrote
                rows, forgotten, moved = waiting.merged(
                    self._stored_rows(conn, [b for b in waiting.base if b in pages]), pages
                )
            written = 0
            for chunk in _chunks(rows, _CHUNK):
                written += conn.executemany(_UPSERT_PAGES, chunk).rowcount
            # the rows the file now holds exactly (none if an upsert was refused; no new
            # record's if another process wrote meanwhile: it may have added it first,
            # and the upsert kept its doc id)
            exact = waiting.exact_rows(rows, new_ok=not changed) if written == len(rows) else {}
            if waiting.sites:
                conn.executemany(_REPLACE_SITES, list(map(_file_site_row, waiting.sites.values())))
            if savepoint:
                conn.execute("RELEASE fresh_waiting")
            elif not self._grouped:
                self._run_commit(conn)
        except BaseException:
            self._host_ids.clear()  # as _undo: hosts inserted by the undone rows are gone
            self._host_names.clear()
            if savepoint:
                self._undo(conn, savepoint, name="fresh_waiting")
            elif conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        # Checked when given, a row is refused here only if another process wrote a
        # later visit of its record in between (the row count leaves refused ones out).
        self.regressions_refused += len(rows) - written
        if forgotten:
            self._log_not_written_back(forgotten)
        if self._grouped:  # in the group's transaction: waiting until it commits
            waiting.written(exact, version, moved)
        else:
            waiting.clear()
            waiting.keep_written(exact, version)  # a get of them reads no file
            waiting.merged_away(moved)  # ... but of these: the file holds another row

    def _log_not_written_back(self, n: int) -> None:
        logger.info(
            "SQLite store %(path)s: %(n)s records another process deleted (scrapy-fresh "
            "forget) while their writes waited were not written back.",
            {"path": self.path, "n": n},
        )

    def _renumber_if_taken(
        self, conn: sqlite3.Connection, written: dict[bytes, tuple[Any, ...]]
    ) -> None:
        """Give the waiting new records the next doc ids again if another process added
        records since they were given (the file's sequence passed the first of them);
        not those ``written`` into the open transaction already (the file holds them)."""
        waiting = self._waiting
        pages = waiting.pages
        new = (
            [b for b in waiting.new if written.get(b) is not pages[b]] if written else waiting.new
        )
        if not new:
            return
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'pages'").fetchone()
        seq = row[0] if row else 0
        first = min(pages[blob][3] for blob in new)
        if seq < first:
            return
        for blob in new:  # in the order they were given
            seq += 1
            waiting.pages[blob] = (*waiting.pages[blob][:3], seq, *waiting.pages[blob][4:])
        waiting.last_doc_id = seq

    def _written_behind(self) -> None:
        """After rows were added to the write-behind ones: write them if they are due
        (a group, one visit, writes its rows when it ends).

        The call that gave them does not fail if that write does: its rows were taken,
        they stay waiting (read back, written by the next :meth:`flush` or call that uses
        the file, or here again ``commit_secs`` later). Raising would tell the caller its
        write was lost when it will be written (a crawl would drop the page's items)."""
        if not self._grouped and self._waiting.due(self.batch_size, self.commit_secs):
            try:
                self.flush()
            except StoreError as exc:
                self._waiting.failed(self.commit_secs)
                logger.warning(
                    "SQLite store %(path)s keeps %(n)s writes waiting, to write them again "
                    "in %(secs)s s: %(exc)s",
                    {"path": self.path, "n": len(self._waiting), "secs": self.commit_secs,
                     "exc": exc},
                )  # fmt: skip

    def _undo(self, conn: sqlite3.Connection, savepoint: bool, name: str = "fresh_write") -> None:
        self._waiting.forget_reads()  # a row read inside what is undone is undone too
        # Hosts inserted by the undone call are gone again.
        self._host_ids.clear()
        self._host_names.clear()
        if savepoint:
            try:
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
            except sqlite3.Error:
                logger.exception(
                    "SQLite store %(path)s could not roll back to its savepoint; rolling "
                    "back the open transaction: %(lost)s uncommitted record writes are lost.",
                    {"path": self.path, "lost": self._pending},
                )
            else:
                return
        self._pending = 0
        if conn.in_transaction:
            conn.execute("ROLLBACK")
            self._waiting.rolled_back()

    def _run_commit(self, conn: sqlite3.Connection) -> None:
        """COMMIT, after the :attr:`before_commit` hooks (each one's failure logged)."""
        for hook in self.before_commit:
            try:
                hook()
            except Exception:  # noqa: PERF203  # a hook's failure never stops the commit
                logger.exception(
                    "SQLite store %(path)s: a before-commit hook failed", {"path": self.path}
                )
        conn.execute("COMMIT")

    def _commit(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            self._run_commit(conn)
            self._waiting.committed()
        else:  # rolled back (a failed commit): rows written in it are waiting still
            self._waiting.rolled_back()
        self._pending = 0

    # -- encoding --------------------------------------------------------------

    def _host_id(self, conn: sqlite3.Connection, host: str) -> int:
        host_id = self._host_ids.get(host)
        if host_id is None:
            row = conn.execute("SELECT host_id FROM hosts WHERE host = ?", (host,)).fetchone()
            if row is None:
                cursor = conn.execute("INSERT INTO hosts (host) VALUES (?)", (host,))
                host_id = cursor.lastrowid
                assert host_id is not None
            else:
                host_id = row[0]
            self._host_ids[host] = host_id
            self._host_names[host_id] = host
        return host_id

    def _host_name(self, conn: sqlite3.Connection, host_id: int) -> str:
        row = conn.execute("SELECT host FROM hosts WHERE host_id = ?", (host_id,)).fetchone()
        if row is None:
            raise StoreError(
                f"SQLite store {self.path!r} is damaged: host_id {host_id} has no hosts row."
            )
        host: str = row[0]
        self._host_ids[host] = host_id
        self._host_names[host_id] = host
        return host

    def _encode(self, conn: sqlite3.Connection, s: PageState) -> tuple[Any, ...]:
        check_state(s)
        fp, digest = s.fingerprint, s.content_hash
        # Normalised as PageState() does, so that _decode can skip its __init__.
        past = _bounded_past(s.past_updates) if s.past_updates else None
        future = _bounded_future(s.future_updates) if s.future_updates else None
        host_id = self._host_ids.get(s.host)
        blob = bytes.fromhex(s.key)
        self._file_keys.add(blob)  # given to be written: may be in the file from now
        return (
            blob,
            s.url,
            self._host_id(conn, s.host) if host_id is None else host_id,
            s.doc_id or None,
            STATUS_CODES[s.status],  # str values hash like members
            PROVIDER_CODES[s.provider],
            s.first_seen,
            s.last_crawl,
            s.next_due,
            s.in_flight_since,
            s.refresh_secs,
            s.p_l,
            s.p_g,
            s.visits,
            s.changes,
            s.p_c,
            s.change_bucket,
            s.change_rate,
            s.errors,
            fp - _U64 if fp is not None and fp > _I64_MAX else fp,
            s.etag,
            s.last_modified,
            s.content_length,
            s.access_count,
            _dumps(past) if past else None,
            _dumps(future) if future else None,
            _dumps(s.request) if s.request else None,
            _dumps(s.field_hashes) if s.field_hashes else None,
            digest - _U64 if digest is not None and digest > _I64_MAX else digest,
            s.kept_items,
        )

    def _decode(self, conn: sqlite3.Connection, row: tuple[Any, ...]) -> PageState:
        (key, url, host_id, doc_id, status, provider, first_seen, last_crawl, next_due,
         in_flight_since, refresh_secs, p_l, p_g, visits, changes, p_c, change_bucket,
         change_rate, errors, fp, etag, last_modified, content_length, access_count,
         past, future, request, items, digest, kept) = row  # fmt: skip
        host = self._host_names.get(host_id)
        # Rows were checked and normalised by _encode, so the record is built without
        # PageState.__init__ (its checks and sorting took 60% of due()).
        state: PageState = _new_object(PageState)
        state.__dict__.update(
            key=key.hex(),
            url=url,
            host=self._host_name(conn, host_id) if host is None else host,
            doc_id=doc_id,
            status=_STATUSES[status],
            provider=_PROVIDERS[provider],
            first_seen=first_seen,
            last_crawl=last_crawl,
            next_due=next_due,
            in_flight_since=in_flight_since,
            refresh_secs=refresh_secs,
            p_l=p_l,
            p_g=p_g,
            visits=visits,
            changes=changes,
            p_c=p_c,
            change_bucket=change_bucket,
            change_rate=change_rate,
            errors=errors,
            fingerprint=fp + _U64 if fp is not None and fp < 0 else fp,
            etag=etag,
            last_modified=last_modified,
            content_length=content_length,
            access_count=access_count,
            past_updates=_raw_decode(past)[0] if past else [],
            future_updates=[(t, p) for t, p in _raw_decode(future)[0]] if future else [],
            request=_raw_decode(request)[0] if request else {},
            field_hashes=_raw_decode(items)[0] if items else [],
            content_hash=digest + _U64 if digest is not None and digest < 0 else digest,
            kept_items=kept,
        )
        return state

    # -- records ---------------------------------------------------------------

    def get(self, key: str) -> PageState | None:
        """Return the record of ``key``, or None."""
        blob = bytes.fromhex(check_key(key))
        with self._reading("get", waiting_ok=True) as conn:
            waiting = self._waiting
            row = waiting.pages.get(blob)
            if row is None and waiting.read:
                self._check_reads(conn)
                row = waiting.read.get(blob)  # as the file holds it: nothing to read
            if row is None:
                if self.write_behind and self._absent_from_file(conn, (blob,)):
                    return None  # a new URL of a first crawl: nothing to read
                self._reads_from(conn)
                row = conn.execute(f"{_SELECT_PAGES} WHERE key = ?", (blob,)).fetchone()
                if row is not None and self.write_behind:
                    waiting.remember(blob, row)  # the base of the visit's write
            return None if row is None else self._decode(conn, row)

    def _check_reads(self, conn: sqlite3.Connection) -> None:
        """Before answering from the rows kept in memory: at most every ``commit_secs``,
        drop them if another process wrote the file since they were read (``scrapy-fresh
        due``, ``forget``); a write of the waiting rows checks it too."""
        waiting = self._waiting
        now = time.monotonic()
        if now - self._reads_checked < self.commit_secs:
            return
        self._reads_checked = now
        if conn.execute("PRAGMA data_version").fetchone()[0] != waiting.data_version:
            waiting.outdated()

    def _absent_from_file(self, conn: sqlite3.Connection, blobs: Iterable[bytes]) -> set[bytes]:
        """Of ``blobs`` (none waiting), those whose records the file surely does not hold
        (:mod:`scrapy_fresh.store._file_keys`): known from the keys this store gave it,
        while no other connection has written it since it was found empty."""
        keys = self._file_keys
        if not keys.looked:
            if conn.in_transaction:  # its own uncommitted delete may yet be rolled back
                return set()  # (data_version would not tell): look outside one
            # once: the data version first, so that no other write falls in between
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            keys.looked = True
            if conn.execute("SELECT 1 FROM pages LIMIT 1").fetchone() is None:
                waiting = self._waiting
                keys.start(version, [*waiting.pages, *waiting.uncommitted_pages])
        if keys.keys is None:
            return set()
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        return {blob for blob in blobs if keys.absent(blob, version)}

    def _reads_from(self, conn: sqlite3.Connection) -> None:
        """Before rows are read from the file to be remembered as merge bases (writing
        behind): the file's ``data_version`` they are read at, unless one is taken."""
        if self.write_behind and self._waiting.data_version is None:
            self._waiting.data_version = conn.execute("PRAGMA data_version").fetchone()[0]

    def get_many(self, keys: Iterable[str]) -> dict[str, PageState]:
        """Return the records of ``keys`` that exist, by key."""
        blobs = list(dict.fromkeys(bytes.fromhex(check_key(k)) for k in keys))
        out: dict[str, PageState] = {}
        with self._reading("get_many", waiting_ok=True) as conn:
            waiting = self._waiting.pages
            if self._waiting.read:
                self._check_reads(conn)
            read = self._waiting.read  # as the file holds them: nothing to read
            for blob in blobs:
                row = waiting.get(blob) or read.get(blob)
                if row is not None:
                    out[blob.hex()] = self._decode(conn, row)
            if out:
                blobs = [b for b in blobs if b not in waiting and b not in read]
            if blobs and self.write_behind:
                absent = self._absent_from_file(conn, blobs)
                blobs = [b for b in blobs if b not in absent]
            if blobs:
                self._reads_from(conn)
            for chunk in _chunks(blobs, _IN_CHUNK):
                sql = f"{_SELECT_PAGES} WHERE key IN ({', '.join('?' * len(chunk))})"
                for row in conn.execute(sql, chunk):
                    if self.write_behind:
                        self._waiting.remember(row[0], row)  # as get(): a write's base
                    state = self._decode(conn, row)
                    out[state.key] = state
        return out

    def put(self, state: PageState) -> None:
        """Insert or replace the record of ``state.key`` (see :meth:`put_many`)."""
        self.put_many((state,))

    def put_many(self, states: Iterable[PageState]) -> None:
        """Insert or replace records in one transaction: all of them or none.

        New records without a ``doc_id`` get the next one (doc ids are never reused);
        existing records keep theirs. The records passed in are not changed.
        """
        if self.write_behind:
            states = list(states)
            if self._put_behind(states):
                return
        refused: list[PageState] = []
        n_refused = 0
        with self._writing("put_many") as conn:
            written = 0
            for chunk in _chunks(states, _CHUNK):
                rows = [self._encode(conn, s) for s in chunk]
                count = conn.executemany(_UPSERT_PAGES, rows).rowcount
                if count < len(rows):  # the row count leaves refused upserts out
                    n_refused += len(rows) - count
                    refused.extend(self._refused(conn, chunk)[: len(rows) - count])
                written += count
            self._pending += written
        if n_refused:
            self.regressions_refused += n_refused
            log_regressions(self, refused)

    def _refused(self, conn: sqlite3.Connection, chunk: list[PageState]) -> list[PageState]:
        """The records of ``chunk`` an upsert may have left out (the stored row is not
        theirs; with a key written twice in the chunk, an earlier write too): for the log."""
        stored = {}
        for part in _chunks([bytes.fromhex(s.key) for s in chunk], _IN_CHUNK):
            sql = (
                f"SELECT key, visits, last_crawl FROM pages "
                f"WHERE key IN ({', '.join('?' * len(part))})"
            )
            stored.update({blob.hex(): (v, lc) for blob, v, lc in conn.execute(sql, part)})
        return [s for s in chunk if stored.get(s.key) != (s.visits, s.last_crawl)]

    def _put_behind(self, states: list[PageState]) -> bool:
        """:meth:`put_many` writing behind; False (nothing done) for a new record that
        names its own doc_id, which only the file can check."""
        with self._reading("put_many", waiting_ok=True) as conn:
            rows = [self._encode(conn, s) for s in states]
            waiting = self._waiting.pages
            self._reads_from(conn)  # before the rows read (see _waiting)
            missing = [r[0] for r in rows if r[0] not in waiting]
            bases = self._waiting.take_reads(missing)  # read by get() since data_version
            stale: dict[bytes, tuple[Any, ...]] = {}
            if len(bases) < len(missing):
                unread = [b for b in missing if b not in bases]
                stale = self._waiting.take_stale(unread)
                bases.update(self._stored_rows(conn, unread))
                # in the file when got (this store's own deletes drop the stale rows),
                # not any more: another process deleted them, they are not written back
                gone = stale.keys() - bases.keys()
                if gone:
                    kept = [(s, r) for s, r in zip(states, rows, strict=True) if r[0] not in gone]
                    states, rows = [s for s, _ in kept], [r for _, r in kept]
                    self._log_not_written_back(len(gone))
            # how far each record is visited in the file (or as read since data_version)
            stored = {blob: (row[_VISITS], row[_LAST_CRAWL]) for blob, row in bases.items()}
            for blob in stale.keys() & bases.keys():  # still in the file: the row a get
                bases[blob] = stale[blob]  # may have answered with is the base, and
                self._waiting.merge.add(blob)  # its write merges with the file
            new = {r[0] for r in rows if not self._waiting.in_file(r[0], stored)}
            if any(
                r[3] is not None and r[0] in new and r[3] != _doc_id(waiting, r[0]) for r in rows
            ):
                return False  # a new record naming its own doc id: checked by the file
            given: dict[bytes, tuple[Any, ...]] = {}
            refused: list[PageState] = []
            for state, row in zip(states, rows, strict=True):
                blob = row[0]
                prior = given.get(blob) or waiting.get(blob)
                version = (prior[_VISITS], prior[_LAST_CRAWL]) if prior else stored.get(blob)
                if version is not None and moves_back(version, (row[_VISITS], row[_LAST_CRAWL])):
                    refused.append(state)
                else:
                    given[blob] = row
            for blob in given.keys() & bases.keys():
                self._waiting.base.setdefault(blob, bases[blob])
            self._give_doc_ids(conn, given, new)
        if refused:
            self.regressions_refused += len(refused)
            log_regressions(self, refused)
        self._written_behind()
        return True

    def _give_doc_ids(
        self, conn: sqlite3.Connection, rows: dict[bytes, tuple[Any, ...]], new: Collection[bytes]
    ) -> None:
        """Add ``rows`` to the write-behind ones; those of ``new`` records (absent from the
        file) get the next doc ids, as the file's AUTOINCREMENT would give them."""
        waiting = self._waiting
        waiting.noted()
        fresh = [blob for blob in rows if blob in new and blob not in waiting.new]
        if fresh:
            found = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'pages'")
            row = found.fetchone()
            waiting.last_doc_id = max(waiting.last_doc_id, row[0] if row else 0)
            for blob in fresh:
                waiting.last_doc_id += 1
                old = rows[blob]
                rows[blob] = (*old[:3], waiting.last_doc_id, *old[4:])
                waiting.new[blob] = None
        for blob, row in rows.items():
            prior = waiting.pages.get(blob)
            if prior is not None and blob in waiting.new:  # its doc id stays the one given
                row = (*row[:3], prior[3], *row[4:])
            waiting.pages[blob] = row

    def _stored_rows(
        self, conn: sqlite3.Connection, blobs: list[bytes]
    ) -> dict[bytes, tuple[Any, ...]]:
        """The rows in the file of the records of ``blobs``, by key."""
        out: dict[bytes, tuple[Any, ...]] = {}
        for part in _chunks(blobs, _IN_CHUNK):
            sql = f"{_SELECT_PAGES} WHERE key IN ({', '.join('?' * len(part))})"
            out.update({row[0]: row for row in conn.execute(sql, part)})
        return out

    def _versions(
        self, conn: sqlite3.Connection, blobs: list[bytes]
    ) -> dict[bytes, tuple[int, float | None]]:
        """``(visits, last_crawl)`` of the stored records of ``blobs``, by key."""
        out: dict[bytes, tuple[int, float | None]] = {}
        for part in _chunks(blobs, _IN_CHUNK):
            sql = (
                "SELECT key, visits, last_crawl FROM pages "
                f"WHERE key IN ({', '.join('?' * len(part))})"
            )
            out.update({blob: (v, lc) for blob, v, lc in conn.execute(sql, part)})
        return out

    def add_many(self, states: Iterable[PageState]) -> list[str]:
        """Insert the records whose key is absent; return their keys in input order."""
        if self.write_behind:
            states = list(states)
            if not any(s.doc_id for s in states):
                return self._add_behind(states)
        added: list[str] = []
        with self._writing("add_many") as conn:
            for chunk in _chunks(states, _CHUNK):
                fresh: dict[bytes, PageState] = {}
                for state in chunk:
                    fresh.setdefault(bytes.fromhex(check_key(state.key)), state)
                if any(s.doc_id for s in fresh.values()):  # given doc ids: look first
                    for part in _chunks(list(fresh), _IN_CHUNK):
                        sql = f"SELECT key FROM pages WHERE key IN ({', '.join('?' * len(part))})"
                        for (blob,) in conn.execute(sql, part):
                            del fresh[blob]
                    conn.executemany(
                        _INSERT_PAGES, [self._encode(conn, s) for s in fresh.values()]
                    )
                    added.extend(s.key for s in fresh.values())
                    continue
                # Insert and skip the keys that exist; usually all are new, which the
                # row count shows (it leaves out the triggers' writes). Otherwise the new rows are the ones whose doc id
                # is above the largest before the call (AUTOINCREMENT never goes back).
                rows = [self._encode(conn, s) for s in fresh.values()]
                top = conn.execute("SELECT max(doc_id) FROM pages").fetchone()[0] or 0
                if conn.executemany(_ADD_PAGES, rows).rowcount < len(rows):
                    new: set[bytes] = set()
                    for part in _chunks(list(fresh), _IN_CHUNK):
                        sql = (
                            f"SELECT key FROM pages WHERE key IN ({', '.join('?' * len(part))}) "
                            "AND doc_id > ?"
                        )
                        new.update(blob for (blob,) in conn.execute(sql, [*part, top]))
                    fresh = {blob: s for blob, s in fresh.items() if blob in new}
                added.extend(s.key for s in fresh.values())
            self._pending += len(added)
        return added

    def _add_behind(self, states: list[PageState]) -> list[str]:
        """:meth:`add_many` writing behind (records without doc ids)."""
        with self._reading("add_many", waiting_ok=True) as conn:
            fresh: dict[bytes, PageState] = {}
            for state in states:
                fresh.setdefault(bytes.fromhex(check_key(state.key)), state)
            waiting = self._waiting.pages
            absent = [blob for blob in fresh if blob not in waiting]
            self._reads_from(conn)  # before they are found absent (see exact_rows)
            # before they are given (_encode), which makes them possibly in the file
            surely = self._absent_from_file(conn, absent) if absent else set()
            rows = {blob: self._encode(conn, s) for blob, s in fresh.items()}
            stored = self._versions(conn, [blob for blob in absent if blob not in surely])
            new = {blob: rows[blob] for blob in absent if blob not in stored}
            self._give_doc_ids(conn, new, new.keys())
        self._written_behind()
        return [fresh[blob].key for blob in new]

    def delete(self, key: str) -> bool:
        """Remove the record of ``key``; return whether there was one."""
        blob = bytes.fromhex(check_key(key))
        with self._writing("delete") as conn:
            deleted = conn.execute("DELETE FROM pages WHERE key = ?", (blob,)).rowcount
            self._pending += deleted
        return deleted > 0

    # -- scheduling ------------------------------------------------------------

    def due(self, now: float, limit: int) -> list[PageState]:
        """Return up to ``limit`` queued or idle records with ``next_due <= now``, most urgent first.

        Reads the ``pages_due`` index in order and stops after ``limit`` rows.
        """
        check_limit(limit)
        with self._reading("due") as conn:
            self._reads_from(conn)
            rows = conn.execute(
                f"{_SELECT_PAGES} WHERE status IN (0, 1, 3) AND next_due <= ? "
                "ORDER BY next_due, key LIMIT ?",
                (now, limit),
            ).fetchall()
            return self._decode_read(conn, rows)

    def _decode_read(self, conn: sqlite3.Connection, rows: list[Any]) -> list[PageState]:
        """The records of ``rows`` just read; writing behind, the rows are kept too (the
        scheduler leases due records: their visits read and write them next)."""
        if self.write_behind:
            remember = self._waiting.remember
            for row in rows:
                remember(row[0], row)
        return [self._decode(conn, row) for row in rows]

    def due_after(
        self, now: float, after: tuple[float, str] | None, limit: int
    ) -> list[PageState]:
        """Return up to ``limit`` queued or idle records with ``next_due <= now`` after
        ``after`` in ``(next_due, key)`` order
        (:class:`~scrapy_fresh.store.base.DueCursorStore`).

        Keyset pagination on the ``pages_due`` index: each call reads ``limit`` rows
        from where the last one stopped, and no read transaction stays open between
        calls.
        """
        if after is None:
            return self.due(now, limit)
        check_limit(limit)
        since, key = after
        with self._reading("due_after") as conn:
            self._reads_from(conn)
            rows = conn.execute(
                f"{_SELECT_PAGES} WHERE status IN (0, 1, 3) AND next_due <= ? "
                "AND (next_due, key) > (?, ?) ORDER BY next_due, key LIMIT ?",
                (now, since, bytes.fromhex(check_key(key)), limit),
            ).fetchall()
            return self._decode_read(conn, rows)

    def next_due_time(self) -> float | None:
        """Return the earliest ``next_due`` of a queued or idle record, or None."""
        with self._reading("next_due_time") as conn:
            value: float | None = conn.execute(
                "SELECT min(next_due) FROM pages WHERE status IN (0, 1, 3)"
            ).fetchone()[0]
            return value

    def count_due(self, now: float) -> int:
        """How many queued or idle records are due at ``now`` (counted on the index)."""
        check_time("now", now)
        with self._reading("count_due") as conn:
            count: int = conn.execute(
                "SELECT count(*) FROM pages WHERE status IN (0, 1, 3) AND next_due <= ?", (now,)
            ).fetchone()[0]
            return count

    def mark_in_flight(self, keys: Iterable[str], now: float) -> None:
        """Mark the records of ``keys`` in flight since ``now``; unknown keys are ignored."""
        check_time("now", now)
        blobs = [bytes.fromhex(check_key(k)) for k in keys]
        with self._writing("mark_in_flight", forgets=False) as conn:
            marked = 0
            for chunk in _chunks(blobs, _CHUNK):
                cursor = conn.executemany(
                    "UPDATE pages SET status = ?, in_flight_since = ? WHERE key = ?",
                    [(_IN_FLIGHT, now, blob) for blob in chunk],
                )
                marked += max(cursor.rowcount, 0)
            self._pending += marked
            self._waiting.marked(blobs, _IN_FLIGHT, now)  # the rows kept change alike

    def release_in_flight(self, older_than: float | None = None) -> int:
        """Put in-flight records back to queued (never visited) or idle; return how many.

        :param older_than: release only records marked in flight before this time
            (records without ``in_flight_since`` count as old); all when None.
        """
        if older_than is not None:
            check_time("older_than", older_than)
        sql = (
            "UPDATE pages SET status = CASE WHEN visits = 0 THEN 0 ELSE 1 END, "
            "in_flight_since = NULL WHERE status = 2"
        )
        with self._writing("release_in_flight") as conn:
            if older_than is None:
                cursor = conn.execute(sql)
            else:
                cursor = conn.execute(
                    f"{sql} AND (in_flight_since < ? OR in_flight_since IS NULL)", (older_than,)
                )
            released = max(cursor.rowcount, 0)
            self._pending += released
        return released

    # -- operator's controls ---------------------------------------------------

    def make_due(self, keys: Iterable[str], now: float) -> list[str]:
        """Make the queued or idle records of ``keys`` due at ``now``; return their keys.

        One conditional UPDATE per key in one transaction: a record a crawl took or
        visited meanwhile is left as the crawl wrote it.
        """
        check_time("now", now)
        wanted = list(dict.fromkeys(check_key(k) for k in keys))
        made: list[str] = []
        with self._writing("make_due") as conn:
            for key in wanted:
                cursor = conn.execute(
                    "UPDATE pages SET next_due = ? WHERE key = ? AND status IN (0, 1) "
                    "AND next_due > ?",
                    (now, bytes.fromhex(key), now),
                )
                if cursor.rowcount > 0:
                    made.append(key)
            self._pending += len(made)
        return made

    def block_host(self, host: str, now: float) -> bool:
        """Block ``host`` from ``now`` on; False if it was blocked already."""
        check_time("now", now)
        with self._writing("block_host") as conn:
            cursor = conn.execute(
                "INSERT INTO blocked_hosts (host, since) VALUES (?, ?) "
                "ON CONFLICT (host) DO NOTHING",
                (check_host(host), now),
            )
            self._pending += 1
        return cursor.rowcount > 0

    def unblock_host(self, host: str) -> bool:
        """Unblock ``host``; return whether it was blocked."""
        with self._writing("unblock_host") as conn:
            cursor = conn.execute("DELETE FROM blocked_hosts WHERE host = ?", (check_host(host),))
            self._pending += 1
        return cursor.rowcount > 0

    def blocked_hosts(self) -> dict[str, float]:
        """The blocked hosts, with when each was blocked."""
        with self._reading("blocked_hosts") as conn:
            return dict(conn.execute("SELECT host, since FROM blocked_hosts").fetchall())

    def counts(self) -> dict[Status, int]:
        """Return the number of records per status (every status, zero included); O(1)."""
        out = dict.fromkeys(Status, 0)
        with self._reading("counts") as conn:
            for code, n in conn.execute("SELECT status, n FROM status_counts"):
                out[_STATUSES[code]] = n
        return out

    def iterate(self, batch_size: int = 1000) -> Iterator[PageState]:
        """Yield every record in ``doc_id`` order, reading ``batch_size`` rows at a time.

        Keyset pagination (``doc_id > last``): memory stays bounded, no read transaction
        stays open between batches, and records written during the iteration are never
        yielded twice.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size ({batch_size!r}) must be 1 or more.")
        self._connection()
        return self._iterate(batch_size)

    def _iterate(self, batch_size: int) -> Iterator[PageState]:
        last = 0
        while True:
            with self._reading("iterate") as conn:
                rows = conn.execute(
                    f"{_SELECT_PAGES} WHERE doc_id > ? ORDER BY doc_id LIMIT ?",
                    (last, batch_size),
                ).fetchall()
                states = [self._decode(conn, row) for row in rows]
            yield from states
            if len(rows) < batch_size:
                return
            last = states[-1].doc_id

    def __len__(self) -> int:
        with self._reading("len") as conn:
            n: int = conn.execute("SELECT sum(n) FROM status_counts").fetchone()[0]
            return n

    # -- sites -----------------------------------------------------------------

    def get_site(self, host: str) -> SiteState | None:
        """Return the site record of ``host``, or None."""
        with self._reading("get_site", waiting_ok=True) as conn:
            row = self._waiting.sites.get(host)
            if row is None:
                row = conn.execute(f"{_SELECT_SITES} WHERE host = ?", (host,)).fetchone()
            return None if row is None else _site(row)

    def put_site(self, site: SiteState) -> None:
        """Insert or replace the site record of ``site.host``."""
        check_site(site)
        if self.write_behind:  # checks encoded when written (_file_site_row)
            waiting_row = (site.host, site.visits, site.changes, site.p_c, site.refresh_secs,
                           site.updated_at, dict(site.checks) if site.checks else None)  # fmt: skip
            with self._reading("put_site", waiting_ok=True):
                self._waiting.noted()
                self._waiting.sites[site.host] = waiting_row
            self._written_behind()
            return
        row = (site.host, site.visits, site.changes, site.p_c, site.refresh_secs,
               site.updated_at, _dumps(site.checks) if site.checks else None)  # fmt: skip
        with self._writing("put_site") as conn:
            conn.execute(_REPLACE_SITES, row)
            self._pending += 1

    def sites(self) -> Iterator[SiteState]:
        """Yield every site record, by host, reading 1000 rows at a time."""
        self._connection()
        return self._sites()

    def _sites(self) -> Iterator[SiteState]:
        last: str | None = None
        while True:
            with self._reading("sites") as conn:
                if last is None:
                    rows = conn.execute(f"{_SELECT_SITES} ORDER BY host LIMIT 1000").fetchall()
                else:
                    rows = conn.execute(
                        f"{_SELECT_SITES} WHERE host > ? ORDER BY host LIMIT 1000", (last,)
                    ).fetchall()
            yield from (_site(row) for row in rows)
            if len(rows) < 1000:
                return
            last = rows[-1][0]

    # -- meta records ----------------------------------------------------------

    def get_meta(self, namespace: str, key: str) -> dict[str, Any] | None:
        """Return the meta record ``key`` of ``namespace``, or None."""
        check_meta_name(namespace, key)
        with self._reading("get_meta") as conn:
            row = conn.execute(
                "SELECT value FROM meta WHERE namespace = ? AND key = ?", (namespace, key)
            ).fetchone()
        return None if row is None else decode_meta(row[0])

    def put_meta(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        """Insert or replace the meta record ``key`` of ``namespace``."""
        text = encode_meta(namespace, key, value)
        with self._writing("put_meta") as conn:
            conn.execute(
                "INSERT OR REPLACE INTO meta (namespace, key, value) VALUES (?, ?, ?)",
                (namespace, key, text),
            )
            self._pending += 1

    def update_meta(self, namespace: str, key: str, change: MetaChange) -> dict[str, Any] | None:
        """Write ``change(stored value)`` unless it is None, in one write transaction
        (another process's write cannot come in between); return what was written."""
        check_meta_name(namespace, key)
        with self._writing("update_meta") as conn:
            row = conn.execute(
                "SELECT value FROM meta WHERE namespace = ? AND key = ?", (namespace, key)
            ).fetchone()
            new = change(None if row is None else decode_meta(row[0]))
            if new is None:
                return None
            text = encode_meta(namespace, key, new)
            conn.execute(
                "INSERT OR REPLACE INTO meta (namespace, key, value) VALUES (?, ?, ?)",
                (namespace, key, text),
            )
            self._pending += 1
        return decode_meta(text)

    def delete_meta(self, namespace: str, key: str) -> bool:
        """Remove the meta record ``key`` of ``namespace``; return whether there was one."""
        check_meta_name(namespace, key)
        with self._writing("delete_meta") as conn:
            cursor = conn.execute(
                "DELETE FROM meta WHERE namespace = ? AND key = ?", (namespace, key)
            )
            self._pending += 1
        return cursor.rowcount > 0

    def meta(self, namespace: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield every meta record of ``namespace``, by key, 1000 rows at a time."""
        check_meta_name(namespace, "-")
        self._connection()
        return self._meta(namespace)

    def _meta(self, namespace: str) -> Iterator[tuple[str, dict[str, Any]]]:
        last = ""
        while True:
            with self._reading("meta") as conn:
                rows = conn.execute(
                    "SELECT key, value FROM meta WHERE namespace = ? AND key > ? "
                    "ORDER BY key LIMIT 1000",
                    (namespace, last),
                ).fetchall()
            yield from ((key, decode_meta(value)) for key, value in rows)
            if len(rows) < 1000:
                return
            last = rows[-1][0]

    # -- lifecycle -------------------------------------------------------------

    def grouped(self) -> contextlib.AbstractContextManager[None]:
        """Commit the write calls made inside once, at the end (one visit's record, site
        and signals: one transaction instead of one each). Each call stays atomic."""
        return _Group(self)

    def flush(self) -> None:
        """Commit pending writes: once this returns they survive a killed process."""
        with self._reading("flush") as conn:
            self._commit(conn)

    def close(self) -> None:
        """Commit pending writes and close the file; closing twice is fine."""
        with self._lock:
            conn = self._conn
            if conn is None:
                return
            try:
                with self._reading("close"):
                    self._commit(conn)
            finally:
                self._conn = None
                conn.close()
            logger.debug("Closed SQLite store %(path)s", {"path": self.path})

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else f"{self._pending} pending"
        return f"<SQLiteStore {self.path!r} {state}>"
