"""RSS 2.0, RSS 1.0 (RDF) and Atom feeds.

Signals (see ../shared/DESIGN.md, provider table; Xu et al. levels):

* smart (past updates, signal ``feed``): each item's ``pubDate`` (or ``dc:date``) and
  each Atom entry's ``updated`` (or ``published``) for the item's link; the channel's
  ``lastBuildDate``/``pubDate``, Atom's feed ``updated`` and the newest item date for
  the feed itself.
* super (signal ``schedule``): the RSS syndication module, ``sy:updatePeriod``
  (hourly, daily, weekly, monthly, yearly; default daily), ``sy:updateFrequency``
  (updates per period; default 1) and ``sy:updateBase`` (default 1970-01-01T00:00Z)
  announce updates at ``base + k * period / frequency``; the next
  :data:`SCHEDULE_ANNOUNCEMENTS` of them after ``now`` become
  :class:`~scrapy_fresh.providers.signals.AnnouncedUpdate` of the feed, with
  probability :data:`SCHEDULE_PROBABILITY`.
* windows (signal ``cache``): ``<skipHours>``/``<skipDays>`` become a
  :class:`~scrapy_fresh.providers.signals.QuietWindow`; ``<ttl>`` (minutes) a
  :class:`~scrapy_fresh.providers.signals.NotBefore` of the feed.
"""

from __future__ import annotations

from lxml import etree

from scrapy_fresh.providers._common import check_date, clean_url, count_entry
from scrapy_fresh.providers.safexml import Limits, child_text, local_name, own_text
from scrapy_fresh.providers.signals import (
    AnnouncedUpdate,
    NotBefore,
    PastUpdate,
    QuietWindow,
    Signals,
)
from scrapy_fresh.providers.sitemap import _forget, next_period_instant

__all__ = [
    "MAX_TTL_MINUTES",
    "SCHEDULE_ANNOUNCEMENTS",
    "SCHEDULE_PROBABILITY",
    "SY_PERIOD_SECS",
    "FeedReader",
]

#: Seconds of each ``sy:updatePeriod``.
SY_PERIOD_SECS = {
    "hourly": 3600.0,
    "daily": 86400.0,
    "weekly": 7 * 86400.0,
    "monthly": 30 * 86400.0,
    "yearly": 365 * 86400.0,
}
#: How many upcoming instants of a syndication schedule are announced.
SCHEDULE_ANNOUNCEMENTS = 3
#: Probability of each announced instant: a declared schedule, but "expected", not sure.
SCHEDULE_PROBABILITY = 0.8
#: ``<ttl>`` values above this (one year, in minutes) are skipped as ``bad_number``.
MAX_TTL_MINUTES = 365 * 24 * 60
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_CHANNEL = ("channel", "feed")


def _integer(text: str | None, low: int, high: int) -> int | None:
    if text is None:
        return None
    text = text.strip()
    if not text.isdigit() or len(text) > 12:
        return None
    value = int(text)
    return value if low <= value <= high else None


class FeedReader:
    """Turn the elements of an RSS or Atom feed into signals."""

    def __init__(self, kind: str, url: str, now: float, limits: Limits, signals: Signals) -> None:
        self.kind = kind  # "rss", "rdf" or "atom"
        self.url = url
        self.now = now
        self.limits = limits
        self.signals = signals
        self.feed_dates: list[float] = []
        self.hours: set[int] = set()
        self.days: set[int] = set()
        self.sy: dict[str, str] = {}

    def handle(self, event: str, element: etree._Element) -> None:
        if event != "end":
            return
        name = local_name(element.tag)
        parent = element.getparent()
        parent_name = local_name(parent.tag) if parent is not None else ""
        if name in ("item", "entry"):
            self._entry(element)
            return
        if parent_name not in _CHANNEL:
            return
        report = self.signals.report
        if name in ("lastBuildDate", "pubDate", "updated"):
            text = own_text(element, report)
            when = check_date(text, self.now, report, rfc822=name != "updated")
            if when is not None:
                self.feed_dates.append(when)
        elif name == "ttl":
            minutes = _integer(own_text(element, report), 0, MAX_TTL_MINUTES)
            if minutes is None:
                report.skip("bad_number")
            elif minutes:
                self.signals.not_before.append(
                    NotBefore(self.url, self.now + minutes * 60.0, "cache")
                )
        elif name == "skipHours":
            for child in element:
                if local_name(child.tag) != "hour":
                    continue
                hour = _integer(own_text(child, report), 0, 24)
                if hour is None:
                    report.skip("bad_number")
                else:
                    self.hours.add(hour % 24)
        elif name == "skipDays":
            for child in element:
                if local_name(child.tag) != "day":
                    continue
                day = (own_text(child, report) or "").strip().lower()
                if day in _DAYS:
                    self.days.add(_DAYS.index(day))
                else:
                    report.skip("bad_day")
        elif name in ("updatePeriod", "updateFrequency", "updateBase"):
            text = own_text(element, report)
            if text is not None:
                self.sy[name] = text

    def _entry(self, element: etree._Element) -> None:
        report = self.signals.report
        try:
            if not count_entry(report, self.limits.max_entries):
                return
            link = self._link(element)
            if self.kind == "atom":
                raw = child_text(element, "updated", report) or child_text(
                    element, "published", report
                )
                when = check_date(raw, self.now, report)
            else:
                raw = child_text(element, "pubDate", report)
                when = check_date(raw, self.now, report, rfc822=True) if raw else None
                if raw is None:
                    raw = child_text(element, "date", report) or child_text(
                        element, "updated", report
                    )
                    when = check_date(raw, self.now, report)
            if raw is None:
                report.skip("no_date")
            if when is None:
                return
            self.feed_dates.append(when)
            url = clean_url(link, self.url, report)
            if url is not None:
                self.signals.past.append(PastUpdate(url, when, "feed"))
        finally:
            _forget(element)

    def _link(self, element: etree._Element) -> str | None:
        report = self.signals.report
        if self.kind == "atom":
            for child in element:
                if local_name(child.tag) == "link" and child.get("rel", "alternate") in (
                    "alternate",
                    "",
                ):
                    href = child.get("href")
                    return href.strip() if href else None
            return None
        link = child_text(element, "link", report)
        if link:
            return link
        for child in element:
            if local_name(child.tag) == "guid" and child.get("isPermaLink", "true") != "false":
                return (child.text or "").strip() or None
        return None

    def finish(self) -> None:
        """Emit what needs the whole channel: the feed's own date, windows, schedule."""
        signals = self.signals
        if signals.report.outcome == "too_large":
            return
        if self.feed_dates:
            signals.past.append(PastUpdate(self.url, max(self.feed_dates), "feed"))
        window = None
        if self.hours or self.days:
            window = QuietWindow(self.url, frozenset(self.hours), frozenset(self.days), "cache")
            signals.quiet.append(window)
        if self.sy:
            self._schedule(window)

    def _schedule(self, window: QuietWindow | None) -> None:
        report = self.signals.report
        period_name = self.sy.get("updatePeriod", "daily").strip().lower()
        period = SY_PERIOD_SECS.get(period_name)
        if period is None:
            report.skip("bad_update_period")
            return
        frequency = 1
        if "updateFrequency" in self.sy:
            parsed = _integer(self.sy["updateFrequency"], 1, 1_000_000)
            if parsed is None:
                report.skip("bad_number")  # the schedule still holds with the default
            else:
                frequency = parsed
        base = 0.0
        if "updateBase" in self.sy:
            parsed_base = check_date(self.sy["updateBase"], float("inf"), report)
            if parsed_base is not None:
                base = parsed_base
        step = period / frequency
        when = next_period_instant(base, step, self.now)
        for _ in range(SCHEDULE_ANNOUNCEMENTS):
            if window is not None and window.is_quiet(when):
                report.skip("announced_in_quiet_window")
            else:
                self.signals.announced.append(
                    AnnouncedUpdate(self.url, when, SCHEDULE_PROBABILITY, "schedule")
                )
            when += step
