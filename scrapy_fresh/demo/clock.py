"""The demo site's clock: simulated Unix time that runs ``speed`` times faster than real time."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

__all__ = ["DemoClock"]


class DemoClock:
    """Simulated time: ``start + speed * (real seconds since creation) + advanced``.

    ``DemoClock(speed=60)`` runs one simulated minute per real second. :meth:`advance`
    jumps ahead by hand (tests and benchmarks step from cycle to cycle this way).

    :param speed: simulated seconds per real second (more than 0).
    :param start: the simulated time at creation (default: the real time now).
    :param real_clock: the real clock (a monotonic one by default).

    >>> ticks = [100.0]
    >>> clock = DemoClock(speed=60, start=1000.0, real_clock=lambda: ticks[0])
    >>> ticks[0] = 101.0
    >>> clock.now()
    1060.0
    >>> clock.advance(3600)
    4660.0
    """

    def __init__(
        self,
        speed: float = 1.0,
        start: float | None = None,
        real_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(speed, bool) or not isinstance(speed, (int, float)):
            raise TypeError(f"speed ({speed!r}) must be a number.")
        if not math.isfinite(speed) or speed <= 0:
            raise ValueError(f"speed ({speed!r}) must be a finite number higher than 0.")
        self.speed = float(speed)
        self.start = float(time.time() if start is None else start)
        self._real = real_clock
        self._real0 = real_clock()
        self._advanced = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        """The simulated time now (Unix seconds)."""
        with self._lock:
            return self.start + self.speed * (self._real() - self._real0) + self._advanced

    def advance(self, secs: float) -> float:
        """Jump ``secs`` (0 or more) simulated seconds ahead; return the new time."""
        if not math.isfinite(secs) or secs < 0:
            raise ValueError(f"secs ({secs!r}) must be a finite number of 0 or more.")
        with self._lock:
            self._advanced += secs
        return self.now()
