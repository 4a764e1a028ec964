"""Typed update signals read from what content providers publish.

Each parser of :mod:`scrapy_fresh.providers` returns a :class:`Signals` bundle: what it
learnt about which URL, by kind, plus a :class:`ParseReport` that counts what it read,
kept and skipped (and why). The kinds follow the provider levels of Xu et al. (seed
``xu-content-provider-friendly-crawler``, Section 3.3, Table 1):

* :class:`PastUpdate` -- a past update time (a smart provider's history; eq. 4);
* :class:`AnnouncedUpdate` -- a future update time with a probability (a super
  provider's schedule; eq. 6-7 and the slot rule of Section 4.1);
* :class:`QuietWindow` -- hours and days when the provider says nothing changes
  (RSS ``<skipHours>``/``<skipDays>``);
* :class:`NotBefore` -- no need to look before this time (``<ttl>``, Cache-Control
  ``max-age``, ``Expires``).

``signal`` names the source (see :data:`SIGNAL_KINDS`); trust is learnt per host and
signal kind (:mod:`scrapy_fresh.policy.trust`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "SIGNAL_KINDS",
    "AnnouncedUpdate",
    "NotBefore",
    "ParseReport",
    "PastUpdate",
    "QuietWindow",
    "Signals",
]

#: Signal kinds, the unit trust is learnt for:
#: ``http-lastmod`` (Last-Modified), ``sitemap`` (``<lastmod>``), ``changefreq``
#: (sitemap ``<changefreq>``), ``feed`` (RSS/Atom dates), ``schedule`` (RSS syndication
#: module), ``cache`` (``<ttl>``, ``max-age``, ``Expires``, ``<skipHours>``/``<skipDays>``),
#: ``push`` (notifications pushed to us), ``spider`` (``meta["fresh_updates"]`` and
#: ``meta["fresh_schedule"]``).
SIGNAL_KINDS = (
    "http-lastmod",
    "sitemap",
    "changefreq",
    "feed",
    "schedule",
    "cache",
    "push",
    "spider",
)


@dataclass(frozen=True)
class PastUpdate:
    """``url`` was updated at ``when`` (Unix seconds), says ``signal``."""

    url: str
    when: float
    signal: str


@dataclass(frozen=True)
class AnnouncedUpdate:
    """``url`` is expected to be updated at ``when`` with ``probability``, says ``signal``."""

    url: str
    when: float
    probability: float
    signal: str


@dataclass(frozen=True)
class QuietWindow:
    """``url`` does not change in these UTC ``hours`` (0-23) and ``days`` (0 = Monday).

    >>> w = QuietWindow("u", hours=frozenset({0, 1}), days=frozenset(), signal="cache")
    >>> w.end_of_quiet(3600.0 * 24 * 3 + 1800)  # 1970-01-04 00:30 UTC, in hour 0
    266400.0
    >>> w.end_of_quiet(3600.0 * 5)  # 05:00 is not quiet
    18000.0
    """

    url: str
    hours: frozenset[int]
    days: frozenset[int]
    signal: str

    def is_quiet(self, t: float) -> bool:
        """Whether ``t`` (Unix seconds) falls into a quiet hour or day."""
        hour = int(t // 3600) % 24
        day = (int(t // 86400) + 3) % 7  # 1970-01-01 was a Thursday (3)
        return hour in self.hours or day in self.days

    def end_of_quiet(self, t: float) -> float:
        """The first instant at or after ``t`` outside every quiet hour and day."""
        if len(self.days) >= 7 or (len(self.hours) >= 24):
            return t  # a window that never ends says nothing: ignore it
        at = t
        for _ in range(24 * 8):
            if not self.is_quiet(at):
                return at
            at = (at // 3600 + 1) * 3600.0
        return t


@dataclass(frozen=True)
class NotBefore:
    """No need to fetch ``url`` again before ``when``, says ``signal``."""

    url: str
    when: float
    signal: str


@dataclass
class ParseReport:
    """What one parse read and why it skipped what it skipped.

    ``outcome`` is ``"ok"``, ``"truncated"`` (a limit on entries was reached; the
    first entries are kept), ``"malformed"`` (the XML broke off; what came before is
    kept), ``"too_large"`` (a byte limit was hit: nothing is kept) or ``"not_xml"``.
    ``skipped`` counts skipped values by reason (``bad_date``, ``future_date``,
    ``bad_number``, ``bad_url``, ``unresolved_entity``, ``over_limit``, ...).
    """

    kind: str = ""
    outcome: str = "ok"
    entries: int = 0
    #: A dict, not a ``Counter``: one is made for every response, and an empty
    #: ``Counter`` runs Python code to be made, a dict none.
    skipped: dict[str, int] = field(default_factory=dict)
    error: str = ""
    compressed_bytes: int = 0
    decompressed_bytes: int = 0

    def skip(self, reason: str, count: int = 1) -> None:
        """Count ``count`` values skipped for ``reason``."""
        self.skipped[reason] = self.skipped.get(reason, 0) + count

    def fail(self, outcome: str, error: str) -> None:
        """Record that the document as a whole hit ``outcome`` (see the class docs)."""
        self.outcome = outcome
        self.error = error


@dataclass
class Signals:
    """Everything one document said, by kind, with its :class:`ParseReport`."""

    past: list[PastUpdate] = field(default_factory=list)
    announced: list[AnnouncedUpdate] = field(default_factory=list)
    quiet: list[QuietWindow] = field(default_factory=list)
    not_before: list[NotBefore] = field(default_factory=list)
    #: Child sitemaps of a sitemap index (URLs to fetch for more signals).
    sitemaps: list[str] = field(default_factory=list)
    report: ParseReport = field(default_factory=ParseReport)

    def __len__(self) -> int:
        return len(self.past) + len(self.announced) + len(self.quiet) + len(self.not_before)

    def extend(self, other: Signals) -> None:
        """Add ``other``'s signals (its report is not merged)."""
        self.past.extend(other.past)
        self.announced.extend(other.announced)
        self.quiet.extend(other.quiet)
        self.not_before.extend(other.not_before)
        self.sitemaps.extend(other.sitemaps)

    def urls(self) -> set[str]:
        """Every URL some signal is about."""
        found = {s.url for s in self.past}
        found.update(s.url for s in self.announced)
        found.update(s.url for s in self.quiet)
        found.update(s.url for s in self.not_before)
        return found
