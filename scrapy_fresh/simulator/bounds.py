r"""Upper bounds on a replay's freshness.

Two references, both computed from the whole trace (no policy can know it):

* ``clairvoyant`` (:class:`~scrapy_fresh.simulator.policies.Clairvoyant`): the budget's
  fetches placed at the instants of the changes followed by the longest unchanged spans,
  anywhere in the replay. It bounds every policy with the same number of fetches, but
  ignores that the replay offers only so many fetches per cycle, at set times.
* :func:`cycle_bound`: the best any policy that fetches at the replay's slots can do
  (the online policies, ``fresh`` among them: each cycle's budget, fetched evenly spaced
  over the cycle, :mod:`~scrapy_fresh.simulator.engine`). Finding the best assignment of
  slots to changes is a bipartite matching; its linear-programming dual gives an upper
  bound for any slot prices, and :func:`cycle_bound` takes the lowest of a few
  subgradient steps over one price per cycle. It is a true upper bound, usually not
  reached (the best schedule may score less), and never above the clairvoyant one (its
  first step is the clairvoyant ranking with each fetch moved to the first slot after
  its change).

Pure Python, a few seconds on two months of rss2023.
"""

from __future__ import annotations

import bisect
import math

from scrapy_fresh.simulator.engine import Context

__all__ = ["cycle_bound", "replay_slots"]


def replay_slots(ctx: Context) -> list[list[float]]:
    """The fetch times the replay offers online policies, per cycle (the loop of
    :func:`scrapy_fresh.simulator.replay.run`: each cycle's share of the budget, evenly
    spaced over the cycle, none after the trace end)."""
    trace = ctx.trace
    step = ctx.config.step_secs
    per_step = ctx.rate * step
    out: list[list[float]] = []
    carry = 0.0
    now = trace.start
    while now < trace.end:
        carry += per_step
        capacity = int(carry + 1e-9)
        carry -= capacity
        slots: list[float] = []
        if capacity:
            spacing = step / capacity
            for j in range(capacity):
                at = now + (j + 0.5) * spacing
                if at > trace.end:
                    break
                slots.append(at)
        out.append(slots)
        now += step
    return out


def cycle_bound(ctx: Context, iterations: int = 100) -> float:
    r"""Return an upper bound on the freshness of any policy fetching at the replay's
    slots (:func:`replay_slots`).

    A fetch at slot :math:`s` serves the span :math:`[c, n)` between a change and the
    next one (or the window end) that contains it, for :math:`(n - s)/L` of its page's
    fresh share (:math:`L` the page's measured window); the spans before a page's first
    change in its window count as fresh for free. With a price :math:`\mu_h \ge 0` on
    each slot of cycle :math:`h`,

    .. math::

        \sum_h |h|\,\mu_h + \sum_{[c, n)} \max\Big(0, \max_h \frac{n - s_h(c)}{L}
            - \mu_h\Big)

    bounds every assignment of slots to spans (:math:`s_h(c)`: the first slot of cycle
    :math:`h` at or after :math:`c`; weak duality of the assignment problem). The prices
    start at the value of the budget's last fetch in the clairvoyant ranking (the first
    value is the clairvoyant bound with each fetch moved to the first slot after its
    change) and follow ``iterations`` subgradient steps (Polyak's step towards a target
    below the best value so far); the lowest value seen is returned. Every value is a
    bound, so the iterations only decide how tight it is.
    """
    if iterations < 1:
        raise ValueError(f"iterations ({iterations!r}) must be 1 or more.")
    trace = ctx.trace
    cycles = replay_slots(ctx)
    sizes = [len(s) for s in cycles]
    step = ctx.config.step_secs
    measured = sum(1 for w in ctx.windows if w is not None)
    free = 0.0
    # Per span, its options: (cycle, value of its first slot there).
    spans: list[list[tuple[int, float]]] = []
    for changes, window in zip(trace.changes, ctx.windows, strict=True):
        if window is None:
            continue
        start, end = window
        scale = 1.0 / ((end - start) * measured)
        lo = bisect.bisect_left(changes, start)
        hi = bisect.bisect_right(changes, end)
        first = changes[lo] if lo < hi else end
        free += (first - start) * scale
        for j in range(lo, hi):
            c = changes[j]
            n = changes[j + 1] if j + 1 < hi else end
            options: list[tuple[int, float]] = []
            h = max(0, int((c - trace.start) // step))
            while h < len(cycles) and trace.start + h * step < n:
                slots = cycles[h]
                k = bisect.bisect_left(slots, c)
                if k < len(slots) and slots[k] < n:
                    options.append((h, (n - slots[k]) * scale))
                h += 1
            if options:
                spans.append(options)
    best_values = sorted((max(v for _, v in o) for o in spans), reverse=True)
    budget = sum(sizes)
    if not best_values or budget == 0:
        return min(1.0, free)
    price0 = best_values[min(budget, len(best_values)) - 1]
    prices = [price0] * len(cycles)
    bound = math.inf
    gap = 0.1  # Polyak steps towards a target this far below the best bound so far
    stalled = 0
    for _ in range(iterations):
        taken = [0] * len(cycles)
        total = free
        for options in spans:
            pick, gain = -1, 0.0
            for h, v in options:
                x = v - prices[h]
                if x > gain:
                    pick, gain = h, x
            if pick >= 0:
                taken[pick] += 1
                total += gain
        total += sum(p * k for p, k in zip(prices, sizes, strict=True))
        if total < bound:
            bound, stalled = total, 0
        else:
            stalled += 1
            if stalled >= 3:
                gap, stalled = gap / 2.0, 0
        # The subgradient: slots left over (lower the price) or asked for beyond the
        # cycle's (raise it).
        grad = [k - t for k, t in zip(sizes, taken, strict=True)]
        norm = sum(g * g for g in grad)
        if norm == 0:
            break  # every cycle asked for exactly its slots: no price can do better
        step = (total - bound * (1.0 - gap)) / norm
        prices = [max(0.0, p - step * g) for p, g in zip(prices, grad, strict=True)]
    return min(1.0, bound)
