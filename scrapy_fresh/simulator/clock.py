"""The simulated clock: what ``now`` is during a replay.

Everything the simulator drives takes ``now`` as an argument (the policy and frontier
code never reads the clock); :class:`SimClock` is the one place the replay's time lives,
and it is a ``Callable[[], float]`` like the clock the crawl's runtime uses, so code that
wants a clock can be given this one.
"""

from __future__ import annotations

__all__ = ["SimClock"]


class SimClock:
    """A clock that only moves when told to, and only forward.

    >>> clock = SimClock(100.0)
    >>> clock.advance_to(160.0)
    >>> clock()
    160.0
    """

    def __init__(self, start: float) -> None:
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance_to(self, when: float) -> None:
        """Move to ``when``; going back in time is an error."""
        if when < self.now:
            raise ValueError(f"the simulated clock cannot go back from {self.now!r} to {when!r}.")
        self.now = float(when)
