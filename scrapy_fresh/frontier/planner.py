"""What one crawl cycle fetches under a budget: the one planner of the crawl and the simulator.

:class:`~scrapy_fresh.crawl.scheduler.FreshScheduler` (cycle mode with
:setting:`FRESH_CYCLE_BUDGET`) and the simulator's ``fresh`` policy
(:class:`~scrapy_fresh.simulator.policies.Fresh`) both call :func:`plan_cycle` with the
records a store gives them; neither has its own copy of the rule.

The rule, in one pass over the candidates, keeping O(budget) of them:

* a record due within the lookahead (``next_due <= cut``) is a candidate now if it is
  due (``next_due <= now``) or may be taken early (:func:`may_take_early`: not visited
  since the run opened, and not waiting for an update a super provider announced before
  its due time: Xu et al.'s slot rule, Section 4.1);
* with :attr:`~scrapy_fresh.frontier.scoring.ScoreParams.fill`, visited records not due
  and not in error back-off are candidates too (budget left is not lost);
* re-crawls get ``budget - round(budget * new_share)`` fetches
  (:setting:`FRESH_NEW_URL_SHARE` is kept for new URLs), new URLs the rest, and
  re-crawls take what new URLs leave (:attr:`CyclePlan.spare`);
* when the due re-crawls fit in their share, all of them go first (Sharma & Dixit's
  refresh rule decides), then the best waiting ones; when they do not fit, every
  candidate competes by score (:func:`~scrapy_fresh.frontier.scoring.priority_score`;
  Cho & Garcia-Molina's allocation in greedy form). Equal scores go in due order
  (``next_due``, key).

:func:`~scrapy_fresh.frontier.scoring.rank_for_budget` states the same choice over
whole lists; the tests keep it as the oracle this planner is checked against.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter

from scrapy_fresh.frontier.scoring import ScoreParams, priority_score
from scrapy_fresh.store.base import PageState

__all__ = ["CyclePlan", "may_take_early", "plan_cycle"]

#: How a cycle ranks a record: higher score first, then due order.
Rank = tuple[float, float, str]


@dataclass
class CyclePlan:
    """The outcome of :func:`plan_cycle`."""

    #: (score, record) to fetch in this cycle: the re-crawls, best first, then new URLs.
    taken: list[tuple[float, PageState]] = field(default_factory=list)
    #: The next-best re-crawls, best first, for fetches new URLs leave unused (at most
    #: :attr:`budget_left` of them).
    spare: list[tuple[float, PageState]] = field(default_factory=list)
    #: Fetches of the budget that neither re-crawls nor new URLs took.
    budget_left: int = 0
    #: Due re-crawls left for a later cycle.
    left_due: int = 0
    #: New URLs left for a later cycle.
    left_new: int = 0


def may_take_early(state: PageState, now: float, opened_at: float) -> bool:
    """Whether a record due later than ``now`` but within the lookahead is taken now:
    not if this run (opened at ``opened_at``) fetched it already, nor if its due time
    waits for an announced update still to come (fetched before it, the copy would be
    stale at once: Xu et al.'s slot rule)."""
    if state.last_crawl is not None and state.last_crawl >= opened_at:
        return False
    return not any(now < t <= state.next_due for t, _ in state.future_updates)


class _Best:
    """The ``size`` smallest ranks offered, with their records, in O(size) memory."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: list[tuple[Rank, PageState]] = []

    def add(self, rank: Rank, state: PageState) -> None:
        self._items.append((rank, state))
        if len(self._items) >= 2 * self.size + 64:
            self._trim()

    def _trim(self) -> None:
        self._items.sort(key=itemgetter(0))  # keys are unique: records never compared
        del self._items[self.size :]

    def best(self) -> list[tuple[Rank, PageState]]:
        """The kept records, best first."""
        self._trim()
        return self._items


def plan_cycle(
    records: Iterable[PageState],
    now: float,
    budget: int,
    params: ScoreParams,
    *,
    cut: float | None = None,
    new_share: float = 0.0,
    early: Callable[[PageState, float], bool] | None = None,
    allowed: Callable[[PageState, float], bool] | None = None,
) -> CyclePlan:
    """Choose what a cycle with ``budget`` fetches from ``records`` (see the module doc).

    ``records``: the queued and idle records due by ``cut`` (default ``now``: no
    lookahead), or every such record with ``params.fill``; records due later are passed
    over without the fill, and with it when they are not visited or in error back-off. ``early(state, now)`` says
    whether a record due after ``now`` but by ``cut`` may be taken now (default:
    :func:`may_take_early` with the run opened at ``now``). ``allowed(state, now)`` says
    whether a record may be fetched before its due time at all (the operator's schedule
    rules, :meth:`~scrapy_fresh.policy.schedule.ScheduleRules.allows`): neither an
    early take nor the fill takes one it refuses.
    """
    cut = now if cut is None else cut
    take_early = early or (lambda state, t: may_take_early(state, t, t))
    capacity = budget - round(budget * new_share)
    new = _Best(budget)
    everything = _Best(budget)  # due and waiting re-crawls together (the budget binds)
    due: list[tuple[Rank, PageState]] | None = []  # while the due re-crawls fit
    waiting: _Best | None = _Best(budget)
    n_new = n_due = n_waiting = 0
    for state in records:
        if state.next_due > now and allowed is not None and not allowed(state, now):
            continue  # the schedule rules hold it back until its due time
        if state.next_due <= cut:
            if state.next_due > now and not take_early(state, now):
                continue
        elif not params.fill or state.last_crawl is None or state.errors:
            continue  # only visited records not in error back-off fill the budget
        rank = (-priority_score(state, now, params), state.next_due, state.key)
        if state.last_crawl is None:
            n_new += 1
            new.add(rank, state)
            continue
        everything.add(rank, state)
        if state.next_due > cut:
            n_waiting += 1
            if waiting is not None:
                waiting.add(rank, state)
            continue
        n_due += 1
        if due is not None and n_due <= capacity:
            due.append((rank, state))
        else:
            due = waiting = None
    if due is not None and waiting is not None:  # all due first, then the best waiting
        due.sort(key=itemgetter(0))
        ranked = due + waiting.best()[: budget - len(due)]
    else:
        ranked = everything.best()
    take_old = min(n_due + n_waiting, capacity)
    take_new = min(n_new, budget - take_old)
    budget_left = budget - take_old - take_new
    old = [(-rank[0], s) for rank, s in ranked[: take_old + budget_left]]
    left_due = n_due - sum(1 for _, s in old[:take_old] if s.next_due <= cut)
    return CyclePlan(
        taken=old[:take_old] + [(-rank[0], s) for rank, s in new.best()[:take_new]],
        spare=old[take_old:],
        budget_left=budget_left,
        left_due=left_due,
        left_new=n_new - take_new,
    )
