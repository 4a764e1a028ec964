"""The visit log: one JSON line per recorded visit and per download, for reports.

The store keeps the *current* state of each URL; history over time (freshness and bytes
per run, outcomes per cycle) needs a log. :class:`VisitLog` appends to the file named by
:setting:`FRESH_VISIT_LOG` (a relative path lives under the project's ``.scrapy``
directory, like :setting:`FRESH_SQLITE_PATH`). ``scrapy-fresh report`` reads it.

.. warning::

   The line format is internal and may change between versions. Each line is a JSON
   object with ``"e"`` (event) ``"run"``, ``"visit"`` or ``"fetch"``, ``"t"`` (the
   crawl's clock, Unix seconds) and ``"run"`` (an id per crawl process).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from scrapy import signals
from scrapy.exceptions import NotConfigured

from scrapy_fresh import default_settings
from scrapy_fresh.config import flag
from scrapy_fresh.crawl.runtime import FreshRuntime, header_items
from scrapy_fresh.crawl.stores import resolve_sqlite_path
from scrapy_fresh.jsontext import compact_encoder
from scrapy_fresh.store.base import CommitHookStore

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from scrapy_fresh.outcome import Outcome
    from scrapy_fresh.store.base import PageState

__all__ = ["VisitLog", "resolve_visit_log_path", "wire_bytes"]

logger = logging.getLogger(__name__)

#: One encoder for every line (``json.dumps`` builds one per call).
_encode = compact_encoder()


def resolve_visit_log_path(path: str) -> str:
    """:setting:`FRESH_VISIT_LOG` resolved: relative paths go under ``.scrapy/``."""
    return resolve_sqlite_path(path)


def wire_bytes(status: int, headers: Any, body: bytes) -> int:
    """Bytes of an HTTP/1.1 answer as received: status line, headers and body.

    >>> wire_bytes(304, {b"ETag": [b'"abc"']}, b"")  # status line 15, header 13, blank 2
    30
    """
    size = len(f"HTTP/1.1 {status} \r\n") + 2 + len(body)
    for name, values in header_items(headers):
        for value in values if isinstance(values, list) else [values]:
            size += len(name) + len(value) + 4
    return size


class VisitLog:
    """Extension: append each visit outcome and each download to :setting:`FRESH_VISIT_LOG`.

    Installed by the add-on; off when :setting:`FRESH_VISIT_LOG` is empty or
    :setting:`FRESH_ENABLED` is False. Lines are written as they happen, or, beside a
    store that commits in batches (SQLite: :class:`~scrapy_fresh.store.base.CommitHookStore`),
    buffered and written just before each commit of the store: the log (and the change
    feed read from it) never lags the store, and a killed crawl loses no line of a
    visit the store kept.
    """

    def __init__(self, crawler: Crawler, path: str) -> None:
        self.crawler = crawler
        self.path = path
        self.run_id = f"{int(time.time() * 1000):x}-{os.getpid()}"
        self.runtime: FreshRuntime | None = None
        self._file: TextIO | None = None
        #: Whether the store's commits write the lines out (else each line is written).
        self._batched = False
        crawler.signals.connect(self._opened, signal=signals.spider_opened)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        # Settings are validated (FreshRuntime.of) when the spider opens, as for the
        # other components: a bad FRESH_* value fails the crawl, not the crawler's creation.
        settings = crawler.settings
        if not flag(settings, "FRESH_ENABLED"):
            raise NotConfigured("FRESH_ENABLED is False.")
        path = settings.get("FRESH_VISIT_LOG", default_settings.FRESH_VISIT_LOG)
        if not path:
            raise NotConfigured("FRESH_VISIT_LOG is empty.")
        return cls(crawler, str(path))

    def _now(self) -> float:
        return self.runtime.clock() if self.runtime is not None else time.time()

    def _write(self, event: dict[str, Any]) -> None:
        if self._file is None:
            return
        try:
            self._file.write(_encode(event) + "\n")
            if not self._batched:
                self._file.flush()
        except (OSError, ValueError, RecursionError) as exc:
            logger.warning(
                "scrapy_fresh visit log %(path)s: %(exc)s", {"path": self.path, "exc": exc}
            )

    def _base(self, event: str) -> dict[str, Any]:
        return {"e": event, "t": self._now(), "run": self.run_id}

    def _opened(self) -> None:
        self.runtime = runtime = FreshRuntime.of(self.crawler)
        runtime.outcome_listeners.append(self._visited)
        runtime.download_listeners.append(self._downloaded)
        self.path = resolve_visit_log_path(runtime.config.visit_log or self.path)
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            logger.warning(
                "scrapy_fresh cannot open the visit log %(path)s: %(exc)s",
                {"path": self.path, "exc": exc},
            )
            return
        store = runtime.store_if_open  # opened by the scheduler, before spider_opened
        if isinstance(store, CommitHookStore):
            store.before_commit.append(self.flush)
            self._batched = True
        spider = self.crawler.spider
        self._write(
            {
                **self._base("run"),
                "phase": "open",
                "spider": getattr(spider, "name", None),
                "mode": runtime.config.mode,
            }
        )

    def flush(self) -> None:
        """Write out the buffered lines (before each commit of the store)."""
        if self._file is None:
            return
        try:
            self._file.flush()
        except (OSError, ValueError) as exc:
            logger.warning(
                "scrapy_fresh visit log %(path)s: %(exc)s", {"path": self.path, "exc": exc}
            )

    def _closed(self, reason: str) -> None:
        stats = self.crawler.stats.get_stats() if self.crawler.stats else {}
        fresh = {k: v for k, v in stats.items() if k.startswith("fresh/")}
        self._write({**self._base("run"), "phase": "close", "reason": reason, "stats": fresh})
        if self._file is not None:
            store = self.runtime.store_if_open if self.runtime is not None else None
            if self._batched and isinstance(store, CommitHookStore):
                with contextlib.suppress(ValueError):
                    store.before_commit.remove(self.flush)
            self._batched = False
            try:
                self._file.close()
            except OSError as exc:
                logger.warning(
                    "scrapy_fresh visit log %(path)s: %(exc)s", {"path": self.path, "exc": exc}
                )
            self._file = None

    def _downloaded(self, response: Response, request: Request) -> None:
        self._write(
            {
                "e": "fetch",
                "t": self._now(),
                "run": self.run_id,
                "url": request.url,
                "method": request.method,
                "status": response.status,
                "bytes": wire_bytes(response.status, response.headers, response.body),
                "key": request.meta.get("fresh_key"),
            }
        )

    def _visited(
        self, state: PageState, outcome: Outcome, now: float, headers: Mapping[str, str | None]
    ) -> None:
        self._write(
            {
                "e": "visit",
                "t": now,
                "run": self.run_id,
                "key": state.key,
                "url": state.url,
                "host": state.host,
                "provider": state.provider.value,
                "outcome": outcome.value,
                "status": state.status.value,
                "p_c": state.p_c,
                "refresh_secs": state.refresh_secs,
                "next_due": state.next_due,
                "visits": state.visits,
                "changes": state.changes,
                "change_rate": state.change_rate,
                "content_length": state.content_length,
                "magnitude": None if self.runtime is None else self.runtime.visits.magnitude,
                "last_crawl": state.last_crawl,
                **self._change(),
            }
        )

    def _change(self) -> dict[str, Any]:
        """What the change feed needs of a visit: changed fields, whether it made the page
        gone (left out when there is nothing to say)."""
        runtime = self.runtime
        if runtime is None:
            return {}
        out: dict[str, Any] = {}
        if runtime.visits.fields:
            out["fields"] = runtime.visits.fields
        if runtime.visits.items:
            out["items"] = runtime.visits.items
        if runtime.visits.became_gone:
            out["became_gone"] = True
        return out
