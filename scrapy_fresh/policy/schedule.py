"""Schedule rules: the operator's bounds on when pages are fetched, on top of the learned times.

A rule matches pages by host (a subdomain inherits) or by a URL regular expression and
says how often they may be fetched: at least every ``max`` seconds, at most every ``min``
seconds, or exactly every ``every`` seconds, and in which time windows of the day (in a
time zone, local by default). :meth:`ScheduleRules.due` turns the due time the refresh
rule (or a provider's signal) proposes into the one the rules allow; the first rule that
matches a page is its rule. Pure maths: the caller passes the times, nothing reads the
clock.

>>> rules = ScheduleRules.parse([{"match": r"/feed$", "every": "10m",
...                                "window": "06:00-22:00", "tz": "UTC"}], "RULES")
>>> rules.due("https://e.test/feed", "e.test", last_visit=0.0, proposed=86400.0)
21600.0
>>> rules.due("https://e.test/feed", "e.test", last_visit=21600.0, proposed=90000.0)
22200.0
>>> rules.due("https://e.test/page", "e.test", last_visit=0.0, proposed=5.0)
5.0
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import zoneinfo
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scrapy_fresh.exceptions import ConfigError

__all__ = ["NO_RULES", "ScheduleRule", "ScheduleRules", "Window", "parse_duration"]

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", re.IGNORECASE)
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")
_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_KEYS = frozenset({"host", "match", "min", "max", "every", "window", "days", "tz"})
#: Days searched for an allowed window (a week covers every ``days`` choice).
_SEARCH_DAYS = 8


def parse_duration(value: Any, where: str) -> float:
    """Seconds from a number or a string such as ``"90"``, ``"10m"``, ``"6h"``, ``"1d"``, ``"2w"``.

    >>> parse_duration("10m", "x"), parse_duration(30, "x"), parse_duration("1.5h", "x")
    (600.0, 30.0, 5400.0)
    """
    secs: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        secs = float(value)
    elif isinstance(value, str):
        found = _DURATION.fullmatch(value)
        if found is not None:
            secs = float(found.group(1)) * _UNITS[(found.group(2) or "s").lower()]
    if secs is None or not math.isfinite(secs) or secs <= 0:
        raise ConfigError(
            f"{where} ({value!r}) must be a positive duration: seconds, or a number with "
            "a unit s, m, h, d or w (e.g. '10m', '1d')."
        )
    return secs


def _clock_secs(text: str) -> int | None:
    """Seconds after midnight of ``HH:MM[:SS]``, or None if it is not a time of day."""
    found = _CLOCK.fullmatch(text.strip())
    if found is None:
        return None
    hours, minutes, secs = int(found.group(1)), int(found.group(2)), int(found.group(3) or 0)
    total = hours * 3600 + minutes * 60 + secs
    return None if minutes > 59 or secs > 59 or total > 86400 else total


@dataclass(frozen=True)
class Window:
    """Fetches allowed from ``start`` (inclusive) to ``end`` (exclusive), seconds after
    local midnight; ``end`` before ``start`` runs past midnight."""

    start: int
    end: int

    @classmethod
    def parse(cls, text: Any, where: str) -> Window:
        """``"06:00-22:00"`` (``"22:00-06:00"`` runs over midnight)."""
        if not isinstance(text, str) or text.count("-") != 1:
            raise ConfigError(f"{where} ({text!r}) must be a time window such as '06:00-22:00'.")
        first, last = text.split("-")
        start, end = _clock_secs(first), _clock_secs(last)
        if start is None or end is None:
            raise ConfigError(
                f"{where} ({text!r}) must be a time window HH:MM-HH:MM (or HH:MM:SS) "
                "between 00:00 and 24:00, such as '06:00-22:00'."
            )
        if start == end:
            raise ConfigError(f"{where} ({text!r}) is empty: its start and end are the same.")
        return cls(start, end)

    def spans(self) -> list[tuple[int, int]]:
        """The window as spans within one day (two when it runs over midnight)."""
        if self.start < self.end:
            return [(self.start, self.end)]
        return [(0, self.end), (self.start, 86400)]

    def __str__(self) -> str:
        def clock(secs: int) -> str:
            h, rest = divmod(secs, 3600)
            m, s = divmod(rest, 60)
            return f"{h:02d}:{m:02d}" + (f":{s:02d}" if s else "")

        return f"{clock(self.start)}-{clock(self.end)}"


@dataclass(frozen=True)
class ScheduleRule:
    """One rule; see the module docstring. ``pattern`` is searched in the URL."""

    host: str | None = None
    pattern: re.Pattern[str] | None = None
    min_secs: float | None = None
    max_secs: float | None = None
    windows: tuple[Window, ...] = ()
    #: Weekdays allowed (0 = Monday); empty: every day.
    days: frozenset[int] = frozenset()
    #: IANA time zone name, or "local" (the machine's).
    tz: str = "local"
    _zone: dt.tzinfo | None = field(default=None, compare=False, repr=False)

    def matches(self, url: str, host: str) -> bool:
        """Whether the rule is about this page."""
        if self.host is not None:
            name = host.split(":", 1)[0].lower()
            if name != self.host and not name.endswith("." + self.host):
                return False
        return self.pattern is None or self.pattern.search(url) is not None

    def bound(self, last_visit: float | None, proposed: float) -> float:
        """``proposed`` moved into ``[last_visit + min, last_visit + max]``, then to the
        first instant a window (and day) allows."""
        due = proposed
        if last_visit is not None:
            if self.max_secs is not None:
                due = min(due, last_visit + self.max_secs)
            if self.min_secs is not None:
                due = max(due, last_visit + self.min_secs)
        return self.allowed_from(due)

    def allowed_from(self, when: float) -> float:
        """The first instant at or after ``when`` inside a window on an allowed day."""
        if not self.windows and not self.days:
            return when
        zone = self._zone  # None: the machine's zone (naive local times)
        local = dt.datetime.fromtimestamp(when, zone)
        spans = [s for w in self.windows for s in w.spans()] or [(0, 86400)]
        for offset in range(_SEARCH_DAYS):
            day = local.date() + dt.timedelta(days=offset)
            if self.days and day.weekday() not in self.days:
                continue
            midnight = dt.datetime.combine(day, dt.time(), zone)
            for start, end in sorted(spans):
                opens = (midnight + dt.timedelta(seconds=start)).timestamp()
                closes = (midnight + dt.timedelta(seconds=end)).timestamp()
                if when < closes:
                    return max(when, opens)
        return when  # unreachable with a valid rule: some day of a week is allowed

    def describe(self) -> str:
        """One line for people (``scrapy-fresh status``)."""
        parts = []
        if self.host is not None:
            parts.append(f"host {self.host}")
        if self.pattern is not None:
            parts.append(f"url ~ {self.pattern.pattern}")
        if self.min_secs is not None and self.min_secs == self.max_secs:
            parts.append(f"every {_human(self.min_secs)}")
        else:
            if self.min_secs is not None:
                parts.append(f"at most every {_human(self.min_secs)}")
            if self.max_secs is not None:
                parts.append(f"at least every {_human(self.max_secs)}")
        if self.windows:
            parts.append("at " + ", ".join(str(w) for w in self.windows))
        if self.days:
            parts.append("on " + ",".join(_DAYS[d] for d in sorted(self.days)))
        if self.windows or self.days:
            parts.append(f"({self.tz})")
        return " ".join(parts)

    @classmethod
    def parse(cls, raw: Any, where: str) -> ScheduleRule:
        """Build a rule from its dict; ``where`` names it in errors."""
        if not isinstance(raw, Mapping):
            raise ConfigError(
                f"{where} ({raw!r}) must be a dict such as {{'host': 'example.com', 'max': '1d'}}."
            )
        unknown = sorted(set(map(str, raw)) - _KEYS)
        if unknown:
            raise ConfigError(
                f"{where} has unknown keys {', '.join(unknown)}; expected some of "
                f"{', '.join(sorted(_KEYS))}."
            )
        host = raw.get("host")
        if host is not None and (not isinstance(host, str) or not host.strip(". ")):
            raise ConfigError(f"{where}['host'] ({host!r}) must be a host name.")
        pattern = None
        if raw.get("match") is not None:
            try:
                pattern = re.compile(raw["match"])
            except (re.error, TypeError) as exc:
                raise ConfigError(
                    f"{where}['match'] ({raw['match']!r}) is not a regular expression: {exc}."
                ) from None
        if host is None and pattern is None:
            raise ConfigError(f"{where} needs a 'host' or a 'match' (a URL regex) to match.")
        min_secs = parse_duration(raw["min"], f"{where}['min']") if "min" in raw else None
        max_secs = parse_duration(raw["max"], f"{where}['max']") if "max" in raw else None
        if "every" in raw:
            if min_secs is not None or max_secs is not None:
                raise ConfigError(
                    f"{where} gives 'every' with 'min' or 'max'; give one or the other."
                )
            min_secs = max_secs = parse_duration(raw["every"], f"{where}['every']")
        if min_secs is not None and max_secs is not None and min_secs > max_secs:
            raise ConfigError(f"{where}: 'min' ({raw['min']!r}) exceeds 'max' ({raw['max']!r}).")
        window = raw.get("window", ())
        texts = [window] if isinstance(window, str) else window
        if not isinstance(texts, Sequence):
            raise ConfigError(f"{where}['window'] ({window!r}) must be 'HH:MM-HH:MM' or a list.")
        windows = tuple(Window.parse(t, f"{where}['window']") for t in texts)
        days = frozenset(_day(d, f"{where}['days']") for d in raw.get("days", ()))
        tz = raw.get("tz", "local")
        zone = None
        if not isinstance(tz, str):
            raise ConfigError(f"{where}['tz'] ({tz!r}) must be a time zone name or 'local'.")
        if tz != "local":
            try:
                zone = zoneinfo.ZoneInfo(tz)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                raise ConfigError(
                    f"{where}['tz'] ({tz!r}) is not a known time zone; expected an IANA name "
                    "such as 'Europe/Berlin' or 'UTC', or 'local'."
                ) from None
        if min_secs is None and max_secs is None and not windows and not days:
            raise ConfigError(
                f"{where} says nothing about when: give 'min', 'max', 'every', 'window' or 'days'."
            )
        return cls(
            host.strip(". ").lower() if isinstance(host, str) else None,
            pattern, min_secs, max_secs, windows, days, tz, zone,
        )  # fmt: skip


def _day(value: Any, where: str) -> int:
    name = str(value).strip().lower()[:3]
    if name not in _DAYS:
        raise ConfigError(f"{where} ({value!r}) is not a weekday; expected mon, tue, ..., sun.")
    return _DAYS.index(name)


def _human(secs: float) -> str:
    for unit in ("w", "d", "h", "m"):
        size = _UNITS[unit]
        if secs >= size and secs % size == 0:
            return f"{secs / size:g}{unit}"
    return f"{secs:g}s"


@dataclass(frozen=True)
class ScheduleRules:
    """The rules in order; the first that matches a page applies to it."""

    rules: tuple[ScheduleRule, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.rules)

    def rule_for(self, url: str, host: str) -> ScheduleRule | None:
        """The rule of a page, or None."""
        for rule in self.rules:
            if rule.matches(url, host):
                return rule
        return None

    def due(self, url: str, host: str, last_visit: float | None, proposed: float) -> float:
        """The due time the rules allow for a page whose due time would be ``proposed``."""
        rule = self.rule_for(url, host)
        return proposed if rule is None else rule.bound(last_visit, proposed)

    def allows(self, url: str, host: str, last_visit: float | None, now: float) -> bool:
        """Whether a page may be fetched at ``now``, before its due time (an early take
        within the lookahead, a budget's fill): not sooner than ``min`` after its last
        visit, and inside its windows and days."""
        rule = self.rule_for(url, host)
        return rule is None or rule.bound(last_visit, now) <= now

    @classmethod
    def parse(cls, raw: Any, name: str) -> ScheduleRules:
        """Read a list of rule dicts (the setting ``name``); raise ConfigError naming the
        setting and the rule on the first bad one."""
        if raw is None:
            return cls()
        if isinstance(raw, str):  # from the command line (scrapy crawl -s NAME=VALUE): JSON
            try:
                raw = json.loads(raw) if raw.strip() else []
            except ValueError as exc:
                raise ConfigError(
                    f"{name} ({raw!r}) is not a JSON list of rules: {exc}."
                ) from None
        if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, Sequence):
            raise ConfigError(
                f"{name} ({raw!r}) must be a list of rule dicts, e.g. "
                "[{'host': 'example.com', 'max': '1d'}]."
            )
        return cls(tuple(ScheduleRule.parse(r, f"{name}[{i}]") for i, r in enumerate(raw)))


#: No rules: the learned due times stand.
NO_RULES = ScheduleRules()
