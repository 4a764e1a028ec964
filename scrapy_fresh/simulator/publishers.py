r"""Simulated publishers: what each host's sitemap and feed say, honestly or not.

With :attr:`~scrapy_fresh.simulator.providers.ProviderMix.signals` set, every host of the
trace has a publisher, read by the crawler once per crawl cycle (as a sitemap or feed
requested on every cycle is; :doc:`/topics/providers`). :meth:`Publishers.publish`
``(host, now)`` returns what its documents say then, as
:class:`~scrapy_fresh.providers.signals.Signals` for the crawl's own
:class:`~scrapy_fresh.providers.tracker.SignalTracker`. A page publishes according to its
level (Xu et al., seed ``xu-content-provider-friendly-crawler``, Section 3.3):

* ``smart`` pages: their past change times, as sitemap ``<lastmod>`` (kind ``sitemap``);
* ``super`` pages: as smart, and each change announced ``horizon_secs`` ahead with the
  true probability :math:`p` (``precision``): with probability :math:`p` at its real
  time, otherwise at a spurious time (kind ``schedule``, :math:`P_{update} = p`);
* ``normal`` and ``lastmod`` pages publish nothing (``lastmod`` pages show their
  Last-Modified at visits, as without publishers).

A *lying* host (a seeded ``liar_share`` of the hosts that publish anything, drawn
uniformly among hosts: :func:`liar_hosts`) says the same kinds of things but false: its
sitemap stamps every page with the time it is read (``lie_stamp="now"``: a sitemap
generated on request with the generation time as ``<lastmod>``; ``"day"``: today's date
without a time, midnight UTC, which moves once a day), and its super pages announce an
hourly schedule (the next :data:`LIE_ANNOUNCED` full hours, probability
:data:`LIE_PROBABILITY`, as an RSS ``sy:updatePeriod`` of ``hourly`` reads) that has
nothing to do with their changes.

With ``lie="quiet"`` the lying hosts lie about when their pages are *quiet* instead
(the claims that keep a page from being fetched, :doc:`/topics/providers`): every page's
own answer says it will not change for :data:`LIE_QUIET_SECS` (``Cache-Control:
max-age``, a feed's ``<ttl>``: :meth:`Publishers.own`) and their super pages announce a
far-apart schedule (the next instant of a yearly ``sy:updatePeriod``,
:data:`LIE_QUIET_PERIOD_SECS`), while the pages keep changing as the trace says; they
publish no sitemap, so nothing else tells of the changes. Honest hosts then also say when
their super pages are quiet: each answer's lifetime runs to just before the page's next
real change (at most ``horizon_secs``, what they know of their schedule ahead).
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass, field

from scrapy_fresh.providers.signals import AnnouncedUpdate, NotBefore, PastUpdate, Signals
from scrapy_fresh.simulator.providers import Level, ProviderMix, announcements
from scrapy_fresh.simulator.trace import Trace

__all__ = [
    "LIES",
    "LIE_ANNOUNCED",
    "LIE_PERIOD_SECS",
    "LIE_PROBABILITY",
    "LIE_QUIET_PERIOD_SECS",
    "LIE_QUIET_SECS",
    "LIE_STAMPS",
    "Publishers",
    "liar_hosts",
]

#: A lying super host announces an update every this many seconds ...
LIE_PERIOD_SECS = 3600.0
#: ... the next this many of them at each read ...
LIE_ANNOUNCED = 3
#: ... each with this probability (what an RSS syndication schedule is read as).
LIE_PROBABILITY = 0.8
#: What a lying sitemap stamps on every page (see the module): the read time, or the date.
LIE_STAMPS = ("now", "day")
#: What the lying hosts lie about (see the module): their sitemaps and schedules saying
#: "updated" (``sitemap``), or their pages' answers saying "quiet" (``quiet``).
LIES = ("sitemap", "quiet")
#: With ``lie="quiet"``: the lifetime a lying host gives every answer (a week, as
#: ``Cache-Control: max-age=604800`` or ``<ttl>10080</ttl>``) ...
LIE_QUIET_SECS = 7 * 86400.0
#: ... and the period of the schedule its super pages announce (``sy:updatePeriod``
#: yearly).
LIE_QUIET_PERIOD_SECS = 365 * 86400.0
_DAY = 86400.0

_PUBLISHING = (Level.SMART, Level.SUPER)


def liar_hosts(hosts: list[str], share: float, rng: random.Random) -> set[str]:
    """``round(share * len(hosts))`` of ``hosts``, drawn with ``rng``.

    >>> picked = liar_hosts(["a", "b", "c", "d"], 0.5, random.Random(1))
    >>> len(picked), picked == liar_hosts(["d", "c", "b", "a"], 0.5, random.Random(1))
    (2, True)
    """
    count = min(len(hosts), round(share * len(hosts)))
    return set(rng.sample(sorted(hosts), count))


@dataclass
class _Host:
    """One host's publisher: its pages and, if honest, its events in time order."""

    lying: bool
    smart: list[str] = field(default_factory=list)
    super: list[str] = field(default_factory=list)
    #: (change time, url), sorted: what the sitemap's lastmods reveal over time.
    changes: list[tuple[float, str]] = field(default_factory=list)
    #: (time it is announced, announced time, url), sorted.
    announced: list[tuple[float, float, str]] = field(default_factory=list)
    read_changes: int = 0
    read_announced: int = 0
    #: With ``lie="quiet"``, an honest super page's change times: its answers' lifetimes.
    quiet_until: dict[str, tuple[float, ...]] = field(default_factory=dict)


class Publishers:
    """A publisher per host (see the module); ``pages`` are the trace's page names."""

    def __init__(
        self,
        trace: Trace,
        levels: list[Level],
        hosts: list[str],
        mix: ProviderMix,
        seed: int,
        lie_stamp: str = "now",
        lie: str = "sitemap",
    ) -> None:
        if lie_stamp not in LIE_STAMPS:
            raise ValueError(f"lie_stamp ({lie_stamp!r}) must be one of {', '.join(LIE_STAMPS)}.")
        if lie not in LIES:
            raise ValueError(f"lie ({lie!r}) must be one of {', '.join(LIES)}.")
        self.lie_stamp = lie_stamp
        self.lie = lie
        self.host_of: dict[str, str] = {}
        self.mix = mix
        publishing = sorted({h for h, lv in zip(hosts, levels, strict=True) if lv in _PUBLISHING})
        share = mix.liar_share if mix.signals == "lying" else 0.0
        self.liars = liar_hosts(publishing, share, random.Random(f"liars-{seed}"))
        self.hosts: dict[str, _Host] = {h: _Host(h in self.liars) for h in publishing}
        rng = random.Random(f"announce-{seed}")
        for page, level, host, changes in zip(
            trace.pages, levels, hosts, trace.changes, strict=True
        ):
            if level not in _PUBLISHING:
                continue
            entry = self.hosts[host]
            self.host_of[page] = host
            (entry.super if level is Level.SUPER else entry.smart).append(page)
            if entry.lying:
                continue
            entry.changes.extend((t, page) for t in changes)
            if level is Level.SUPER and lie == "quiet":
                entry.quiet_until[page] = changes
            if level is Level.SUPER:
                for t in announcements(changes, mix.precision, trace.start, trace.end, rng):
                    entry.announced.append((max(trace.start, t - mix.horizon_secs), t, page))
        for entry in self.hosts.values():
            entry.changes.sort()
            entry.announced.sort()

    def lying_pages(self) -> int:
        """How many pages the lying hosts publish about."""
        return sum(len(h.smart) + len(h.super) for h in self.hosts.values() if h.lying)

    def publish(self, host: str, now: float) -> Signals:
        """What ``host``'s documents say when read at ``now`` (new since the last read
        for an honest host; a liar restamps everything at every read)."""
        entry = self.hosts.get(host)
        out = Signals()
        if entry is None:
            return out
        if entry.lying and self.lie == "quiet":
            base = 0.0  # a yearly sy:updatePeriod from the epoch: far away, and false
            when = (math.floor((now - base) / LIE_QUIET_PERIOD_SECS) + 1) * LIE_QUIET_PERIOD_SECS
            for page in entry.super:
                out.announced.append(AnnouncedUpdate(page, when, LIE_PROBABILITY, "schedule"))
            return out
        if entry.lying:
            stamp = now if self.lie_stamp == "now" else math.floor(now / _DAY) * _DAY
            for page in (*entry.smart, *entry.super):
                out.past.append(PastUpdate(page, stamp, "sitemap"))
            first = math.floor(now / LIE_PERIOD_SECS) + 1
            for page in entry.super:
                for k in range(LIE_ANNOUNCED):
                    when = (first + k) * LIE_PERIOD_SECS
                    out.announced.append(AnnouncedUpdate(page, when, LIE_PROBABILITY, "schedule"))
            return out
        end = bisect.bisect_right(entry.changes, (now, "\uffff"))
        for t, page in entry.changes[entry.read_changes : end]:
            out.past.append(PastUpdate(page, t, "sitemap"))
        entry.read_changes = max(entry.read_changes, end)
        end = bisect.bisect_right(entry.announced, (now, math.inf, "\uffff"))
        p = self.mix.precision
        for _, when, page in entry.announced[entry.read_announced : end]:
            if when > now:
                out.announced.append(AnnouncedUpdate(page, when, p, "schedule"))
        entry.read_announced = max(entry.read_announced, end)
        return out

    def own(self, page: str, now: float) -> Signals:
        """What ``page``'s own answer to a fetch at ``now`` says of its quiet time (its
        ``Cache-Control: max-age``): with ``lie="quiet"`` only (see the module)."""
        out = Signals()
        if self.lie != "quiet":
            return out
        entry = self.hosts.get(self.host_of.get(page, ""))
        if entry is None:
            return out
        if entry.lying:
            out.not_before.append(NotBefore(page, now + LIE_QUIET_SECS, "cache"))
            return out
        changes = entry.quiet_until.get(page)
        if changes is None:
            return out
        k = bisect.bisect_right(changes, now)
        until = now + self.mix.horizon_secs
        if k < len(changes):
            until = min(until, changes[k] - 1.0)  # fresh until just before the change
        if until > now:
            out.not_before.append(NotBefore(page, until, "cache"))
        return out
