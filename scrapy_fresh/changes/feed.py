"""The change feed: changes (new, changed, gone pages) read back from the visit log.

Every recorded visit is a line of :setting:`FRESH_VISIT_LOG`; a visit whose outcome is
``new`` or ``changed``, or that made its page gone, is a change. :func:`read_changes`
yields them from a time or a cursor (the byte offset after a line in the log, as text:
opaque, handed back with each change); :func:`change_event` builds the same event from a
visit as it is recorded (the webhook). ``scrapy-fresh changes`` prints them as JSON lines
(:func:`jsonl`), CSV (:func:`csv_text`) or an Atom feed (:func:`atom`). Standard library
only.
"""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from xml.sax.saxutils import escape

from scrapy_fresh.exceptions import ConfigError

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

__all__ = [
    "GONE_NAMESPACE",
    "KINDS",
    "Change",
    "atom",
    "change_event",
    "csv_text",
    "jsonl",
    "parse_cursor",
    "parse_since",
    "read_changes",
]

#: The meta namespace (:ref:`stores-meta`) that keeps, per gone page (by record key),
#: the ``last_seen`` it was told gone for: told once per disappearance.
GONE_NAMESPACE = "gone"

#: The kinds of change, in the feed's ``kind`` field.
KINDS: Final = ("new", "changed", "gone")
CSV_COLUMNS: Final = ("cursor", "time", "kind", "url", "key", "host", "fields", "last_seen")


def iso(t: float | None) -> str | None:
    """Unix seconds as an RFC 3339 UTC time (None for None)."""
    if t is None:
        return None
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


def change_event(
    kind: str, t: float, url: str, key: str, host: str,
    fields: Iterable[str] = (), last_seen: float | None = None,
) -> dict[str, Any]:  # fmt: skip
    """One change as the feed and the webhook give it (JSON data)."""
    event: dict[str, Any] = {
        "kind": kind, "t": t, "time": iso(t), "url": url, "key": key, "host": host,
    }  # fmt: skip
    if kind == "gone":
        event["last_seen"] = last_seen
    else:
        event["fields"] = list(fields)
    return event


def kind_of(line: dict[str, Any]) -> str | None:
    """The kind of change a visit log line is, or None for a visit that changed nothing."""
    if line.get("e") != "visit":
        return None
    outcome = line.get("outcome")
    if outcome in ("new", "changed"):
        return str(outcome)
    if outcome == "gone" and line.get("became_gone"):
        return "gone"
    return None


@dataclass(frozen=True)
class Change:
    """A change and the cursor just after it in the log."""

    cursor: str
    event: dict[str, Any]


def parse_since(text: str) -> float:
    """``--since``: Unix seconds, or an ISO 8601 time (UTC unless it says otherwise).

    >>> parse_since("1700000000"), parse_since("2023-11-14T22:13:20Z")
    (1700000000.0, 1700000000.0)
    """
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"--since {text!r} is not a time; expected Unix seconds or an ISO 8601 time "
            "such as 2026-11-26T08:00:00Z."
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def parse_cursor(text: str) -> int:
    """``--cursor``: a cursor a change carried (the offset after it in the log)."""
    if not text.isdigit():
        raise ConfigError(
            f"--cursor {text!r} is not a cursor; give the 'cursor' of the last change you "
            "read (a whole number)."
        )
    return int(text)


def read_changes(
    path: Path, *, since: float | None = None, cursor: int = 0, kinds: Iterable[str] = KINDS
) -> Iterator[Change]:
    """The changes in the visit log at ``path`` after ``cursor`` and at or after
    ``since``; only whole lines (a line being written is read next time).

    :raises ConfigError: if the cursor lies beyond the end of the log (another log, or
        one that was truncated).
    """
    wanted = set(kinds)
    with open(path, "rb") as log:
        log.seek(0, 2)
        if cursor > log.tell():
            raise ConfigError(
                f"--cursor {cursor} lies beyond the end of {str(path)!r} ({log.tell()} "
                "bytes): the log was truncated or replaced; start again with --since."
            )
        log.seek(cursor)
        offset = cursor
        for raw in log:
            if not raw.endswith(b"\n"):
                return
            offset += len(raw)
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            kind = kind_of(line) if isinstance(line, dict) else None
            if kind is None or kind not in wanted:
                continue
            t = float(line.get("t", 0.0))
            if since is not None and t < since:
                continue
            event = change_event(
                kind, t, str(line.get("url")), str(line.get("key")), str(line.get("host", "")),
                line.get("fields") or (), line.get("last_crawl"),
            )  # fmt: skip
            yield Change(str(offset), event)


def jsonl(changes: Iterable[Change]) -> Iterator[str]:
    """One JSON object per change, its cursor included."""
    for change in changes:
        yield json.dumps({"cursor": change.cursor, **change.event}, ensure_ascii=False)


def csv_text(changes: Iterable[Change], header: bool = True) -> Iterator[str]:
    """CSV lines (:data:`CSV_COLUMNS`; fields joined by spaces)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="")
    if header:
        writer.writerow(CSV_COLUMNS)
        yield buffer.getvalue()
    for change in changes:
        buffer.seek(0)
        buffer.truncate()
        e = change.event
        writer.writerow([change.cursor, e["time"], e["kind"], e["url"], e["key"], e["host"],
                         " ".join(e.get("fields", ())), iso(e.get("last_seen")) or ""])  # fmt: skip
        yield buffer.getvalue()


def atom(changes: Iterable[Change], feed_id: str, title: str = "scrapy_fresh changes") -> str:
    """An Atom feed (RFC 4287) of the changes, newest first."""
    entries = []
    newest = 0.0
    for change in sorted(changes, key=lambda c: -c.event["t"]):
        e = change.event
        newest = max(newest, e["t"])
        what = (
            f"gone (last seen {iso(e.get('last_seen')) or 'never'})"
            if e["kind"] == "gone"
            else f"{e['kind']}: {', '.join(e.get('fields', ())) or 'page'}"
        )
        entries.append(
            "<entry>"
            f"<id>{escape(feed_id)}:{escape(e['key'])}:{change.cursor}</id>"
            f"<title>{escape(e['kind'])} {escape(e['url'])}</title>"
            f"<updated>{iso(e['t'])}</updated>"
            f'<link href="{escape(e["url"], {chr(34): "&quot;"})}"/>'
            f'<category term="{e["kind"]}"/>'
            f"<summary>{escape(what)}</summary>"
            "</entry>"
        )
    updated = iso(newest or time.time())
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<feed xmlns="http://www.w3.org/2005/Atom">'
        f"<id>{escape(feed_id)}</id><title>{escape(title)}</title><updated>{updated}</updated>"
        + "".join(entries)
        + "</feed>\n"
    )
