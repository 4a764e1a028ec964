r"""Content-provider populations: what each page tells the crawler about its changes.

The levels of Xu et al. (seed ``xu-content-provider-friendly-crawler``, Section 3.3,
Table 1), mapped onto :class:`~scrapy_fresh.store.base.Provider`:

* ``normal``: nothing; a visit only shows changed or not.
* ``smart``: each change is signalled when it happens (a push: WebSub, IndexNow), so the
  update history is known. The signal records the change time in the page's
  ``past_updates`` and makes the page due at once (:func:`signal_change`).
* ``lastmod``: a weaker smart provider: the time of the latest change is learned only at a
  visit (``Last-Modified``, sitemap ``<lastmod>``), as the crawl's runtime records it.
* ``super``: as smart, and every change is also announced ``horizon`` seconds ahead with
  a precision :math:`p`: with probability :math:`p` the announced time is the real one,
  otherwise it is a spurious time drawn uniformly over the replay (and the real change
  goes unannounced). Each announcement carries :math:`P_{update} = p`
  (:func:`announce`).

What a signal does to a record is the crawl's own code
(:mod:`scrapy_fresh.providers.apply`, shared with the provider middleware and
``scrapy-fresh notify``); the simulator only decides when each signal arrives.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass
from typing import Any

from scrapy_fresh.providers.apply import (
    add_announced,
    add_past,
    consume_announced,
    signal_due,
)
from scrapy_fresh.store.base import PageState, Provider

__all__ = [
    "SIGNAL_MODES",
    "Level",
    "ProviderMix",
    "announce",
    "announcements",
    "forget_served",
    "signal_change",
]


#: How providers speak (:attr:`ProviderMix.signals`): ``off`` (the pushes and
#: announcements above, levels fixed), ``honest`` or ``lying`` (a publisher per host whose
#: documents the crawl reads each cycle, through the crawl's
#: :class:`~scrapy_fresh.providers.tracker.SignalTracker`; see
#: :mod:`scrapy_fresh.simulator.publishers`).
SIGNAL_MODES = ("off", "honest", "lying")


class Level(str, enum.Enum):
    """A simulated provider's level."""

    NORMAL = "normal"
    SMART = "smart"
    LASTMOD = "lastmod"
    SUPER = "super"

    @property
    def provider(self) -> Provider:
        """The record's provider level (``lastmod`` pages are smart to the crawler)."""
        if self is Level.NORMAL:
            return Provider.NORMAL
        if self is Level.SUPER:
            return Provider.SUPER
        return Provider.SMART


@dataclass(frozen=True)
class ProviderMix:
    """Shares of the page population per level; the rest are normal.

    :param super_share: share of super providers.
    :param smart_share: share of smart providers (pushed signals).
    :param lastmod_share: share of smart providers known only through Last-Modified.
    :param precision: probability that a super provider's announced time is real.
    :param horizon_secs: how long before a change a super provider announces it.
    :param signals: one of :data:`SIGNAL_MODES`.
    :param liar_share: with ``signals="lying"``, the share of publishing hosts that lie.
    :param autodetect: with publishers, pages start normal and get the level their
        signals support (:setting:`FRESH_PROVIDER_AUTODETECT`); off, each page's level is
        fixed by hand (as ``meta["fresh_provider"]``).
    :param trust: with publishers, judge claims at visits and demote hosts
        (:setting:`FRESH_TRUST`).
    """

    super_share: float = 0.0
    smart_share: float = 0.0
    lastmod_share: float = 0.0
    precision: float = 1.0
    horizon_secs: float = 86400.0
    signals: str = "off"
    liar_share: float = 0.3
    autodetect: bool = False
    trust: bool = True

    def __post_init__(self) -> None:
        if self.signals not in SIGNAL_MODES:
            raise ValueError(
                f"signals ({self.signals!r}) must be one of {', '.join(SIGNAL_MODES)}."
            )
        if self.signals == "off" and (self.autodetect or not self.trust):
            raise ValueError(
                "autodetect and trust need publishers: set signals to 'honest' or 'lying'."
            )
        for name in ("super_share", "smart_share", "lastmod_share", "precision", "liar_share"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} ({value!r}) must be within [0, 1].")
        total = self.super_share + self.smart_share + self.lastmod_share
        if total > 1.0 + 1e-9:
            raise ValueError(
                f"super_share + smart_share + lastmod_share ({total!r}) must not exceed 1."
            )
        if self.horizon_secs < 0:
            raise ValueError(f"horizon_secs ({self.horizon_secs!r}) must be 0 or more.")

    def assign(self, n: int, rng: random.Random) -> list[Level]:
        """Levels for ``n`` pages: counts rounded from the shares, placed at random."""
        counts = [
            (Level.SUPER, round(self.super_share * n)),
            (Level.SMART, round(self.smart_share * n)),
            (Level.LASTMOD, round(self.lastmod_share * n)),
        ]
        levels: list[Level] = []
        for level, count in counts:
            levels += [level] * min(count, n - len(levels))
        levels += [Level.NORMAL] * (n - len(levels))
        rng.shuffle(levels)
        return levels

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "super": self.super_share,
            "smart": self.smart_share,
            "lastmod": self.lastmod_share,
            "normal": max(0.0, 1.0 - self.super_share - self.smart_share - self.lastmod_share),
            "precision": self.precision,
        }
        if self.signals != "off":
            out["signals"] = self.signals
            out["liar_share"] = self.liar_share if self.signals == "lying" else 0.0
            out["autodetect"] = self.autodetect
            out["trust"] = self.trust
        return out


def announcements(
    changes: tuple[float, ...], precision: float, start: float, end: float, rng: random.Random
) -> list[float]:
    """The announced change times of one super page, sorted.

    Each real change is announced once: at its real time with probability ``precision``,
    else at a spurious time uniform over ``[start, end]``.
    """
    out = [t if rng.random() < precision else rng.uniform(start, end) for t in changes]
    out.sort()
    return out


def signal_change(state: PageState, when: float, now: float) -> None:
    """A provider signals at ``now`` a change made at ``when``: remember it, and make the
    page due now if the change is later than its last crawl
    (:func:`scrapy_fresh.providers.apply.add_past` and ``signal_due``, as the crawl's
    notifications do)."""
    add_past(state, (when,))
    state.next_due = signal_due(state, now, use_future=False)


def announce(state: PageState, when: float, probability: float, now: float) -> None:
    """A provider announces at ``now`` a change at ``when`` (real with ``probability``):
    remember it and make the page due at the first slot after that time (Xu et al.
    Section 4.1; :func:`scrapy_fresh.providers.apply.add_announced` and ``signal_due``)."""
    add_announced(state, ((when, probability),), now)
    state.next_due = signal_due(state, now, use_past=False)


def forget_served(state: PageState, now: float) -> None:
    """After a visit at ``now``: drop the announced updates it covered; the next
    announced one keeps the page due just after its time
    (:func:`scrapy_fresh.providers.apply.consume_announced` and ``signal_due``)."""
    consume_announced(state, now)
    if state.future_updates:
        state.next_due = signal_due(state, now, use_past=False)
