"""How a visit ended: the one vocabulary of the scheduler, the stores, the providers,
the visit log and the simulator (:func:`scrapy_fresh.frontier.revisit.record_visit`
turns an outcome into the record's next state).
"""

from __future__ import annotations

import enum

__all__ = ["JUDGED", "Outcome"]


class Outcome(str, enum.Enum):
    """How a visit ended; every visit ends in exactly one."""

    #: First fetch of a URL: nothing to compare with.
    NEW = "new"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    NOT_MODIFIED = "not_modified"
    GONE = "gone"
    ERROR = "error"
    #: Not fetched because the crawler itself would not (a robots.txt rule, an offsite
    #: URL, another middleware's ``IgnoreRequest``): looked at again after the longest
    #: refresh time, in case the rule changes; not an error.
    BLOCKED = "blocked"


#: Outcomes that count as a visit in p_c (Sharma & Dixit: "changes / visits").
JUDGED = frozenset({Outcome.CHANGED, Outcome.UNCHANGED, Outcome.NOT_MODIFIED})
