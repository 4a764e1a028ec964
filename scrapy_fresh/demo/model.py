"""The demo site's pages, their true change processes, and the log of what it served.

Nothing here speaks HTTP (:mod:`scrapy_fresh.demo.server` does) or renders markup
(:mod:`scrapy_fresh.demo.render`). Every change time is drawn from a random generator
seeded with the site seed and the page path, so one seed gives one history whatever
order pages are asked in.
"""

from __future__ import annotations

import bisect
import math
import random
import threading
from dataclasses import dataclass, field
from typing import Any

from scrapy_fresh.demo.clock import DemoClock
from scrapy_fresh.demo.words import WORDS

__all__ = [
    "DAY",
    "HISTORY_SECS",
    "HOUR",
    "NEWS_SLOT_SECS",
    "DemoSite",
    "PageSpec",
    "build_pages",
]

HOUR = 3600.0
DAY = 86400.0
#: The site has this much history before its clock started (first versions, old dates).
HISTORY_SECS = 3 * DAY
#: News stories change only at slots this far apart (announced as hourly, twice an hour).
NEWS_SLOT_SECS = 1800.0
#: The slots are counted from this time (``sy:updateBase``: 2000-01-01T00:00:00Z).
NEWS_SLOT_BASE = 946684800.0

#: Process kinds.
POISSON, SLOTS, STATIC, DERIVED = "poisson", "slots", "static", "derived"


@dataclass(frozen=True)
class PageSpec:
    """What one page is and how it changes.

    ``validators`` is ``"etag"`` (ETag and Last-Modified), ``"lm"`` (Last-Modified
    only) or ``"none"``. ``process`` is ``"poisson"`` (``rate`` changes per simulated
    second), ``"slots"`` (at each news slot with probability ``slot_prob``),
    ``"static"`` or ``"derived"`` (changes whenever one of ``members`` does).
    """

    path: str
    section: str
    provider: str
    kind: str
    title: str
    validators: str = "none"
    process: str = STATIC
    rate: float = 0.0
    slot_prob: float = 0.0
    members: tuple[str, ...] = ()
    cosmetic: bool = False
    #: Share of requests answered ``503 Service Unavailable`` with ``Retry-After``.
    flaky: float = 0.0
    #: Simulated time from which the page answers ``gone_status``; None: never.
    gone_after: float | None = None
    gone_status: int = 404

    def expected_rate(self) -> float:
        """True mean changes per simulated second (derived pages: not defined, 0)."""
        if self.process == POISSON:
            return self.rate
        if self.process == SLOTS:
            return self.slot_prob / NEWS_SLOT_SECS
        return 0.0


def _log_spaced(low: float, high: float, n: int, i: int) -> float:
    """The ``i``-th of ``n`` values spaced evenly in log between ``low`` and ``high``."""
    if n == 1:
        return low
    return math.exp(math.log(low) + (math.log(high) - math.log(low)) * i / (n - 1))


def _title(rng: random.Random, words: tuple[str, ...]) -> str:
    return " ".join(rng.choice(words) for _ in range(rng.randint(3, 6))).capitalize()


def build_pages(
    seed: int, start: float, *, news: int = 12, blog: int = 24, docs: int = 36
) -> list[PageSpec]:
    """The site's page catalogue: rates spread over about four orders of magnitude.

    News stories change at half-hour slots with probabilities from 0.9 down to 0.03;
    blog posts once per 6 hours down to once a month; docs once per 2 days down to
    once a year. A third of the docs have ETag + Last-Modified, a third no validators,
    a third no validators and a footer that changes on every request. Two docs pages
    are flaky (a quarter of requests answer 503); four old docs pages are gone (two
    404 from the start, one 410 and one 404 after a day of simulated time).
    """
    rng = random.Random(f"{seed}:titles")
    pages: list[PageSpec] = []
    stories = [f"/news/story-{i}" for i in range(news)]
    posts = [f"/blog/post-{i}" for i in range(blog)]
    for i, path in enumerate(stories):
        pages.append(
            PageSpec(
                path,
                "news",
                "super",
                "story",
                _title(rng, WORDS),
                validators="etag",
                process=SLOTS,
                slot_prob=_log_spaced(0.9, 0.03, news, i),
            )
        )
    for i, path in enumerate(posts):
        pages.append(
            PageSpec(
                path,
                "blog",
                "smart",
                "post",
                _title(rng, WORDS),
                validators="lm" if i % 2 else "etag",
                process=POISSON,
                rate=1.0 / _log_spaced(6 * HOUR, 30 * DAY, blog, i),
            )
        )
    flaky = {docs // 3 + 1, 2 * docs // 3 + 1}
    for i in range(docs):
        kind = ("etag", "none", "cosmetic")[i % 3]
        pages.append(
            PageSpec(
                f"/docs/page-{i}",
                "docs",
                "normal",
                "doc",
                _title(rng, WORDS),
                validators="etag" if kind == "etag" else "none",
                process=POISSON,
                rate=1.0 / _log_spaced(2 * DAY, 365 * DAY, docs, i),
                cosmetic=kind == "cosmetic",
                flaky=0.25 if i in flaky else 0.0,
            )
        )
    history = start - HISTORY_SECS
    for i, (after, status) in enumerate(
        [(history, 404), (history, 410), (start + DAY, 410), (start + DAY, 404)]
    ):
        pages.append(
            PageSpec(
                f"/docs/old-{i}",
                "docs",
                "normal",
                "doc",
                _title(rng, WORDS),
                validators="etag",
                process=STATIC,
                gone_after=after,
                gone_status=status,
            )
        )
    docs_members = tuple(p.path for p in pages if p.section == "docs")
    pages += [
        PageSpec(
            "/news/",
            "news",
            "super",
            "index",
            "News",
            validators="etag",
            process=DERIVED,
            members=tuple(stories),
        ),
        PageSpec(
            "/news/feed.rss",
            "news",
            "super",
            "feed",
            "News feed",
            validators="etag",
            process=DERIVED,
            members=tuple(stories),
        ),
        PageSpec(
            "/blog/",
            "blog",
            "smart",
            "index",
            "Blog",
            validators="lm",
            process=DERIVED,
            members=tuple(posts),
        ),
        PageSpec(
            "/blog/atom.xml",
            "blog",
            "smart",
            "feed",
            "Blog feed",
            validators="lm",
            process=DERIVED,
            members=tuple(posts),
        ),
        PageSpec(
            "/sitemap.xml",
            "blog",
            "smart",
            "sitemap",
            "Sitemap",
            validators="lm",
            process=DERIVED,
            members=tuple(posts),
        ),
        PageSpec(
            "/docs/",
            "docs",
            "normal",
            "index",
            "Documentation",
            process=STATIC,
            members=docs_members,
        ),
    ]
    return pages


@dataclass
class _Process:
    """The lazily drawn change times of one page (drawn up to the time asked for)."""

    spec: PageSpec
    rng: random.Random
    cursor: float
    times: list[float] = field(default_factory=list)

    def until(self, t: float) -> list[float]:
        spec = self.spec
        if spec.process == POISSON and spec.rate > 0:
            while self.cursor <= t:
                self.cursor += self.rng.expovariate(spec.rate)
                if self.cursor <= t:
                    self.times.append(self.cursor)
        elif spec.process == SLOTS:
            while self.cursor <= t:
                if self.rng.random() < spec.slot_prob:
                    self.times.append(self.cursor)
                self.cursor += NEWS_SLOT_SECS
        return self.times


class DemoSite:
    """The pages, their change times and the request log of one demo site.

    :param clock: the simulated clock.
    :param seed: one seed, one history.
    :param crawl_delay: the ``Crawl-delay`` robots.txt asks for (seconds; None: none).
    :param retry_after: seconds a flaky page's 503 asks to wait.
    """

    def __init__(
        self,
        clock: DemoClock,
        seed: int = 1,
        *,
        crawl_delay: float | None = 0.05,
        retry_after: int = 120,
        news: int = 12,
        blog: int = 24,
        docs: int = 36,
    ) -> None:
        self.clock = clock
        self.seed = seed
        self.crawl_delay = crawl_delay
        self.retry_after = retry_after
        self.started = clock.start
        self.history_start = clock.start - HISTORY_SECS
        self.pages: dict[str, PageSpec] = {
            p.path: p for p in build_pages(seed, clock.start, news=news, blog=blog, docs=docs)
        }
        self._lock = threading.Lock()
        self._processes: dict[str, _Process] = {}
        self._served: dict[str, int] = {}
        self.requests: list[dict[str, Any]] = []
        for spec in self.pages.values():
            rng = random.Random(f"{seed}:{spec.path}:changes")
            cursor = self.history_start
            if spec.process == SLOTS:
                k = math.ceil((self.history_start - NEWS_SLOT_BASE) / NEWS_SLOT_SECS)
                cursor = NEWS_SLOT_BASE + k * NEWS_SLOT_SECS
            self._processes[spec.path] = _Process(spec, rng, cursor)

    # -- the truth -------------------------------------------------------------------

    def changes(self, path: str, until: float) -> list[float]:
        """True change times of ``path`` after the history start, up to ``until``."""
        spec = self.pages[path]
        with self._lock:
            if spec.process == DERIVED:
                merged = sorted({t for m in spec.members for t in self._processes[m].until(until)})
            else:
                merged = list(self._processes[path].until(until))
        return merged[: bisect.bisect_right(merged, until)]

    def version(self, path: str, at: float) -> int:
        """How many times ``path`` changed since the history start, as of ``at``."""
        return len(self.changes(path, at))

    def modified(self, path: str, at: float) -> float:
        """The time of the last change of ``path`` as of ``at`` (the history start if none)."""
        times = self.changes(path, at)
        return times[-1] if times else self.history_start

    def gone(self, path: str, at: float) -> bool:
        spec = self.pages[path]
        return spec.gone_after is not None and at >= spec.gone_after

    # -- requests ----------------------------------------------------------------------

    def flaky_now(self, path: str) -> bool:
        """Whether this request of ``path`` fails with a 503 (seeded per request number)."""
        spec = self.pages.get(path)
        if spec is None or not spec.flaky:
            return False
        with self._lock:
            n = self._served[path] = self._served.get(path, 0) + 1
        return random.Random(f"{self.seed}:{path}:{n}").random() < spec.flaky

    def record(
        self, t: float, method: str, path: str, status: int, wire: int, body: int, user_agent: str
    ) -> None:
        """Log one request served (``wire``: status line, headers and body bytes)."""
        entry = {
            "t": t,
            "method": method,
            "path": path,
            "status": status,
            "bytes": wire,
            "body_bytes": body,
            "user_agent": user_agent,
        }
        with self._lock:
            self.requests.append(entry)

    def truth(self, since: int = 0) -> dict[str, Any]:
        """Everything the site knows, as JSON data: the pages with every true change up to
        now, and the requests served (from the ``since``-th on)."""
        now = self.clock.now()
        pages = {}
        for path, spec in self.pages.items():
            pages[path] = {
                "section": spec.section,
                "provider": spec.provider,
                "kind": spec.kind,
                "validators": spec.validators,
                "cosmetic": spec.cosmetic,
                "flaky": spec.flaky,
                "rate": spec.expected_rate(),
                "gone_after": spec.gone_after,
                "gone_status": spec.gone_status if spec.gone_after is not None else None,
                "changes": self.changes(path, now),
            }
        with self._lock:
            requests = list(self.requests[since:])
        return {
            "now": now,
            "speed": self.clock.speed,
            "started": self.started,
            "history_start": self.history_start,
            "seed": self.seed,
            "pages": pages,
            "requests": requests,
            "requests_total": since + len(requests),
        }
