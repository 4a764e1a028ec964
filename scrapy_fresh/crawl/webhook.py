"""Webhook delivery of changes: each change POSTed as JSON to :setting:`FRESH_WEBHOOK_URL`.

At least once: a change is written to a SQLite outbox (:class:`Outbox`,
:setting:`FRESH_WEBHOOK_OUTBOX`) and committed before any attempt, and leaves it only when
the receiver answered 2xx. A failed attempt (no connection, a timeout, any other status)
is retried after :setting:`FRESH_WEBHOOK_BACKOFF_SECS`, doubled per failure up to
:setting:`FRESH_WEBHOOK_MAX_BACKOFF_SECS`; what is left when the crawl ends (after
:setting:`FRESH_WEBHOOK_CLOSE_WAIT_SECS`) or dies is sent by the next crawl. A receiver
may thus get a delivery twice: each carries its ``delivery_id`` (also in the
``X-Fresh-Delivery`` header) and its ``attempt`` number, so duplicates are easy to drop.

Each body is signed: ``X-Fresh-Signature: sha256=<hex HMAC-SHA256 of the body with
FRESH_WEBHOOK_SECRET>``; check it with :func:`verify_signature`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import sqlite3
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from scrapy_fresh import default_settings
from scrapy_fresh.changes.feed import change_event
from scrapy_fresh.config import flag
from scrapy_fresh.crawl.runtime import FreshRuntime
from scrapy_fresh.crawl.stores import resolve_sqlite_path
from scrapy_fresh.outcome import Outcome

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_fresh.changes.compare import ChangeConfig
    from scrapy_fresh.store.base import PageState

__all__ = ["Outbox", "WebhookDelivery", "sign", "verify_signature"]

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Fresh-Signature"
DELIVERY_HEADER = "X-Fresh-Delivery"


def sign(secret: str, body: bytes) -> str:
    """The ``X-Fresh-Signature`` value of ``body``."""
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify_signature(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is the signature of ``body`` (constant-time comparison)."""
    return header is not None and hmac.compare_digest(sign(secret, body), header)


class Outbox:
    """Deliveries not acknowledged yet, in a SQLite file (WAL; each write committed)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = FULL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            "id TEXT NOT NULL UNIQUE, event TEXT NOT NULL, attempts INTEGER NOT NULL, "
            "next_try REAL NOT NULL)"
        )

    def add(self, event: Mapping[str, Any], now: float) -> str:
        """Store a change to deliver; return its delivery id."""
        delivery = uuid.uuid4().hex
        with self._lock:
            self._conn.execute(
                "INSERT INTO outbox (id, event, attempts, next_try) VALUES (?, ?, 0, ?)",
                (delivery, json.dumps(event, ensure_ascii=False), now),
            )
        return delivery

    def due(self, now: float, limit: int = 100) -> list[tuple[str, dict[str, Any], int]]:
        """Up to ``limit`` deliveries due at ``now``, oldest first: (id, event, attempts)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT id, event, attempts FROM outbox WHERE next_try <= ? ORDER BY seq LIMIT ?",
                (now, limit),
            ).fetchall()
        return [(d, json.loads(e), n) for d, e, n in rows]

    def next_try(self) -> float | None:
        with self._lock:
            row = self._conn.execute("SELECT min(next_try) FROM outbox").fetchone()
        return None if row[0] is None else float(row[0])

    def failed(self, delivery: str, next_try: float) -> None:
        with self._lock:
            self._conn.execute(
                "UPDATE outbox SET attempts = attempts + 1, next_try = ? WHERE id = ?",
                (next_try, delivery),
            )

    def done(self, delivery: str) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM outbox WHERE id = ?", (delivery,))

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM outbox").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class WebhookDelivery:
    """Extension: POST each change (new, changed, gone page) to :setting:`FRESH_WEBHOOK_URL`.

    Off unless the URL is set; then :setting:`FRESH_WEBHOOK_SECRET` is required. The body
    is ``{"delivery_id", "attempt", "event"}``, ``event`` as ``scrapy-fresh changes``
    prints it. Sends from a thread of its own, so a slow receiver never holds the crawl.
    Stats: ``fresh/webhook/queued``, ``fresh/webhook/delivered``, ``fresh/webhook/failed``
    (attempts that failed), ``fresh/webhook/left`` (left in the outbox at the end).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.config: ChangeConfig | None = None
        self.outbox: Outbox | None = None
        self.runtime: FreshRuntime | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        crawler.signals.connect(self._opened, signal=signals.spider_opened)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        # Settings are validated (FreshRuntime.of) when the spider opens, as for the
        # other components: a bad FRESH_* value fails the crawl, not the crawler's creation.
        settings = crawler.settings
        url = settings.get("FRESH_WEBHOOK_URL", default_settings.FRESH_WEBHOOK_URL)
        if not flag(settings, "FRESH_ENABLED") or not url:
            raise NotConfigured("FRESH_WEBHOOK_URL is empty.")
        return cls(crawler)

    def _stat(self, name: str, count: int = 1) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(name, count)

    def _opened(self) -> None:
        self.runtime = runtime = FreshRuntime.of(self.crawler)
        self.config = config = runtime.config.changes
        name = getattr(self.crawler.spider, "name", "spider")
        self.outbox = Outbox(resolve_sqlite_path(config.webhook_outbox % {"spider": name}))
        runtime.outcome_listeners.append(self._visited)
        self._thread = threading.Thread(target=self._send_loop, name="fresh-webhook", daemon=True)
        self._thread.start()

    def _visited(
        self, state: PageState, outcome: Outcome, now: float, headers: Mapping[str, str | None]
    ) -> None:
        runtime = self.runtime
        assert runtime is not None
        assert self.outbox is not None
        if outcome is Outcome.NEW or outcome is Outcome.CHANGED:
            kind = outcome.value
        elif runtime.visits.became_gone:
            kind = "gone"
        else:
            return
        event = change_event(
            kind, now, state.url, state.key, state.host, runtime.visits.fields, state.last_crawl
        )
        try:
            self.outbox.add(event, time.time())
        except sqlite3.Error as exc:
            logger.error("scrapy_fresh webhook: cannot queue a change of %s: %s", state.url, exc)
            return
        self._stat("fresh/webhook/queued")
        self._wake.set()

    def _post(self, delivery: str, event: dict[str, Any], attempt: int) -> bool:
        config = self.config
        assert config is not None
        body = json.dumps(
            {"delivery_id": delivery, "attempt": attempt, "event": event}, ensure_ascii=False
        ).encode("utf-8")
        request = urllib.request.Request(  # http(s) checked at start-up
            config.webhook_url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                DELIVERY_HEADER: delivery,
                "X-Fresh-Attempt": str(attempt),
                SIGNATURE_HEADER: sign(config.webhook_secret, body),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=config.webhook_timeout_secs) as answer:
                return bool(200 <= answer.status < 300)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            logger.debug("scrapy_fresh webhook: delivery %s failed: %s", delivery, exc)
            return False

    def send_due(self) -> int:
        """One round: try every due delivery once; return how many are still waiting."""
        outbox, config = self.outbox, self.config
        assert outbox is not None
        assert config is not None
        for delivery, event, attempts in outbox.due(time.time()):
            if self._stop.is_set():
                break
            if self._post(delivery, event, attempts + 1):
                outbox.done(delivery)
                self._stat("fresh/webhook/delivered")
            else:
                wait = min(
                    config.webhook_backoff_secs * 2.0 ** min(attempts, 30),
                    config.webhook_max_backoff_secs,
                )
                outbox.failed(delivery, time.time() + wait)
                self._stat("fresh/webhook/failed")
        return len(outbox)

    def _send_loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.send_due()
                upcoming = self.outbox.next_try() if self.outbox is not None else None
            except sqlite3.Error as exc:
                logger.error("scrapy_fresh webhook outbox: %s", exc)
                upcoming = time.time() + 1.0
            wait = 1.0 if upcoming is None else max(0.0, min(upcoming - time.time(), 1.0))
            self._wake.wait(wait)
            self._wake.clear()

    def _closed(self, reason: str) -> None:
        outbox, config = self.outbox, self.config
        if outbox is None or config is None:
            return
        deadline = time.monotonic() + config.webhook_close_wait_secs
        while time.monotonic() < deadline and len(outbox):
            self._wake.set()
            time.sleep(0.05)
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(config.webhook_timeout_secs + 1)
        left = len(outbox)
        if left:
            self._stat("fresh/webhook/left", left)
            logger.warning(
                "scrapy_fresh webhook: %(n)d changes not delivered yet to %(url)s; they stay "
                "in %(path)s for the next crawl",
                {"n": left, "url": config.webhook_url, "path": outbox.path},
            )
        outbox.close()
