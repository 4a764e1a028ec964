"""``scrapy-fresh changes``: the change feed read from a visit log (issue 17).

The log lines are written as :class:`~scrapy_fresh.crawl.visitlog.VisitLog` writes them; the
crawl that writes them for real is in tests/realsite/test_realsite_changes.py."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.changes.feed import read_changes
from scrapy_fresh.exceptions import ConfigError


def visit(t: float, url: str, outcome: str, **extra: Any) -> str:
    line = {"e": "visit", "t": t, "run": "r1", "key": "k" + url[-1], "url": url,
            "host": "shop.test", "outcome": outcome, "status": "idle", **extra}  # fmt: skip
    return json.dumps(line) + "\n"


LINES = [
    json.dumps({"e": "run", "t": 99.0, "run": "r1", "phase": "open"}) + "\n",
    visit(100.0, "http://shop.test/1", "new", fields=["price"]),
    visit(101.0, "http://shop.test/2", "unchanged"),
    visit(102.0, "http://shop.test/3", "gone"),  # a first 404: not gone yet
    visit(200.0, "http://shop.test/1", "changed", fields=["price"]),
    visit(201.0, "http://shop.test/3", "gone", status="gone", became_gone=True, last_crawl=100.0),
    visit(300.0, "http://shop.test/3", "gone", status="gone"),  # still gone: told once
]


def run_changes(log: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy_fresh.commands", "changes", "--visit-log", str(log), *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "visits.jsonl"
    path.write_text("".join(LINES))
    return path


def test_changes_are_new_changed_and_became_gone_only(log: Path) -> None:
    got = [(c.event["kind"], c.event["url"][-1]) for c in read_changes(log)]
    assert got == [("new", "1"), ("changed", "1"), ("gone", "3")]


def test_a_cursor_resumes_after_the_last_change_read(log: Path) -> None:
    first = list(read_changes(log))
    after = list(read_changes(log, cursor=int(first[0].cursor)))
    assert [c.event["kind"] for c in after] == ["changed", "gone"]
    assert list(read_changes(log, cursor=int(first[-1].cursor))) == []
    with pytest.raises(ConfigError, match="beyond the end"):
        list(read_changes(log, cursor=10**9))


def test_since_and_kinds_filter(log: Path) -> None:
    assert [c.event["kind"] for c in read_changes(log, since=150.0)] == ["changed", "gone"]
    assert [c.event["kind"] for c in read_changes(log, kinds=["gone"])] == ["gone"]


def test_a_line_being_written_is_left_for_the_next_read(log: Path) -> None:
    with log.open("a") as handle:
        handle.write(visit(400.0, "http://shop.test/4", "new")[:-10])
    assert len(list(read_changes(log))) == 3


def test_command_prints_json_lines_csv_and_atom(log: Path) -> None:
    lines = run_changes(log, "--since", "1970-01-01T00:02:30Z").stdout.splitlines()
    events = [json.loads(line) for line in lines]
    assert [(e["kind"], e["time"]) for e in events] == [
        ("changed", "1970-01-01T00:03:20Z"), ("gone", "1970-01-01T00:03:21Z")
    ]  # fmt: skip
    assert events[1]["last_seen"] == 100.0
    rows = list(csv.DictReader(io.StringIO(run_changes(log, "--format", "csv").stdout)))
    assert [(r["kind"], r["fields"]) for r in rows] == [
        ("new", "price"), ("changed", "price"), ("gone", "")
    ]  # fmt: skip
    feed = ET.fromstring(run_changes(log, "--format", "atom").stdout)
    ns = {"a": "http://www.w3.org/2005/Atom"}
    titles = [e.findtext("a:title", namespaces=ns) for e in feed.findall("a:entry", ns)]
    assert titles == ["gone http://shop.test/3", "changed http://shop.test/1",
                      "new http://shop.test/1"]  # fmt: skip


def test_command_names_what_is_wrong(log: Path, tmp_path: Path) -> None:
    bad = run_changes(log, "--since", "yesterday")
    assert bad.returncode == 2
    assert "--since 'yesterday' is not a time" in bad.stderr
    missing = run_changes(tmp_path / "none.jsonl")
    assert missing.returncode == 2
    assert "No visit log at" in missing.stderr
    assert "--cursor 'x' is not a cursor" in run_changes(log, "--cursor", "x").stderr


def test_follow_prints_changes_as_they_are_logged(log: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "scrapy_fresh.commands", "changes", "--visit-log", str(log),
         "--follow", "--poll-secs", "0.1"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        seen = [json.loads(process.stdout.readline())["kind"] for _ in range(3)]
        assert seen == ["new", "changed", "gone"]
        time.sleep(0.3)
        with log.open("a") as handle:
            handle.write(visit(500.0, "http://shop.test/5", "unchanged"))
            handle.write(visit(501.0, "http://shop.test/6", "new", fields=["name"]))
        event = json.loads(process.stdout.readline())
        assert (event["kind"], event["url"]) == ("new", "http://shop.test/6")
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()
