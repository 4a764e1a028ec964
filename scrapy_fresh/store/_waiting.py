"""Writes an SQLite store keeps in memory before it writes them to its file (write-behind).

With ``commit_secs`` above 0 (:setting:`FRESH_COMMIT_SECS`), :class:`SQLiteStore
<scrapy_fresh.store.sqlite.SQLiteStore>` keeps the rows of the records and sites it is
given here, already encoded as the file holds them (but a site's ``checks``, a dict
until written: a host's site row is given again at each visit), and writes them all in one short
transaction once ``commit_secs`` have passed since the oldest, once ``batch_size`` are
waiting, before any call that reads or writes the file some other way, on ``flush()``
and on ``close()``. Its own reads see them (read-your-writes); the file's write lock is
held only while they are written, so other processes wait milliseconds, not seconds.

The rows keep the store's one rule for records (DESIGN.md, invariants): a write never
moves a record back (:func:`~scrapy_fresh.store.base.regresses`), checked when it is
given against the waiting row or, for a key with none, the row in the file.

Another process may write the file while rows wait (``scrapy-fresh forget``, ``due``):
each waiting row of a record that was in the file keeps the file's row it was made
from (its base). When they are written, if the file changed meanwhile (``PRAGMA
data_version``), a record deleted meanwhile is not written back, and one changed
meanwhile gets the waiting row's columns that differ from the base and the file's
others (a three-way merge: the crawl's changes and the other process's both stay).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["READ_MAX", "Waiting"]

# Positions in a page row (sqlite._PAGE_COLUMNS) of the columns changed here.
_DOC_ID, _STATUS, _SINCE = 3, 4, 9

#: Rows of the file kept in memory (:meth:`Waiting.remember`): read (a visit's record, a
#: batch of due records) or just written. Past this the oldest are dropped: a later
#: ``get`` of one reads the file again.
READ_MAX = 8192


def _marked(row: tuple[Any, ...], status: int, since: float) -> tuple[Any, ...]:
    """``row`` with the ``status`` and ``in_flight_since`` a mark gave it."""
    return (*row[:_STATUS], status, *row[_STATUS + 1 : _SINCE], since, *row[_SINCE + 1 :])


class Waiting:
    """The page and site rows not yet written to the file, by key and by host, in the
    order they were first given (the file gives new records their doc ids in it)."""

    def __init__(self) -> None:
        self.pages: dict[bytes, tuple[Any, ...]] = {}
        self.sites: dict[str, tuple[Any, ...]] = {}
        #: Keys of the waiting rows of new records (absent from the file), in the order
        #: their doc ids were given, and the last doc id given.
        self.new: dict[bytes, None] = {}
        #: The file's rows the waiting rows of records in the file were made from, by
        #: key, and ``PRAGMA data_version`` before the first of them was read.
        self.base: dict[bytes, tuple[Any, ...]] = {}
        self.data_version: int | None = None
        #: Rows written into a group's transaction that has not committed yet, as they
        #: were then: they stay waiting until it commits (:meth:`committed`), so a
        #: commit that fails (a full disk) loses none of them.
        self.uncommitted_pages: dict[bytes, tuple[Any, ...]] = {}
        self.uncommitted_sites: dict[str, tuple[Any, ...]] = {}
        #: Rows of records not waiting, as the file holds them at :attr:`data_version`:
        #: read by this store since it was taken, or written by it (:meth:`remember`,
        #: :meth:`keep_written`). A ``get`` answers from them without reading the file,
        #: and the next row given for the record takes its row here as its base. Dropped
        #: whenever the store writes the file directly (:meth:`forget_reads`), and when
        #: another process wrote the file since :attr:`data_version`.
        self.read: dict[bytes, tuple[Any, ...]] = {}
        #: Rows once kept in :attr:`read` that the file may no longer hold (another
        #: process wrote it): no ``get`` answers from them,
        #: but a ``get`` may have answered from them before, so the next row given for
        #: the record, if none was read since, takes its row here as its base, and its
        #: write merges with the file (:attr:`merge`) whatever ``data_version`` says.
        self.stale: dict[bytes, tuple[Any, ...]] = {}
        #: Keys of waiting rows whose base came from :attr:`stale`.
        self.merge: set[bytes] = set()
        #: Rows written into a group's transaction, as the file holds them once it
        #: commits, and the file's ``data_version`` they were written at (see
        #: :meth:`written`).
        self.uncommitted_reads: dict[bytes, tuple[Any, ...]] = {}
        self.uncommitted_version: int | None = None
        #: Of the rows written into a group's transaction, those the write merged with
        #: another process's changes, as they were given (see :meth:`merged_away`).
        self.uncommitted_merged: dict[bytes, tuple[Any, ...]] = {}
        #: ``(status, in_flight_since)`` of the rows written into a group's transaction
        #: that ``mark_in_flight`` marked in the file since (:meth:`marked`).
        self.uncommitted_marks: dict[bytes, tuple[int, float]] = {}
        self.last_doc_id = 0
        self._since = 0.0  # time.monotonic() of the oldest waiting row
        self._retry_at = 0.0  # not due before this time.monotonic() (a write failed)

    def __len__(self) -> int:
        return len(self.pages) + len(self.sites)

    def __bool__(self) -> bool:
        return bool(self.pages or self.sites)

    def noted(self) -> None:
        """Call before adding rows: starts the clock of the oldest one."""
        if not self:
            self._since = time.monotonic()

    def due(self, batch_size: int, secs: float) -> bool:
        """Whether the rows are to be written now: ``batch_size`` waiting, or ``secs``
        passed since the oldest."""
        if not self:
            return False
        now = time.monotonic()
        if now < self._retry_at:
            return False
        return len(self) >= batch_size or now - self._since >= secs

    def failed(self, secs: float) -> None:
        """Writing them when due failed (another process holds the write lock past the
        timeout, a full disk): they stay, and are due again ``secs`` from now."""
        self._retry_at = time.monotonic() + secs

    def in_file(self, blob: bytes, stored: dict[bytes, Any]) -> bool:
        """Whether the record of ``blob`` is in the file: a waiting row not of a new
        record, or ``blob`` among the ``stored`` keys read from the file."""
        if blob in self.pages:
            return blob not in self.new
        return blob in stored

    def remember(self, blob: bytes, row: tuple[Any, ...]) -> None:
        """Keep ``row``, the file's row of its record at :attr:`data_version` (just read,
        or just written), as the base of the next row given for it (at most
        :data:`READ_MAX` rows are kept: the oldest goes)."""
        read = self.read
        if len(read) >= READ_MAX and blob not in read:
            del read[next(iter(read))]
        read[blob] = row
        if self.stale:
            self.stale.pop(blob, None)  # read since: the base is this row

    def keep_written(self, rows: dict[bytes, tuple[Any, ...]], data_version: int) -> None:
        """``rows`` are the file's rows of their records now, at ``data_version`` (taken
        in the transaction that wrote them): keep them as read. The rows kept before stay
        only if no other process wrote the file since they were read."""
        if data_version != self.data_version:
            self.outdated()
        self.data_version = data_version
        for blob, row in rows.items():
            self.remember(blob, row)

    def merged_away(self, rows: dict[bytes, tuple[Any, ...]]) -> None:
        """``rows``, as given, were written merged with another process's changes: the
        file's rows of their records differ from them. A ``get`` before the write may
        have answered with one of them, and a record got so and given again must merge
        with the file too (else a column the other process changed, which the record
        holds as it was, would look like the crawl's change and undo it): each is kept
        as a base (:attr:`stale`), not as read (a ``get`` reads the file)."""
        for blob, row in rows.items():
            self.read.pop(blob, None)
            self.stale[blob] = row
        while len(self.stale) > READ_MAX:
            del self.stale[next(iter(self.stale))]

    def marked(self, blobs: list[bytes], status: int, since: float) -> None:
        """The file's rows of ``blobs`` took ``status`` and ``in_flight_since``
        ``since`` (:meth:`SQLiteStore.mark_in_flight
        <scrapy_fresh.store.sqlite.SQLiteStore.mark_in_flight>`): so do the ones kept
        here (as bases too: :attr:`stale`), and those a group's open transaction wrote."""
        for rows in (self.read, self.stale, self.uncommitted_reads):
            for blob in blobs:
                row = rows.get(blob)
                if row is not None:
                    rows[blob] = _marked(row, status, since)
        for blob in blobs:  # the bases they give at the commit (committed)
            if blob in self.uncommitted_pages:
                self.uncommitted_marks[blob] = (status, since)

    def take_reads(self, blobs: list[bytes]) -> dict[bytes, tuple[Any, ...]]:
        """The remembered rows of ``blobs`` (taken: a row is the base of one write)."""
        read = self.read
        return {blob: read.pop(blob) for blob in blobs if blob in read}

    def take_stale(self, blobs: Iterable[bytes]) -> dict[bytes, tuple[Any, ...]]:
        """The rows of :attr:`stale` of ``blobs`` (taken). The caller reads the file's
        rows of their records too: whether they are still there, and how far visited."""
        stale = self.stale
        if not stale:
            return {}
        return {blob: stale.pop(blob) for blob in blobs if blob in stale}

    def outdated(self) -> None:
        """Another process may have changed the file since the rows kept were read:
        they answer no ``get`` any more, but stay the bases of the rows given next for
        their records (:attr:`stale`). (When this store writes the file directly, it
        drops them instead, :meth:`forget_reads`: a record put after such a write is
        written as given.)"""
        if not self.read:
            return
        stale = self.stale
        stale.update(self.read)
        self.read.clear()
        while len(stale) > READ_MAX:
            del stale[next(iter(stale))]

    def forget_reads(self) -> None:
        """This store wrote the file directly, or rows kept may never have been the
        file's (read or marked in a transaction rolled back since): drop them all."""
        self.read.clear()
        self.stale.clear()

    def clear(self) -> None:
        """No row waits any more (the rows read stay: :attr:`read`)."""
        self.pages.clear()
        self.sites.clear()
        self.new.clear()
        self.base.clear()
        self.merge.clear()
        self.uncommitted_pages.clear()
        self.uncommitted_sites.clear()
        self.uncommitted_reads, self.uncommitted_version = {}, None
        self.uncommitted_merged, self.uncommitted_marks = {}, {}
        if not self.read:
            self.data_version = None
        self._retry_at = 0.0

    def written(
        self,
        exact: dict[bytes, tuple[Any, ...]] | None = None,
        data_version: int | None = None,
        merged: dict[bytes, tuple[Any, ...]] | None = None,
    ) -> None:
        """The rows were written into a transaction that stays open (a group's); the
        file holds ``exact`` as they are at ``data_version`` once it commits; ``merged``:
        the rows (as given) the write merged with another process's changes. Rows
        written into it before and not given again since were not written again: what
        was learned of them then holds."""
        before = self.uncommitted_pages
        for blob, row in self.pages.items():
            if before.get(blob) is not row:  # written now: a mark before it is undone
                self.uncommitted_marks.pop(blob, None)
                self.uncommitted_reads.pop(blob, None)
                self.uncommitted_merged.pop(blob, None)
        self.uncommitted_pages = dict(self.pages)
        self.uncommitted_sites = dict(self.sites)
        self.uncommitted_reads.update(exact or {})
        self.uncommitted_version = data_version
        self.uncommitted_merged.update(merged or {})

    def committed(self) -> None:
        """The transaction the rows were written into committed: those not given again
        since are done; one given again since now has the row written as its base (the
        file holds it: its record is no longer new, and a column the crawl set back to
        its value before that write is the crawl's change, not one left as found)."""
        marks = self.uncommitted_marks
        for blob, mark in marks.items():  # the rows as the file holds them
            merged = self.uncommitted_merged.get(blob)
            if merged is not None:
                self.uncommitted_merged[blob] = _marked(merged, *mark)
        for blob, row in self.uncommitted_pages.items():
            if self.pages.get(blob) is row:
                del self.pages[blob]
                self.new.pop(blob, None)
                self.base.pop(blob, None)
                self.merge.discard(blob)
            elif blob in self.pages:
                self.base[blob] = self.uncommitted_merged.get(blob) or (
                    _marked(row, *marks[blob]) if blob in marks else row
                )
                self.new.pop(blob, None)
                if blob in self.uncommitted_merged:  # the file holds another row
                    self.merge.add(blob)
        for host, row in self.uncommitted_sites.items():
            if self.sites.get(host) is row:
                del self.sites[host]
        if self.uncommitted_version is not None:
            done = {b: r for b, r in self.uncommitted_reads.items() if b not in self.pages}
            if self.pages and self.uncommitted_version != self.data_version:
                # Rows still waiting were made from the file's rows before another
                # process wrote it (or from the rows written, unmerged): their write must
                # still merge, so data_version stays the one they were read at.
                self.outdated()
            else:
                self.keep_written(done, self.uncommitted_version)
        self.merged_away({b: r for b, r in self.uncommitted_merged.items() if b not in self.pages})
        self.uncommitted_pages, self.uncommitted_sites = {}, {}
        self.uncommitted_reads, self.uncommitted_version = {}, None
        self.uncommitted_merged, self.uncommitted_marks = {}, {}
        if not self:
            self.clear()

    def rolled_back(self) -> None:
        """The transaction the rows were written into was rolled back: they all wait."""
        self.uncommitted_pages, self.uncommitted_sites = {}, {}
        self.uncommitted_reads, self.uncommitted_version = {}, None
        self.uncommitted_merged, self.uncommitted_marks = {}, {}

    def exact_rows(
        self, rows: Iterable[tuple[Any, ...]], *, new_ok: bool
    ) -> dict[bytes, tuple[Any, ...]]:
        """Of ``rows``, written to the file in full (no upsert refused), those the file
        now holds exactly: one whose doc id is its base's (an upsert keeps the file's doc
        id), and, with ``new_ok`` (no other process wrote the file since before they were
        found absent from it), a new record's (its doc id was given here; had another
        process added the record meanwhile, the file would keep that one's)."""
        out: dict[bytes, tuple[Any, ...]] = {}
        for row in rows:
            blob = row[0]
            base = self.base.get(blob)
            if (base is not None and base[_DOC_ID] == row[_DOC_ID]) or (
                new_ok and base is None and blob in self.new
            ):
                out[blob] = row
        return out

    def merged(
        self,
        file_rows: dict[bytes, tuple[Any, ...]],
        pages: dict[bytes, tuple[Any, ...]] | None = None,
    ) -> tuple[list[Any], int, dict[bytes, tuple[Any, ...]]]:
        """The page rows to write, given the file's ``file_rows`` now of the keys of
        :attr:`base`: a row whose record was deleted meanwhile is left out, and one whose
        file row changed takes the file's value of every column it left as it found it.
        Returns the rows, how many were left out, and the rows (as given, by key) that
        took a value of the file's (:meth:`merged_away`)."""
        rows: list[Any] = []
        left_out = 0
        moved: dict[bytes, tuple[Any, ...]] = {}
        for blob, row in (self.pages if pages is None else pages).items():
            base = self.base.get(blob)
            if base is not None:
                now = file_rows.get(blob)
                if now is None:
                    left_out += 1
                    continue
                if now != base:
                    given = row
                    row = tuple(
                        ours if ours != was else theirs
                        for ours, was, theirs in zip(row, base, now, strict=True)
                    )
                    if row != given:
                        moved[blob] = given
            rows.append(row)
        return rows, left_out, moved
