r"""Provider-aware priority scores and crawl-slot assignment (Xu et al.).

Source: seed ``xu-content-provider-friendly-crawler`` (J. Xu, Q. Li, H. Qu,
A. Labrinidis, "Towards a Content-Provider-Friendly Web Page Crawler", Section 4).

Content providers cooperate at three levels (Section 3.3, Table 1):

* ``"normal"``: nothing is known of updates; score :math:`S_{past}^{unknown}` (eq. 5).
* ``"smart"``: past update times are known; score :math:`S_{past}^{known}` (eq. 4).
* ``"super"``: future update times are announced with a probability
  :math:`P_{update}`; each announced update gets :math:`S_{unified}` (eq. 7), which
  mixes :math:`S_{past}^{known}` with :math:`S_{future}` (eq. 6).

Table 1 of the paper swaps the equation numbers of the normal and smart rows (it says
"S_past^unknown (Eq. 4)" and "S_past^known (Eq. 5)"); the text of Sections 4.2 and the
sentence under Table 1 (normal -> eq. 5, smart -> eq. 4) are right, and this module follows
the text.

**Normalisation.** Section 4.2 normalises every score "by the total number of accesses".
We read that as the total on the repository R, the denominator of :math:`f_{access}`
(eq. 2): dividing by a page's own accesses would cancel the popularity weighting the paper
says it adds. The past scores take ``total_accesses`` (accesses on R; ``None`` leaves the
raw score); eq. 6 already has its denominator, which the paper writes with the same
:math:`C_d` as the numerator: pass ``window_total`` (accesses on R over the same cycles)
for the repository-share reading, or leave it out for the literal one.

**Units.** The past scores are time x accesses / accesses, i.e. durations, while
:math:`S_{future}` has no unit, so :math:`\beta` in eq. 7 balances them only for a chosen
time unit; the paper does not say which. ``time_unit`` divides every duration (pass the
crawl-cycle length to measure in cycles).

Defaults (Table 2): :math:`\alpha = 0.8`, :math:`\beta = 0.8`, :math:`s = 5`.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Container, Iterable, Sequence

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy._validate import (
    check_count,
    check_finite,
    check_non_negative,
    check_positive,
    check_probability,
    check_times,
)

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_BETA",
    "DEFAULT_C",
    "DEFAULT_S",
    "PROVIDER_LEVELS",
    "assign_slot",
    "assign_slots",
    "future_score",
    "past_known_score",
    "past_unknown_score",
    "score_for_provider",
    "spread_accesses",
    "stale_accesses",
    "unified_score",
]

#: Aging weight :math:`\alpha` of the last cycle in eq. 6 (Table 2).
DEFAULT_ALPHA = 0.8
#: Weight :math:`\beta` of the past score in eq. 7 (Table 2).
DEFAULT_BETA = 0.8
#: Number :math:`s` of past crawl cycles of access history in eq. 6 (Table 2, Section 4.2).
DEFAULT_S = 5
#: Constant :math:`c` of eq. 5. The paper only calls it "a small constant"; with 1 a page
#: nobody accessed still gains priority as time passes, as if one access had been stale.
DEFAULT_C = 1.0
#: Provider levels of Section 3.3, as :class:`scrapy_fresh.store.base.Provider` values.
PROVIDER_LEVELS = ("normal", "smart", "super")


def _normaliser(total_accesses: float | None, used: float) -> float:
    if total_accesses is None:
        return 1.0
    total = check_count("total_accesses", total_accesses)
    if total < used:
        raise ConfigError(
            f"total_accesses ({total_accesses!r}) must not be lower than this page's "
            f"accesses ({used!r}): it counts every access on the repository."
        )
    # A repository without any access yet: nothing to normalise by.
    return max(total, 1.0)


def _check_since(last_crawl: float, now: float) -> tuple[float, float]:
    t_lc = check_finite("last_crawl", last_crawl)
    t_now = check_finite("now", now)
    if t_now < t_lc:
        raise ConfigError(f"now ({now!r}) must not be earlier than last_crawl ({last_crawl!r}).")
    return t_lc, t_now


def stale_accesses(access_times: Iterable[float], first_stale: float, t: float) -> int:
    """Return :math:`N_t`: the accesses that hit the stale copy, those in ``[first_stale, t]``.

    Seed ``xu-content-provider-friendly-crawler``, Section 4.2 (definition under eq. 4).
    The copy is stale from the first missed update on; an access at the very instant of an
    update is counted as stale (the update happens first).

    >>> stale_accesses([1.0, 5.0, 6.0, 9.0], first_stale=5.0, t=8.0)
    2
    """
    start = check_finite("first_stale", first_stale)
    end = check_finite("t", t)
    return sum(1 for a in check_times("access_times", access_times) if start <= a <= end)


def spread_accesses(count: int, start: float, end: float) -> list[float]:
    """Return ``count`` access times spread evenly over ``(start, end]`` (interval midpoints).

    For :func:`past_known_score` when only an access *count* is stored (seed
    ``xu-content-provider-friendly-crawler`` eq. 4 needs times): it assumes the page's
    accesses since the last crawl arrived at a steady rate.

    >>> spread_accesses(4, 0.0, 8.0)
    [1.0, 3.0, 5.0, 7.0]
    """
    if isinstance(count, bool) or not isinstance(count, int):
        raise TypeError(f"count must be an int, got {type(count).__name__}: {count!r}.")
    if count < 0:
        raise ConfigError(f"count ({count!r}) must be 0 or higher.")
    a = check_finite("start", start)
    b = check_finite("end", end)
    if b < a:
        raise ConfigError(f"end ({end!r}) must not be earlier than start ({start!r}).")
    step = (b - a) / count if count else 0.0
    return [a + (k + 0.5) * step for k in range(count)]


def past_known_score(
    last_crawl: float,
    update_times: Iterable[float],
    access_times: Iterable[float],
    now: float,
    *,
    total_accesses: float | None = None,
    time_unit: float = 1.0,
) -> float:
    r"""Return :math:`S_{past}^{known}`: stale-access-weighted stale durations (Xu et al. eq. 4).

    Seed ``xu-content-provider-friendly-crawler``, eq. 4, normalised as in Section 4.2:

    .. math::

        S_{past}^{known} = \sum_{m=0}^{U} (t_m - t_{m-1}) \times N_{t_m}

    :math:`N_t` is the number of accesses that hit the stale copy between the last crawl
    and :math:`t` (:func:`stale_accesses`). The paper has :math:`U + 1` terms for
    :math:`U` missed updates; we read the points of the sum as the last crawl
    (:math:`t_{-1}`), the missed updates :math:`t_0 < \dots < t_{U-1}` and
    :math:`t_U = t_{now}`. The first interval ends at the first missed update, before
    which the copy was fresh, so it adds nothing; the last one runs to now, as the
    triangle of eq. 5 does. Without it a page missed once would score 0 for ever.

    :param last_crawl: :math:`t_{LC}`, time of the last crawl.
    :param update_times: known update times; those in ``(last_crawl, now]`` are missed.
    :param access_times: times of the page's accesses (any order; others are ignored).
    :param now: :math:`t_{now}`.
    :param total_accesses: accesses on the whole repository, the normaliser (``None``:
        raw score).
    :param time_unit: durations are divided by it (e.g. the crawl-cycle length).

    Updates at 10 and 20 after a crawl at 0, accesses at 12, 15, 25, now 30: the stale
    copy was hit twice by 20 and three times by 30, so :math:`10 \times 2 + 10 \times 3`:

    >>> past_known_score(0, [10, 20], [5, 12, 15, 25], 30)
    50.0
    >>> past_known_score(0, [10, 20], [5, 12, 15, 25], 30, total_accesses=100)
    0.5
    >>> past_known_score(0, [], [5, 12], 30)
    0.0
    """
    t_lc, t_now = _check_since(last_crawl, now)
    unit = check_positive("time_unit", time_unit)
    missed = [t for t in check_times("update_times", update_times) if t_lc < t <= t_now]
    accesses = check_times("access_times", access_times)
    if not missed:
        return 0.0
    first = missed[0]
    stale = [a for a in accesses if first <= a <= t_now]
    points = [*missed, t_now]
    score = 0.0
    for prev, point in itertools.pairwise(points):
        n_t = bisect.bisect_right(stale, point)
        score += (point - prev) / unit * n_t
    return score / _normaliser(total_accesses, float(len(stale)))


def past_unknown_score(
    last_crawl: float,
    accesses_since_crawl: float,
    now: float,
    *,
    c: float = DEFAULT_C,
    total_accesses: float | None = None,
    time_unit: float = 1.0,
) -> float:
    r"""Return :math:`S_{past}^{unknown}`, the triangle of Xu et al. eq. 5.

    Seed ``xu-content-provider-friendly-crawler``, eq. 5, normalised as in Section 4.2:

    .. math::

        S_{past}^{unknown} = \tfrac{1}{2} \times (t_{now} - t_{LC}) \times (N_{t_{now}} + c)

    With no update history every access since the last crawl is taken as stale, so
    :math:`N_{t_{now}}` is the page's access count since :math:`t_{LC}`.

    :param last_crawl: :math:`t_{LC}`, time of the last crawl.
    :param accesses_since_crawl: :math:`N_{t_{now}}`.
    :param now: :math:`t_{now}`.
    :param c: the small constant of eq. 5 (:data:`DEFAULT_C`).
    :param total_accesses: accesses on the whole repository (``None``: raw score).
    :param time_unit: durations are divided by it.

    >>> past_unknown_score(0, 3, 10)
    20.0
    >>> past_unknown_score(0, 3, 10, c=0, total_accesses=30)
    0.5
    >>> past_unknown_score(5, 0, 5)
    0.0
    """
    t_lc, t_now = _check_since(last_crawl, now)
    n = check_count("accesses_since_crawl", accesses_since_crawl)
    const = check_non_negative("c", c)
    unit = check_positive("time_unit", time_unit)
    raw = 0.5 * (t_now - t_lc) / unit * (n + const)
    return raw / _normaliser(total_accesses, n)


def future_score(
    p_update: float,
    access_counts: Sequence[float],
    *,
    window_total: float | None = None,
    alpha: float = DEFAULT_ALPHA,
    s: int = DEFAULT_S,
) -> float:
    r"""Return :math:`S_{future}` of one announced update (Xu et al. eq. 6).

    Seed ``xu-content-provider-friendly-crawler``, eq. 6 (aging over the last :math:`s`
    crawl cycles, Table 2 defaults):

    .. math::

        S_{future} = P_{update} \times
            \frac{\alpha C_{p-1} + (1-\alpha)\sum_{d=p-s}^{p-2} C_d}{\sum_{d=p-s}^{p-1} C_d}

    :param p_update: probability that the announced update happens.
    :param access_counts: :math:`C_d`, the page's accesses per past crawl cycle, oldest
        first, the last one being :math:`C_{p-1}`; only the last ``s`` are used and a
        shorter history uses what there is.
    :param window_total: accesses on the whole repository over the same cycles. Given,
        the denominator is this total and the score is :math:`P_{update}` times the
        page's aged share of accesses (its popularity); left out, the denominator is the
        page's own total as eq. 6 is literally written (the score then measures only
        whether accesses are recent).
    :param alpha: aging weight of the last cycle, within [0, 1].
    :param s: window length in cycles (>= 1).

    Returns 0.0 when there is no access in the window (nothing to weigh the update by).
    Note the weights :math:`\alpha` and :math:`(1-\alpha)` per older cycle do not sum to
    1, so the literal score lies within :math:`[P_{update}\min(\alpha, 1-\alpha),
    P_{update}\max(\alpha, 1-\alpha)]`.

    >>> round(future_score(1.0, [10, 10, 10, 10, 10]), 4)
    0.32
    >>> round(future_score(0.5, [0, 0, 0, 0, 10]), 4)
    0.4
    >>> round(future_score(1.0, [10, 10, 10, 10, 10], window_total=500), 4)
    0.032
    >>> future_score(1.0, [])
    0.0
    """
    p = check_probability("p_update", p_update)
    a = check_probability("alpha", alpha)
    if isinstance(s, bool) or not isinstance(s, int):
        raise TypeError(f"s must be an int, got {type(s).__name__}: {s!r}.")
    if s < 1:
        raise ConfigError(f"s ({s!r}) must be 1 or higher.")
    if isinstance(access_counts, (str, bytes)) or not isinstance(access_counts, Sequence):
        raise TypeError(
            "access_counts must be a sequence of numbers, "
            f"got {type(access_counts).__name__}: {access_counts!r}."
        )
    counts = [check_count(f"access_counts[{i}]", c) for i, c in enumerate(access_counts)][-s:]
    if not counts:
        return 0.0
    page_total = sum(counts)
    if window_total is None:
        denominator = page_total
    else:
        denominator = check_count("window_total", window_total)
        if denominator < page_total:
            raise ConfigError(
                f"window_total ({window_total!r}) must not be lower than this page's "
                f"accesses in the window ({page_total!r})."
            )
    if denominator <= 0:
        return 0.0
    aged = a * counts[-1] + (1.0 - a) * sum(counts[:-1])
    return p * aged / denominator


def unified_score(past_known: float, future: float, *, beta: float = DEFAULT_BETA) -> float:
    r"""Return :math:`S_{unified} = \beta S_{past}^{known} + (1-\beta) S_{future}` (eq. 7).

    Seed ``xu-content-provider-friendly-crawler``, eq. 7: one score per announced future
    update of a super provider, from the normalised :func:`past_known_score` and
    :func:`future_score`.

    >>> round(unified_score(0.5, 0.25), 4)
    0.45
    """
    b = check_probability("beta", beta)
    past = check_non_negative("past_known", past_known)
    fut = check_non_negative("future", future)
    return b * past + (1.0 - b) * fut


def score_for_provider(
    level: str,
    *,
    now: float,
    last_crawl: float,
    accesses_since_crawl: float = 0,
    update_times: Iterable[float] = (),
    access_times: Iterable[float] | None = None,
    total_accesses: float | None = None,
    p_update: float | None = None,
    access_counts: Sequence[float] = (),
    window_total: float | None = None,
    c: float = DEFAULT_C,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    s: int = DEFAULT_S,
    time_unit: float = 1.0,
) -> float:
    """Return the priority score the provider ``level`` calls for (Xu et al. Table 1).

    Seed ``xu-content-provider-friendly-crawler``, Section 4.2 and Table 1, with the
    equation numbers of the text (Table 1 swaps those of the normal and smart rows):

    * ``"normal"`` -> :func:`past_unknown_score` (eq. 5) from ``accesses_since_crawl``;
    * ``"smart"`` -> :func:`past_known_score` (eq. 4) from ``update_times`` and
      ``access_times`` (if ``None``, ``accesses_since_crawl`` accesses spread evenly since
      the last crawl, :func:`spread_accesses`);
    * ``"super"`` -> with ``p_update`` given, :func:`unified_score` (eq. 7) of the
      announced update: eq. 4 mixed with :func:`future_score` (eq. 6) from
      ``access_counts``; with ``p_update=None``, the score of the most recent past
      update, eq. 4, as for smart.

    All past scores are normalised by ``total_accesses`` (accesses on the repository).

    >>> score_for_provider("normal", now=10, last_crawl=0, accesses_since_crawl=3)
    20.0
    >>> score_for_provider("smart", now=30, last_crawl=0, update_times=[10, 20],
    ...                    access_times=[5, 12, 15, 25])
    50.0
    >>> round(score_for_provider("super", now=30, last_crawl=0, update_times=[10, 20],
    ...                          access_times=[5, 12, 15, 25], total_accesses=100,
    ...                          p_update=1.0, access_counts=[10] * 5), 4)
    0.464
    """
    if not isinstance(level, str):
        raise TypeError(f"level must be a str, got {type(level).__name__}: {level!r}.")
    if level not in PROVIDER_LEVELS:
        raise ConfigError(f"level ({level!r}) must be one of 'normal', 'smart', 'super'.")
    if level == "normal":
        return past_unknown_score(
            last_crawl,
            accesses_since_crawl,
            now,
            c=c,
            total_accesses=total_accesses,
            time_unit=time_unit,
        )
    if access_times is None:
        t_lc, t_now = _check_since(last_crawl, now)
        n = check_count("accesses_since_crawl", accesses_since_crawl)
        access_times = spread_accesses(round(n), t_lc, t_now)
    past = past_known_score(
        last_crawl,
        update_times,
        access_times,
        now,
        total_accesses=total_accesses,
        time_unit=time_unit,
    )
    if level == "smart" or p_update is None:
        return past
    future = future_score(p_update, access_counts, window_total=window_total, alpha=alpha, s=s)
    return unified_score(past, future, beta=beta)


def assign_slot(
    update_time: float, slots: Sequence[float], taken: Container[int], future: bool
) -> int | None:
    r"""Return the index of the slot an update gets, or ``None`` if no slot fits.

    Seed ``xu-content-provider-friendly-crawler``, Section 4.1: "For the past update, the
    current available crawling slot will be assigned. For the future update, the first
    available crawling slot after the future update time will be assigned." A past update
    takes the earliest free slot; a future one the earliest free slot strictly later than
    its time (a crawl at the very instant could precede the update).

    :param update_time: time of the update the score belongs to.
    :param slots: start times of the cycle's :math:`M \times P` slots, non-decreasing.
    :param taken: indices of slots already assigned.
    :param future: whether the update is an announced future one.

    >>> slots = [0.0, 10.0, 20.0, 30.0]
    >>> assign_slot(-5.0, slots, {0}, future=False)
    1
    >>> assign_slot(10.0, slots, {0}, future=True)
    2
    >>> assign_slot(35.0, slots, set(), future=True) is None
    True
    """
    return _assign(update_time, _check_slots(slots), taken, future)


def _check_slots(slots: Sequence[float]) -> list[float]:
    times = [check_finite(f"slots[{i}]", x) for i, x in enumerate(slots)]
    for i in range(1, len(times)):
        if times[i] < times[i - 1]:
            raise ConfigError(
                f"slots[{i}] ({slots[i]!r}) must not be earlier than slots[{i - 1}] "
                f"({slots[i - 1]!r}): slots must be sorted."
            )
    return times


def _assign(
    update_time: float, times: list[float], taken: Container[int], future: bool
) -> int | None:
    t = check_finite("update_time", update_time)
    if not isinstance(future, bool):
        raise TypeError(f"future must be a bool, got {type(future).__name__}: {future!r}.")
    start = bisect.bisect_right(times, t) if future else 0
    for i in range(start, len(times)):
        if i not in taken:
            return i
    return None


def assign_slots(
    candidates: Sequence[tuple[float, float, bool]],
    slots: Sequence[float],
    taken: Iterable[int] = (),
) -> list[int | None]:
    """Assign slots to scored updates, highest score first (Xu et al. Section 4.1).

    Seed ``xu-content-provider-friendly-crawler``, Section 4.1: the prioritised updates
    go into a priority queue and the crawler is "always assigned to the update with highest
    priority score", each by the rule of :func:`assign_slot`. Equal scores keep their input
    order.

    :param candidates: ``(score, update_time, future)`` per update.
    :param slots: the cycle's slot start times, non-decreasing.
    :param taken: slot indices assigned beforehand.
    :returns: the slot index of each candidate, in input order (``None``: no slot).

    >>> assign_slots([(1.0, 0.0, False), (5.0, 15.0, True), (3.0, 0.0, False)],
    ...              [0.0, 10.0, 20.0])
    [1, 2, 0]
    """
    times = _check_slots(slots)
    used = set(taken)
    order = sorted(range(len(candidates)), key=lambda i: -check_finite("score", candidates[i][0]))
    result: list[int | None] = [None] * len(candidates)
    for i in order:
        _score, update_time, future = candidates[i]
        slot = _assign(update_time, times, used, future)
        if slot is not None:
            used.add(slot)
        result[i] = slot
    return result
