"""An IndexNow-style endpoint that records pushed change notifications into the store.

Content providers (the paper's smart users, seed ``xu-content-provider-friendly-crawler``
Section 3.3, who "send a signal every time" they update) tell us which URLs changed:

* ``POST /indexnow`` with a JSON body ``{"host": ..., "key": ..., "keyLocation": ...
  (optional), "urlList": [...]}``;
* ``GET /indexnow?url=...&key=...`` (``keyLocation`` optional) for one URL.

Every write is authenticated: the key must be on the allow-list for the host
(:attr:`NotifyConfig.keys`), or, when :attr:`NotifyConfig.verify_key_files` is on, the
host must publish it as the IndexNow protocol says: a text file holding the key at
``keyLocation`` (on the same host) or ``<scheme>://<host>/<key>.txt``, fetched with a
timeout and a size limit, without following redirects, and remembered for a while.

Answers: 200 (recorded; JSON body with counts), 400 (malformed request), 403 (key not
valid for the host), 404 (another path), 405 (another method), 411 (POST without a
length), 413 (body or URL list too large), 415 (POST body not JSON), 422 (a URL of
another host, or a key that does not match the protocol's format), 503 (the store
failed). Nothing is written unless the whole request is accepted.
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.notify import check_url, record_changes
from scrapy_fresh.store.base import StateStore

__all__ = ["KEY_PATTERN", "NotifyConfig", "NotifyServer", "verify_key_file"]

logger = logging.getLogger(__name__)

#: IndexNow keys: 8 to 128 characters of a-z, A-Z, 0-9 and "-".
KEY_PATTERN = re.compile(r"^[A-Za-z0-9-]{8,128}$")
_PATH = "/indexnow"


@dataclass
class NotifyConfig:
    """How :class:`NotifyServer` authenticates and bounds requests.

    :param keys: host -> keys allowed to notify about that host's URLs.
    :param verify_key_files: also accept a key the host publishes in its key file.
    :param key_file_scheme: ``https`` (the protocol's) or ``http`` (local tests).
    :param key_file_timeout: seconds to wait for a key file.
    :param key_file_ttl: seconds a key file check is remembered (failures: a tenth).
    :param max_body_bytes: largest POST body read.
    :param max_urls: most URLs in one request (IndexNow allows 10,000).
    :param add_unknown: add URLs the store does not know as new records.
    """

    keys: Mapping[str, frozenset[str]] = field(default_factory=dict)
    verify_key_files: bool = False
    key_file_scheme: str = "https"
    key_file_timeout: float = 5.0
    key_file_ttl: float = 3600.0
    max_body_bytes: int = 1024 * 1024
    max_urls: int = 10_000
    add_unknown: bool = True

    def __post_init__(self) -> None:
        if self.key_file_scheme not in ("http", "https"):
            raise ValueError(
                f"key_file_scheme ({self.key_file_scheme!r}) must be 'http' or 'https'."
            )
        self.keys = {h.lower(): frozenset(k) for h, k in self.keys.items()}
        for host, keys in self.keys.items():
            for key in keys:
                if not KEY_PATTERN.match(key):
                    raise ValueError(
                        f"key {key!r} for {host} must be 8-128 characters of a-z, A-Z, 0-9, '-'."
                    )


def _hostname(host: str) -> str:
    """``host`` without a ``:port``."""
    name, sep, port = host.rpartition(":")
    return name if sep and port.isdigit() else host


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def verify_key_file(url: str, key: str, timeout: float) -> bool:
    """Whether ``url`` answers 200 with a body whose text is ``key`` (redirects refused)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(
            host, parts.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        conn = http.client.HTTPConnection(host, parts.port, timeout=timeout)
    try:
        conn.request("GET", parts.path or "/", headers={"User-Agent": "scrapy-fresh-notify"})
        response = conn.getresponse()
        if response.status != 200:
            return False
        body = response.read(len(key) + 256)
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()
    return body.decode("utf-8", "replace").strip() == key


class _Handler(BaseHTTPRequestHandler):
    server: NotifyServer
    protocol_version = "HTTP/1.1"
    timeout = 15  # a client that stops sending is dropped

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("notify-server: " + format, *args)

    def _answer(self, status: int, data: dict[str, Any], headers: Mapping[str, str] = {}) -> None:
        body = (json.dumps(data) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        if status >= 400:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def _refuse_method(self) -> None:
        self.server.count(405)
        self._answer(
            405,
            {"error": f"method {self.command} not allowed; use GET or POST"},
            {"Allow": "GET, POST"},
        )

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _refuse_method

    def do_GET(self) -> None:
        self._handle(self._from_query)

    def do_POST(self) -> None:
        self._handle(self._from_body)

    def _handle(self, parse: Callable[[], tuple[str, str, str | None, list[str]]]) -> None:
        if urlsplit(self.path).path.rstrip("/") != _PATH:
            self.server.count(404)
            self._answer(404, {"error": f"not found; notifications go to {_PATH}"})
            return
        try:
            host, key, location, urls = parse()
            self.server.authorise(host, key, location)
            result = self.server.record(urls)
        except _Refused as exc:
            self.server.count(exc.status)
            self._answer(exc.status, {"error": exc.message})
            return
        self.server.count(200)
        self._answer(
            200,
            {
                "accepted": result.accepted,
                "added": len(result.added),
                "updated": len(result.updated),
            },
        )

    def _from_query(self) -> tuple[str, str, str | None, list[str]]:
        query = parse_qs(urlsplit(self.path).query, max_num_fields=8)
        urls, keys = query.get("url", []), query.get("key", [])
        if len(urls) != 1 or len(keys) != 1:
            raise _Refused(400, "expected one url and one key parameter")
        locations = query.get("keyLocation", [])
        parts = urlsplit(urls[0])
        host = (parts.hostname or "").lower()
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        self.server.check_urls(host, urls)
        return host, keys[0], locations[0] if locations else None, urls

    def _from_body(self) -> tuple[str, str, str | None, list[str]]:
        length_text = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or length_text is None:
            raise _Refused(411, "a POST needs a Content-Length (no chunked bodies)")
        try:
            length = int(length_text)
        except ValueError:
            raise _Refused(400, "Content-Length is not a number") from None
        if length < 0:
            raise _Refused(400, "Content-Length is negative")
        limit = self.server.config.max_body_bytes
        if length > limit:
            raise _Refused(413, f"body of {length} bytes is over the limit of {limit}")
        ctype = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if ctype not in ("application/json", "text/json"):
            raise _Refused(415, "the body must be JSON (Content-Type: application/json)")
        raw = self.rfile.read(length)
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise _Refused(400, "the body is not valid UTF-8 JSON") from None
        if not isinstance(data, dict):
            raise _Refused(400, "the body must be a JSON object with host, key and urlList")
        host, key, urls = data.get("host"), data.get("key"), data.get("urlList")
        location = data.get("keyLocation")
        if not isinstance(host, str) or not host or not isinstance(key, str):
            raise _Refused(400, "host and key must be strings")
        if not isinstance(urls, list) or not urls:
            raise _Refused(400, "urlList must be a non-empty list of URLs")
        if location is not None and not isinstance(location, str):
            raise _Refused(400, "keyLocation must be a string")
        if len(urls) > self.server.config.max_urls:
            raise _Refused(413, f"{len(urls)} URLs; at most {self.server.config.max_urls}")
        self.server.check_urls(host.lower(), urls)
        return host.lower(), key, location, urls


class NotifyServer(ThreadingHTTPServer):
    """The endpoint, recording into ``store``; ``with NotifyServer(...) as s: s.serve()``.

    :param store: where notifications are recorded (thread-safe use is serialised here).
    :param config: authentication and limits.
    :param address: (host, port) to listen on; port 0 picks a free one.
    :param clock: returns the current Unix time.
    """

    daemon_threads = True
    request_queue_size = 64

    def __init__(
        self,
        store: StateStore,
        config: NotifyConfig,
        address: tuple[str, int] = ("127.0.0.1", 0),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self._store_lock = threading.Lock()
        self._verified: dict[tuple[str, str], tuple[bool, float]] = {}
        self._verified_lock = threading.Lock()
        self.counts: dict[int, int] = {}
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}{_PATH}"

    def count(self, status: int) -> None:
        with self._verified_lock:
            self.counts[status] = self.counts.get(status, 0) + 1

    # -- checks ------------------------------------------------------------------------

    def check_urls(self, host: str, urls: list[Any]) -> None:
        for url in urls:
            problem = check_url(url)
            if problem is not None:
                raise _Refused(400, f"{str(url)[:200]!r} is {problem}")
            if (urlsplit(url).hostname or "").lower() != _hostname(host):
                raise _Refused(422, f"{url[:200]!r} does not belong to the host {host!r}")

    def authorise(self, host: str, key: str, location: str | None) -> None:
        if not KEY_PATTERN.match(key):
            raise _Refused(422, "the key must be 8-128 characters of a-z, A-Z, 0-9 and '-'")
        if key in self.config.keys.get(host, ()) or key in self.config.keys.get(
            _hostname(host), ()
        ):
            return
        if not self.config.verify_key_files:
            raise _Refused(403, f"the key is not allowed for {host}")
        if location is not None:
            loc = urlsplit(location)
            if (loc.hostname or "").lower() != _hostname(host) or loc.scheme not in (
                "http",
                "https",
            ):
                raise _Refused(422, "keyLocation must be a URL on the host itself")
            file_url = location
        else:
            file_url = f"{self.config.key_file_scheme}://{host}/{key}.txt"
        if not self._key_file_ok(host, key, file_url):
            raise _Refused(403, f"the key was not found in the key file of {host}")

    def _key_file_ok(self, host: str, key: str, file_url: str) -> bool:
        now = self.clock()
        with self._verified_lock:
            cached = self._verified.get((host, key))
        if cached is not None and cached[1] > now:
            return cached[0]
        ok = verify_key_file(file_url, key, self.config.key_file_timeout)
        ttl = self.config.key_file_ttl if ok else self.config.key_file_ttl / 10
        with self._verified_lock:
            if len(self._verified) > 10_000:
                self._verified.clear()
            self._verified[(host, key)] = (ok, now + ttl)
        return ok

    # -- writing -----------------------------------------------------------------------

    def record(self, urls: list[str]) -> Any:
        try:
            with self._store_lock:
                result = record_changes(
                    self.store, urls, now=self.clock(), add_unknown=self.config.add_unknown
                )
                self.store.flush()
        except StoreError as exc:
            logger.error("notify-server: the store failed: %s", exc)
            raise _Refused(503, "the store is not available; try again later") from None
        logger.info("notify-server: %d URLs recorded (%d new)", result.accepted, len(result.added))
        return result
