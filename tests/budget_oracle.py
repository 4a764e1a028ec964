"""The test oracle of the crawl planner (scrapy_fresh.frontier.planner.plan_cycle): the
same budget choice stated over whole lists, every candidate in memory.

It was the package's own budget rule before the planner; the planner keeps O(budget)
records and the tests check that it still picks what this does.
"""

from __future__ import annotations

from collections.abc import Iterable

from scrapy_fresh.frontier.scoring import ScoreParams, gain_score, priority_score
from scrapy_fresh.store.base import PageState

__all__ = ["rank_for_budget"]

_DEFAULT = ScoreParams()


def rank_for_budget(
    due: Iterable[PageState],
    waiting: Iterable[PageState],
    now: float,
    capacity: int,
    params: ScoreParams = _DEFAULT,
) -> list[tuple[float, PageState]]:
    """Order a cycle's re-crawl candidates as its budget should take them: the first
    ``capacity`` are fetched in this cycle, the rest are next in line.

    ``due`` are the records whose refresh time has come (Sharma & Dixit's rule),
    ``waiting`` the others (empty unless :attr:`ScoreParams.fill`). When the due records
    fit in ``capacity`` the budget does not bind: all of them go first (the refresh rule
    decides), then the waiting ones best score first, so budget left is not lost. When
    they do not fit, every candidate competes by score alone (Cho & Garcia-Molina's
    allocation in greedy form, :mod:`scrapy_fresh.policy.gain`): a page whose refresh
    time says "due" but whose fetch buys little waits, and a page the refresh rule
    pushed far out is taken when its fetch is worth more. Equal scores keep input order.

    >>> from scrapy_fresh.store.base import PageState
    >>> day = 86400.0
    >>> def page(key, p_c, next_due):
    ...     return PageState(key, "http://x/" + key, first_seen=0.0, last_crawl=9 * day,
    ...                      visits=10, p_c=p_c, next_due=next_due)
    >>> due = [page("busy", 1.0, 0.0), page("busier", 1.0, 0.0)]
    >>> waiting = [page("calm", 0.5, 20 * day)]
    >>> [s.key for _, s in rank_for_budget(due, waiting, 10 * day, 1)]  # binding
    ['calm', 'busy', 'busier']
    >>> [s.key for _, s in rank_for_budget(due, waiting, 10 * day, 2)]  # room for the due
    ['busy', 'busier', 'calm']
    """
    due_scored = _ranked(due, now, params)
    waiting_scored = _ranked(waiting, now, params) if params.fill else []
    if len(due_scored) <= capacity:
        return [(score, s) for score, _, s in due_scored + waiting_scored]
    merged = sorted(due_scored + waiting_scored, key=lambda t: -t[0])
    return [(score, s) for score, _, s in merged]


def _ranked(
    states: Iterable[PageState], now: float, params: ScoreParams
) -> list[tuple[float, int, PageState]]:
    score = gain_score if params.rule == "gain" else priority_score
    scored = [
        (
            score(s, now, params) if s.last_crawl is not None else priority_score(s, now, params),
            i,
            s,
        )
        for i, s in enumerate(states)
    ]
    scored.sort(key=lambda t: (-t[0], t[1]))
    return scored
