"""Change traces: when each page changed, loaded from ``page,timestamp`` CSV files.

A trace file is CSV, optionally gzip-compressed (detected from its first bytes, not its
name), with the header ``page,timestamp`` and one row per change: the page's name (a URL
or any other non-empty label) and the change time in Unix seconds. Rows may come in any
order. A bad row stops loading with a :class:`TraceError` naming the file, the line, the
value and what was expected.

The simulator replays a :class:`Trace` over ``[start, end]``; by default the span of
all its changes.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scrapy_fresh.exceptions import FreshError

__all__ = [
    "DAY",
    "HEADER",
    "Trace",
    "TraceError",
    "load_trace",
    "poisson_trace",
    "write_trace",
]

#: Seconds per day: budgets and rates are per day, times in seconds.
DAY = 86400.0
#: The header every trace file starts with.
HEADER = ("page", "timestamp")


class TraceError(FreshError, ValueError):
    """A trace (or access trace) file cannot be read; the message says where and why."""


@dataclass(frozen=True)
class Trace:
    """Change times per page, and the interval the replay covers.

    :param pages: page names, in file order of first appearance.
    :param changes: per page, its change times (Unix seconds), sorted.
    :param start: replay start; every page is fetched once at this time.
    :param end: replay end.
    :param source: where the trace came from (a path, or a description).
    """

    pages: tuple[str, ...]
    changes: tuple[tuple[float, ...], ...]
    start: float
    end: float
    source: str = ""
    index: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.pages) != len(self.changes):
            raise TraceError(
                f"pages ({len(self.pages)}) and changes ({len(self.changes)}) must have one "
                "entry per page."
            )
        if not self.pages:
            raise TraceError(f"trace {self.source!r} has no pages.")
        if not (math.isfinite(self.start) and math.isfinite(self.end)) or self.end <= self.start:
            raise TraceError(
                f"trace {self.source!r}: end ({self.end!r}) must be a finite time after "
                f"start ({self.start!r})."
            )
        if not self.index:
            object.__setattr__(self, "index", {p: i for i, p in enumerate(self.pages)})

    def __len__(self) -> int:
        return len(self.pages)

    @property
    def span(self) -> float:
        """Seconds replayed."""
        return self.end - self.start

    @property
    def n_changes(self) -> int:
        """Changes within ``[start, end]`` over all pages."""
        return sum(len(c) for c in self.changes)

    def rates(self) -> list[float]:
        """Oracle change rates per page (changes per second over the whole trace)."""
        return [len(c) / self.span for c in self.changes]

    def window(self, start: float, end: float) -> Trace:
        """The same pages over ``[start, end]`` (changes outside are dropped)."""
        return Trace(
            self.pages,
            tuple(tuple(t for t in c if start <= t <= end) for c in self.changes),
            start,
            end,
            self.source,
        )

    def filtered(self, min_changes: int = 0, min_span_days: float = 0.0) -> Trace:
        """Only the pages with at least ``min_changes`` changes spread over at least
        ``min_span_days`` days (first to last change), as the traces' README advises for
        rate-based comparisons (52 changes over 30 days)."""
        keep = [
            i
            for i, c in enumerate(self.changes)
            if len(c) >= max(1, min_changes) and (c[-1] - c[0]) >= min_span_days * DAY
        ]
        if not keep:
            raise TraceError(
                f"no page of trace {self.source!r} has at least {min_changes} changes over "
                f"{min_span_days} days."
            )
        return Trace(
            tuple(self.pages[i] for i in keep),
            tuple(self.changes[i] for i in keep),
            self.start,
            self.end,
            self.source,
        )

    @classmethod
    def from_changes(
        cls,
        changes: Mapping[str, Iterable[float]],
        start: float | None = None,
        end: float | None = None,
        source: str = "",
    ) -> Trace:
        """Build a trace from ``{page: change times}``; start/end default to the span."""
        pages = tuple(changes)
        times = tuple(tuple(sorted(float(t) for t in changes[p])) for p in pages)
        flat = [t for c in times for t in c]
        lo = start if start is not None else (min(flat) if flat else 0.0)
        hi = end if end is not None else (max(flat) if flat else lo)
        return cls(pages, times, float(lo), float(hi), source)


def _open_text(path: Path) -> io.TextIOBase:
    try:
        with path.open("rb") as raw:
            magic = raw.read(2)
    except OSError as exc:
        raise TraceError(f"cannot read trace file {str(path)!r}: {exc.strerror or exc}.") from exc
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return path.open("r", encoding="utf-8", newline="")


def _rows(path: Path, what: str) -> dict[str, list[float]]:
    """Read a ``page,timestamp`` file into ``{page: [times]}`` (unsorted)."""
    out: dict[str, list[float]] = {}
    try:
        with _open_text(path) as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise TraceError(
                    f"{what} file {str(path)!r} is empty; expected a header 'page,timestamp' "
                    "and one row per event."
                )
            if tuple(h.strip().lower() for h in header) != HEADER:
                raise TraceError(
                    f"{what} file {str(path)!r}, line 1: header {','.join(header)!r} is not "
                    "the expected 'page,timestamp'."
                )
            for row in reader:
                line = reader.line_num
                if not row:
                    continue
                if len(row) != 2:
                    raise TraceError(
                        f"{what} file {str(path)!r}, line {line}: {len(row)} fields "
                        f"({','.join(row)!r}); expected 2: page,timestamp."
                    )
                page, stamp = row[0].strip(), row[1].strip()
                if not page:
                    raise TraceError(
                        f"{what} file {str(path)!r}, line {line}: the page name is empty."
                    )
                try:
                    when = float(stamp)
                except ValueError:
                    when = math.nan
                if not math.isfinite(when):
                    raise TraceError(
                        f"{what} file {str(path)!r}, line {line}: timestamp {stamp!r} is not "
                        "a finite number; expected Unix seconds such as 1672532675."
                    )
                times = out.get(page)
                if times is None:
                    out[page] = [when]
                else:
                    times.append(when)
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as exc:
        raise TraceError(
            f"{what} file {str(path)!r} cannot be read as (gzip) UTF-8 CSV: {exc}."
        ) from exc
    if not out:
        raise TraceError(f"{what} file {str(path)!r} has a header but no rows.")
    return out


def load_trace(path: str | Path) -> Trace:
    """Load a change trace (CSV ``page,timestamp``, gzip or not).

    Raises :class:`TraceError` on a missing file, a wrong header, a row without two
    fields, an empty page name or a timestamp that is not a finite number.
    """
    target = Path(path)
    rows = _rows(target, "trace")
    return Trace.from_changes(rows, source=str(target))


def load_access_times(path: str | Path, trace: Trace) -> list[list[float]]:
    """Load an access trace (same format as a change trace) for the pages of ``trace``.

    Accesses to pages the trace does not have are an error (a likely mix-up of files).
    """
    target = Path(path)
    rows = _rows(target, "access trace")
    unknown = [p for p in rows if p not in trace.index]
    if unknown:
        raise TraceError(
            f"access trace file {str(target)!r} names {len(unknown)} pages the change trace "
            f"does not have, e.g. {unknown[0]!r}."
        )
    out: list[list[float]] = [[] for _ in trace.pages]
    for page, times in rows.items():
        out[trace.index[page]] = sorted(t for t in times if trace.start <= t <= trace.end)
    return out


def write_trace(path: str | Path, changes: Mapping[str, Sequence[float]]) -> Path:
    """Write ``{page: times}`` as a trace file (gzip if the name ends in ``.gz``)."""
    target = Path(path)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(HEADER)
    for page, times in changes.items():
        for t in times:
            writer.writerow((page, repr(float(t)) if not float(t).is_integer() else int(t)))
    data = text.getvalue().encode("utf-8")
    if target.suffix == ".gz":
        target.write_bytes(gzip.compress(data, mtime=0))
    else:
        target.write_bytes(data)
    return target


def poisson_trace(
    rates_per_day: Sequence[float], days: float, *, seed: int = 0, start: float = 0.0
) -> Trace:
    """A synthetic trace: page ``p{i}`` changes as a Poisson process at ``rates_per_day[i]``.

    For tests and the Cho & Garcia-Molina example (their model is Poisson).
    """
    rng = random.Random(seed)
    end = start + days * DAY
    changes: dict[str, list[float]] = {}
    for i, rate in enumerate(rates_per_day):
        times: list[float] = []
        if rate > 0:
            t = start + rng.expovariate(rate / DAY)
            while t < end:
                times.append(t)
                t += rng.expovariate(rate / DAY)
        changes[f"p{i}"] = times
    return Trace.from_changes(changes, start, end, source=f"poisson(seed={seed})")
