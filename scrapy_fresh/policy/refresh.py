r"""Self-adjusting refresh time and degree of success (Sharma & Dixit).

Source: seed ``sharma-dixit-self-adjusting-refresh-time`` (A.K. Sharma, A. Dixit, "Self
Adjusting Refresh Time Based Architecture for Incremental Web Crawler", IJCSNS 8(12),
2008), Section III.

After every visit the refresh time :math:`t_n` of a page (the paper says "of a site";
we keep one per page and one per site, see :func:`cold_start`) is adjusted by

.. math::

    t_{n+1} = t_n + \Delta t \qquad\text{(eq. 1)}

    \Delta t = \Big\{\big(1 - \tfrac{p_c}{p_g}\big)\,u(p_c - p_g)
               + \big(1 - \tfrac{p_c}{p_l}\big)\,u(p_l - p_c)\Big\}\,t_n
               \qquad\text{(eq. 2)}

with :math:`u(x) = 1` for :math:`x > 0` and 0 otherwise, :math:`p_c` the *degree of
success* (changes seen / visits) and :math:`p_l < p_g` the lower and upper thresholds.
A page that changes on more than a fraction :math:`p_g` of visits is refreshed sooner, one
that changes on fewer than :math:`p_l` later, anything in between keeps its refresh time.

Everything here is pure: no clock, no I/O, standard library only.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy._validate import (
    check_count,
    check_finite,
    check_positive,
    check_probability,
)

__all__ = [
    "DEFAULT_DECAY",
    "DEFAULT_EMA_WEIGHT",
    "DEFAULT_HALF_LIFE_VISITS",
    "DEFAULT_P_G",
    "DEFAULT_P_L",
    "SuccessCounter",
    "adjust_refresh",
    "clamp_refresh",
    "cold_start",
    "decay_for_half_life",
    "decayed_success",
    "decayed_visits",
    "degree_of_success",
    "next_refresh_time",
    "refresh_delta",
    "site_refresh_secs",
    "site_success",
    "unit_step",
]

#: Lower threshold :math:`p_l` of the worked examples (Sharma & Dixit, Section III, cases 1-3).
DEFAULT_P_L = 0.3
#: Upper threshold :math:`p_g` of the worked examples (Sharma & Dixit, Section III, cases 1-3).
DEFAULT_P_G = 0.7
#: A visit's weight in the decayed degree of success halves after this many later visits.
#: Ten is the history length of the paper's own example ("6 of 10 visits -> 0.6").
DEFAULT_HALF_LIFE_VISITS = 10.0
#: Per-visit decay factor of :class:`SuccessCounter`: ``0.5 ** (1 / 10)`` (about 0.933).
DEFAULT_DECAY = 0.5 ** (1.0 / DEFAULT_HALF_LIFE_VISITS)
#: Weight of the newest visit in :func:`decayed_success`: ``1 - DEFAULT_DECAY`` (about 0.067).
DEFAULT_EMA_WEIGHT = 1.0 - DEFAULT_DECAY


def _check_thresholds(p_l: float, p_g: float) -> tuple[float, float]:
    low = check_finite("p_l", p_l)
    high = check_finite("p_g", p_g)
    if not 0.0 < low < 1.0:
        raise ConfigError(f"p_l ({p_l!r}) must be within (0, 1).")
    if not 0.0 < high <= 1.0:
        raise ConfigError(f"p_g ({p_g!r}) must be within (0, 1].")
    if low >= high:
        raise ConfigError(f"p_l ({p_l!r}) must be lower than p_g ({p_g!r}).")
    return low, high


def unit_step(x: float) -> float:
    """The unit step :math:`u(x)` of Sharma & Dixit eq. 2: 1 for ``x > 0``, else 0.

    Seed ``sharma-dixit-self-adjusting-refresh-time``, eq. 2. Note :math:`u(0) = 0`, so
    :math:`p_c = p_g` or :math:`p_c = p_l` leaves the refresh time unchanged.

    >>> unit_step(0.15), unit_step(0.0), unit_step(-0.1)
    (1.0, 0.0, 0.0)
    """
    return 1.0 if check_finite("x", x) > 0 else 0.0


def refresh_delta(
    t_n: float, p_c: float, p_l: float = DEFAULT_P_L, p_g: float = DEFAULT_P_G
) -> float:
    r"""Return :math:`\Delta t` of Sharma & Dixit eq. 2 (negative: refresh sooner).

    Seed ``sharma-dixit-self-adjusting-refresh-time``, eq. 2.

    :param t_n: current refresh time (seconds, > 0).
    :param p_c: degree of success, within [0, 1].
    :param p_l: lower threshold, ``0 < p_l < p_g``.
    :param p_g: upper threshold, ``p_l < p_g <= 1``.

    Case 2 of the paper: :math:`(1 - 0.85/0.7) \cdot 100 = -150/7`.

    >>> round(refresh_delta(100, 0.85, 0.3, 0.7), 4)
    -21.4286
    """
    t = check_positive("t_n", t_n)
    pc = check_probability("p_c", p_c)
    low, high = _check_thresholds(p_l, p_g)
    if pc > high:
        return (1.0 - pc / high) * t
    if pc < low:
        return (1.0 - pc / low) * t
    return 0.0


def next_refresh_time(
    t_n: float, p_c: float, p_l: float = DEFAULT_P_L, p_g: float = DEFAULT_P_G
) -> float:
    r"""Return :math:`t_{n+1} = t_n + \Delta t` (Sharma & Dixit eq. 1 with eq. 2), unclamped.

    Seed ``sharma-dixit-self-adjusting-refresh-time``, eq. 1-2. The result lies in
    :math:`[t_n(2 - 1/p_g),\ 2t_n]`: it at most doubles (:math:`p_c = 0`) and it can reach
    0 or go negative only when :math:`p_g \le 1/2` and :math:`p_c \ge 2p_g`. Use
    :func:`adjust_refresh` to keep the result within configured bounds.

    :param t_n: current refresh time (seconds, > 0).
    :param p_c: degree of success, within [0, 1].
    :param p_l: lower threshold, ``0 < p_l < p_g``.
    :param p_g: upper threshold, ``p_l < p_g <= 1``.

    The paper's three cases (it prints 78.58 and 91.67: it rounds
    :math:`100 - 150/7 = 78.5714...` up, then carries 78.58 into case 3):

    >>> next_refresh_time(100, 0.6, 0.3, 0.7)
    100.0
    >>> round(next_refresh_time(100, 0.85, 0.3, 0.7), 4)
    78.5714
    >>> round(next_refresh_time(78.58, 0.25, 0.3, 0.7), 4)
    91.6767
    """
    return check_positive("t_n", t_n) + refresh_delta(t_n, p_c, p_l, p_g)


def clamp_refresh(t: float, min_secs: float, max_secs: float) -> float:
    """Return ``t`` limited to ``[min_secs, max_secs]``.

    A guard around Sharma & Dixit eq. 1 (seed ``sharma-dixit-self-adjusting-refresh-time``):
    the rule is multiplicative, so without bounds a page that keeps changing is refreshed
    ever faster and one that never changes ever more rarely.

    >>> clamp_refresh(30.0, 60.0, 3600.0), clamp_refresh(7200.0, 60.0, 3600.0)
    (60.0, 3600.0)
    """
    value = check_finite("t", t)
    low = check_positive("min_secs", min_secs)
    high = check_finite("max_secs", max_secs)
    if high < low:
        raise ConfigError(
            f"max_secs ({max_secs!r}) must not be lower than min_secs ({min_secs!r})."
        )
    return min(max(value, low), high)


def adjust_refresh(
    t_n: float,
    p_c: float,
    p_l: float = DEFAULT_P_L,
    p_g: float = DEFAULT_P_G,
    *,
    min_secs: float,
    max_secs: float,
) -> float:
    """Return the next refresh time of Sharma & Dixit eq. 1-2, clamped to ``[min_secs, max_secs]``.

    Seed ``sharma-dixit-self-adjusting-refresh-time``, eq. 1-2, followed by
    :func:`clamp_refresh`. This is what the crawler applies after each visit (the paper's
    SARTCM module; its first visit of a URL only sets the default refresh time).

    >>> round(adjust_refresh(100, 0.85, 0.3, 0.7, min_secs=1, max_secs=1000), 4)
    78.5714
    >>> adjust_refresh(100, 1.0, 0.3, 0.7, min_secs=80, max_secs=1000)
    80.0
    >>> adjust_refresh(800, 0.0, 0.3, 0.7, min_secs=1, max_secs=1000)
    1000.0
    """
    return clamp_refresh(next_refresh_time(t_n, p_c, p_l, p_g), min_secs, max_secs)


def degree_of_success(changes: float, visits: float) -> float:
    """Return the degree of success :math:`p_c` = changes / visits (0.0 before any visit).

    Seed ``sharma-dixit-self-adjusting-refresh-time``, Section III (text under eq. 1): "a
    document being updated 6 times out of its 10 visits" gives :math:`p_c = 0.6`. Counts
    may be fractional (decayed, see :class:`SuccessCounter`).

    >>> degree_of_success(6, 10)
    0.6
    >>> degree_of_success(0, 0)
    0.0
    """
    x = check_count("changes", changes)
    n = check_count("visits", visits)
    if x > n:
        raise ConfigError(f"changes ({changes!r}) must not exceed visits ({visits!r}).")
    return x / n if n > 0 else 0.0


def decayed_visits(visits: int, decay: float) -> float:
    r"""Return the decayed count of ``visits`` visits: :math:`n = (1 - d^{v})/(1 - d)`.

    The weight :class:`SuccessCounter` holds after ``visits`` visits with per-visit decay
    ``decay`` (each visit weighs 1, times ``decay`` per later visit): the number of
    visits the decayed degree of success (seed ``sharma-dixit-self-adjusting-refresh-time``,
    Section III) still rests on. ``visits`` itself when ``decay`` is 1; it tends to
    :math:`1/(1 - d)` (about 14.9 visits with the default half-life of 10) as visits
    accumulate. No checks: ``visits`` is an int 0 or more, ``decay`` within (0, 1].

    >>> decayed_visits(10, 1.0), decayed_visits(1, 0.5), decayed_visits(0, 0.9)
    (10.0, 1.0, 0.0)
    >>> round(decayed_visits(10_000, DEFAULT_DECAY), 2)
    14.93
    """
    if decay >= 1.0:
        return float(visits)
    return -math.expm1(visits * math.log(decay)) / (1.0 - decay)


def decay_for_half_life(visits: float) -> float:
    """Return the per-visit decay factor under which a visit's weight halves after ``visits``.

    ``decay ** visits == 0.5``; infinite memory (the plain ratio of Sharma & Dixit,
    seed ``sharma-dixit-self-adjusting-refresh-time`` Section III) is ``decay = 1``.

    >>> round(decay_for_half_life(10), 4)
    0.933
    """
    return float(0.5 ** (1.0 / check_positive("visits", visits)))


def decayed_success(prev_p_c: float, changed: bool, weight: float = DEFAULT_EMA_WEIGHT) -> float:
    r"""Return the exponentially weighted degree of success after one more visit.

    :math:`p_c \leftarrow (1 - w)\,p_c + w\,[\text{changed}]`: a decayed form of the
    ratio of seed ``sharma-dixit-self-adjusting-refresh-time`` (Section III) so that
    old history fades. It needs only the stored :math:`p_c`, no counts.

    Why decay: eq. 1-2 are multiplicative, so when a page slows down (or speeds up) the
    refresh time should follow within a few visits; with the plain cumulative ratio a
    page with 1000 past visits would take hundreds of visits to cross a threshold. The
    default weight ``1 - 0.5 ** (1/10)`` halves a visit's influence after 10 further visits
    (the history length of the paper's example), an effective memory of about 15 visits:
    long enough that one lucky change does not flip the decision (a single visit moves
    :math:`p_c` by at most 0.067), short enough to follow a real change of pace.

    For the first visits prefer :class:`SuccessCounter`, which is exact for a short
    history while this form starts from whatever ``prev_p_c`` was (e.g. the site's).

    :param prev_p_c: degree of success before this visit, within [0, 1].
    :param changed: whether this visit found a (non-trivial) change.
    :param weight: weight of this visit, within (0, 1]; 1 keeps only the last visit.

    >>> round(decayed_success(0.6, True, 0.1), 4)
    0.64
    >>> round(decayed_success(0.6, False, 0.1), 4)
    0.54
    """
    pc = check_probability("prev_p_c", prev_p_c)
    if not isinstance(changed, bool):
        raise TypeError(f"changed must be a bool, got {type(changed).__name__}: {changed!r}.")
    w = check_finite("weight", weight)
    if not 0.0 < w <= 1.0:
        raise ConfigError(f"weight ({weight!r}) must be within (0, 1].")
    return min(1.0, max(0.0, (1.0 - w) * pc + w * (1.0 if changed else 0.0)))


@dataclass(frozen=True)
class SuccessCounter:
    """Decayed visit and change counts whose ratio is the degree of success :math:`p_c`.

    Each :meth:`record` multiplies both counts by ``decay`` and adds the new visit, so
    :attr:`p_c` = decayed changes / decayed visits. With ``decay=1`` it is exactly the
    ratio of seed ``sharma-dixit-self-adjusting-refresh-time`` (Section III); with the
    default (:data:`DEFAULT_DECAY`, half-life 10 visits) it is exact for the first visit
    and tends to :func:`decayed_success` with weight ``1 - decay`` as history grows.

    >>> c = SuccessCounter()
    >>> for changed in [True] * 6 + [False] * 4:
    ...     c = c.record(changed, decay=1.0)
    >>> c.visits, c.changes, c.p_c
    (10.0, 6.0, 0.6)
    >>> SuccessCounter().record(True).p_c
    1.0
    """

    visits: float = 0.0
    changes: float = 0.0

    def __post_init__(self) -> None:
        visits = check_count("visits", self.visits)
        changes = check_count("changes", self.changes)
        if changes > visits:
            raise ConfigError(
                f"changes ({self.changes!r}) must not exceed visits ({self.visits!r})."
            )
        object.__setattr__(self, "visits", visits)
        object.__setattr__(self, "changes", changes)

    @property
    def p_c(self) -> float:
        """The degree of success: decayed changes / decayed visits (0.0 before any visit)."""
        return min(1.0, self.changes / self.visits) if self.visits > 0 else 0.0

    def record(self, changed: bool, *, decay: float = DEFAULT_DECAY) -> SuccessCounter:
        """Return a new counter that also counts one visit (a change if ``changed``).

        :param decay: factor applied to the old counts, within (0, 1]; 1 never forgets.
        """
        if not isinstance(changed, bool):
            raise TypeError(f"changed must be a bool, got {type(changed).__name__}: {changed!r}.")
        d = check_finite("decay", decay)
        if not 0.0 < d <= 1.0:
            raise ConfigError(f"decay ({decay!r}) must be within (0, 1].")
        visits = self.visits * d + 1.0
        # made from checked counts, in range (0 <= changes <= visits): no checks again
        return SuccessCounter.unchecked(
            visits, min(visits, self.changes * d + (1.0 if changed else 0.0))
        )

    @classmethod
    def unchecked(cls, visits: float, changes: float) -> SuccessCounter:
        """A counter of float counts known to be in range (``0 <= changes <= visits``,
        finite), built without :meth:`__post_init__`'s checks: for counts made by the
        policy code itself, once per visit."""
        counter: SuccessCounter = object.__new__(cls)
        object.__setattr__(counter, "visits", visits)
        object.__setattr__(counter, "changes", changes)
        return counter


def cold_start(
    site_refresh_secs: float | None,
    site_p_c: float | None,
    default_refresh_secs: float,
    *,
    default_p_c: float = 0.0,
) -> tuple[float, float]:
    """Return ``(refresh_secs, p_c)`` a never-visited URL starts from.

    A new URL inherits its site's refresh time and degree of success: Sharma & Dixit
    adjust the refresh time "for any site" (seed ``sharma-dixit-self-adjusting-refresh-time``,
    eq. 1 and Section III) and their Fields Initializer gives a new URL
    ``AVERAGE_REFRESH_TIME``. The default is used only when the site has no history
    (``site_refresh_secs`` is ``None``); a site with a refresh time but no ``p_c`` yet
    gets ``default_p_c``.

    >>> cold_start(3600.0, 0.8, 86400.0)
    (3600.0, 0.8)
    >>> cold_start(None, None, 86400.0)
    (86400.0, 0.0)
    """
    default_secs = check_positive("default_refresh_secs", default_refresh_secs)
    default_pc = check_probability("default_p_c", default_p_c)
    if site_refresh_secs is None:
        return default_secs, default_pc
    secs = check_positive("site_refresh_secs", site_refresh_secs)
    pc = default_pc if site_p_c is None else check_probability("site_p_c", site_p_c)
    return secs, pc


def site_success(pages: Iterable[tuple[float, float]]) -> float:
    """Return a site's degree of success from its pages' ``(visits, changes)`` pairs.

    The pooled ratio sum(changes) / sum(visits): every visit to the site counts once, as in
    seed ``sharma-dixit-self-adjusting-refresh-time`` (Section III, "p_c is assigned ... to
    that site"). A page visited 100 times weighs more than one visited twice, unlike a mean
    of page ratios. 0.0 for a site without visits.

    >>> site_success([(10, 6), (10, 2)])
    0.4
    >>> site_success([])
    0.0
    """
    total_visits = 0.0
    total_changes = 0.0
    for i, (visits, changes) in enumerate(pages):
        n = check_count(f"pages[{i}] visits", visits)
        x = check_count(f"pages[{i}] changes", changes)
        if x > n:
            raise ConfigError(
                f"pages[{i}] changes ({changes!r}) must not exceed its visits ({visits!r})."
            )
        total_visits += n
        total_changes += x
    return degree_of_success(total_changes, total_visits)


def site_refresh_secs(page_refresh_secs: Iterable[float]) -> float | None:
    """Return a site's refresh time from its pages' refresh times: the median, or ``None``.

    An aid to :func:`cold_start` (seed ``sharma-dixit-self-adjusting-refresh-time``,
    Section III, refresh time per site). The median is robust to a few pages pinned at
    the minimum or maximum refresh time; ``None`` means the site has no history.

    >>> site_refresh_secs([60.0, 3600.0, 7200.0])
    3600.0
    >>> site_refresh_secs([]) is None
    True
    """
    values = [
        check_positive(f"page_refresh_secs[{i}]", v) for i, v in enumerate(page_refresh_secs)
    ]
    if not values:
        return None
    return float(statistics.median(values))
