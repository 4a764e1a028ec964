"""The SQLite store's durability promise, tested with a real SIGKILL.

"Killing the process (SIGKILL) in the middle of a batch of writes loses nothing that
was committed and leaves a readable database." A child process writes batches with
``put_many`` and prints each batch number once the call (and ``flush``) has returned;
the test kills it after a few batches, without any timing assumption, then checks the
file: every reported batch is there in full, no batch is there in part, and SQLite's
integrity check passes. The child is restarted on the same file a few times, so that
recovery from a killed writer is tested too.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from scrapy_fresh.store.base import Status
from scrapy_fresh.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from pathlib import Path

BATCH = 1000  # new records per batch, plus COUNTERS updated records
COUNTERS = 100

WRITER = """
import sys
from scrapy_fresh.keys import url_key
from scrapy_fresh.store.base import PageState, Status
from scrapy_fresh.store.sqlite import SQLiteStore

path = sys.argv[1]
first, batch_size, BATCH, COUNTERS, stop_after, behind = map(int, sys.argv[2:])


def record(url, **fields):
    return PageState(key=url_key(url), url=url, host="durable.example", **fields)


def batch_of(batch):
    states = [
        record(f"https://durable.example/{batch}/{i}", access_count=batch, next_due=i)
        for i in range(BATCH)
    ]
    # Records that every batch updates: after a crash they must all show one batch.
    states += [
        record(f"https://durable.example/counter/{i}", visits=batch, status=Status.IDLE)
        for i in range(COUNTERS)
    ]
    return states


store = SQLiteStore(path, batch_size=batch_size, commit_secs=3600.0 if behind else 0.0)
calls = 0


def stop_inside_the_transaction():
    # SQLite calls this every 1000 virtual machine steps while put_many runs. Once
    # `stop_after` batches are committed, it reports that the next one is half written
    # and waits (on stdin, which never comes) for the SIGKILL.
    global calls
    if batch >= first + stop_after:
        calls += 1
        if calls == 20:
            print("writing", flush=True)
            sys.stdin.readline()
    return 0


if stop_after:
    store._conn.set_progress_handler(stop_inside_the_transaction, 1000)
batch, states = first, batch_of(first)
while True:
    store.put_many(states)
    store.flush()
    # Build the next batch before reporting this one, so that a kill that follows a
    # report lands while put_many is writing rather than while records are built.
    states = batch_of(batch + 1)
    print(batch, flush=True)
    batch += 1
"""


def run_and_kill(
    path: Path,
    first: int,
    batch_size: int,
    reports: int,
    inside: bool,
    env: dict[str, str],
    behind: bool = False,
) -> list[int]:
    """Run a writer from batch ``first``; SIGKILL it once it has reported ``reports`` batches.

    With ``inside``, the kill lands inside the next batch's transaction, after part of
    it is written (the writer says so and waits); otherwise right after the report.
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)]
        + [
            str(n)
            for n in (first, batch_size, BATCH, COUNTERS, reports if inside else 0, int(behind))
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    reported: list[int] = []
    try:
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline()
            if not line:
                proc.wait()
                assert proc.stderr is not None
                pytest.fail(f"the writer stopped before it was killed:\n{proc.stderr.read()}")
            if line == "writing\n":
                break
            reported.append(int(line))
            if len(reported) == reports and not inside:
                break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGKILL
    return reported


def check_file(path: Path, reported: list[int]) -> int:
    """Check the file after a kill; return the last batch in it."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    with SQLiteStore(path) as store:  # opens: the killed writer left a readable store
        batches: Counter[int] = Counter()
        counters = []
        for state in store.iterate(batch_size=5000):
            if "/counter/" in state.url:
                counters.append(state.visits)
            else:
                batches[state.access_count] += 1
        counts = store.counts()
        total = len(store)
    last = max(batches)
    # Every reported batch is there in full ...
    for batch in reported:
        assert batches[batch] == BATCH, f"reported batch {batch} has {batches[batch]} records"
    # ... and no batch is there in part: the one being written is all there or absent.
    assert all(n == BATCH for n in batches.values()), batches
    assert sorted(batches) == list(range(last + 1))
    assert last in (reported[-1], reported[-1] + 1)  # + 1: killed before the print
    assert counters == [last] * COUNTERS
    assert total == (last + 1) * BATCH + COUNTERS
    assert counts[Status.QUEUED] == (last + 1) * BATCH
    assert counts[Status.IDLE] == COUNTERS
    return last


@pytest.mark.slow
@pytest.mark.parametrize(
    ("batch_size", "behind"),
    [(1, False), (1_000_000_000, False), (1_000_000_000, True)],
    ids=["commit-per-call", "flush", "write-behind"],
)
def test_sigkill_loses_no_committed_batch(
    tmp_path: Path, python_env: dict[str, str], batch_size: int, behind: bool
) -> None:
    path = tmp_path / "durable.sqlite"
    first = 0
    # Kill, restart on the same file, kill again ...
    for reports, inside in ((5, True), (2, False), (3, True), (2, True)):
        reported = run_and_kill(path, first, batch_size, reports, inside, python_env, behind)
        assert reported == list(range(first, first + reports))
        last = check_file(path, reported)
        if inside:
            assert last == reported[-1]  # the half-written batch is not there at all
        first = last + 1
