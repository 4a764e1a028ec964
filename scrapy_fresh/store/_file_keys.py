"""The keys of every record in an SQLite store's file, while this store alone writes it.

A first crawl asks the store about every URL it meets for the first time in the run
(is it known?), and on a new file the answer is always no: one ``SELECT`` per new URL,
and one more per batch of new records written, for nothing. When the file holds no
record the first time the store looks one up (writing behind), the store starts a
:class:`FileKeys`: from then every key it is given to write is added, and a key not in
the set is not in the file as long as no other connection has committed to it since
(``PRAGMA data_version``, read at each such answer: a cheaper statement than the
``SELECT``, and as current; ``tests/test_sqlite_file_keys.py``). Once another connection has written the file the set is
dropped for good, and past :data:`KEYS_MAX` keys too: the store reads the file again,
as before. A key in the set may be absent from the file (a write rolled back, a record
deleted): that costs the ``SELECT``, never a wrong answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["KEYS_MAX", "FileKeys"]

#: Keys kept at most (about 20 MB of them); a larger first crawl reads the file for the
#: rest, as a store without the set does.
KEYS_MAX = 1 << 18


class FileKeys:
    """Every key of the file at :attr:`version`, or None when that is not known."""

    def __init__(self) -> None:
        self.keys: set[bytes] | None = None
        #: ``PRAGMA data_version`` when the file was found empty (it moves only when
        #: another connection commits).
        self.version: int | None = None
        #: Whether the file was looked at: the set starts only from an empty file.
        self.looked = False

    def start(self, version: int, given: Iterable[bytes]) -> None:
        """The file held no record at ``version``; ``given`` are the keys given to be
        written that it does not hold yet (waiting rows)."""
        self.keys = set(given)
        self.version = version

    def absent(self, blob: bytes, version: int) -> bool:
        """Whether the record of ``blob`` is surely not in the file, which is at
        ``version`` now (another connection's commit since it was found empty drops
        the set)."""
        keys = self.keys
        if keys is None:
            return False
        if version != self.version:
            self.stop()
            return False
        return blob not in keys

    def add(self, blob: bytes) -> None:
        """``blob`` is given to be written: from now on it may be in the file."""
        keys = self.keys
        if keys is not None:
            keys.add(blob)
            if len(keys) > KEYS_MAX:
                self.stop()

    def stop(self) -> None:
        """Not known any more: every lookup reads the file."""
        self.keys = None
