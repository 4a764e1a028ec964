"""The demo site over HTTP/1.1 on 127.0.0.1 (standard library ``http.server``).

Validators are honoured: ``If-None-Match`` (pages with an ETag) and
``If-Modified-Since`` (pages with Last-Modified) get ``304 Not Modified``. HEAD gets the
headers of GET. Control endpoints, never logged: ``GET /_demo/clock``,
``GET /_demo/truth[?since=N]`` (:meth:`~scrapy_fresh.demo.model.DemoSite.truth`) and
``POST /_demo/advance?secs=S`` (jump the clock ahead).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import threading
from email.utils import parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from scrapy_fresh.demo.model import DemoSite
from scrapy_fresh.demo.render import home as render_home
from scrapy_fresh.demo.render import http_date, render, robots

__all__ = ["DemoServer"]

logger = logging.getLogger(__name__)

_REASONS = {
    200: "OK",
    304: "Not Modified",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    410: "Gone",
    503: "Service Unavailable",
}


def etag_of(path: str, version: int) -> str:
    """The strong ETag of ``path`` at ``version``."""
    return '"' + hashlib.sha1(f"{path}:{version}".encode()).hexdigest()[:16] + '"'


def _etag_matches(header: str, etag: str) -> bool:
    if header.strip() == "*":
        return True
    tags = [t.strip() for t in header.split(",")]
    return any((t.removeprefix("W/")) == etag for t in tags)


def _not_modified_since(header: str, modified: float) -> bool:
    try:
        since = parsedate_to_datetime(header).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return False
    return int(modified) <= since


class _Handler(BaseHTTPRequestHandler):
    server: DemoServer
    protocol_version = "HTTP/1.1"
    server_version = "scrapy-fresh-demo/1"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        url = urlsplit(self.path)
        if url.path != "/_demo/advance":
            self._send(405, b"POST only to /_demo/advance\n", {}, head=False, log=False)
            return
        try:
            secs = float(parse_qs(url.query).get("secs", ["0"])[0])
            now = self.server.site.clock.advance(secs)
        except ValueError as exc:
            self._send(400, f"secs: {exc}\n".encode(), {}, head=False, log=False)
            return
        self._json({"now": now}, head=False)

    def _send(
        self,
        status: int,
        body: bytes,
        headers: dict[str, str],
        *,
        head: bool,
        log: bool = True,
        at: float | None = None,
    ) -> None:
        lines = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}",
            f"Server: {self.server_version}",
            f"Date: {self.date_time_string()}",
        ]
        headers = dict(headers)
        headers.setdefault("Content-Type", "text/html; charset=utf-8")
        if status == 304:
            headers.pop("Content-Type")
        else:
            headers["Content-Length"] = str(len(body))
        lines += [f"{name}: {value}" for name, value in headers.items()]
        head_bytes = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        payload = b"" if head or status == 304 else body
        if log:  # before the answer leaves: the log is in the order requests were answered
            site = self.server.site
            site.record(
                site.clock.now() if at is None else at,
                self.command,
                urlsplit(self.path).path,
                status,
                len(head_bytes) + len(payload),
                len(payload),
                self.headers.get("User-Agent", ""),
            )
        self.wfile.write(head_bytes + payload)
        self.wfile.flush()

    def _json(self, data: Any, *, head: bool) -> None:
        body = json.dumps(data).encode()
        self._send(200, body, {"Content-Type": "application/json"}, head=head, log=False)

    def _serve(self, head: bool) -> None:
        site = self.server.site
        url = urlsplit(self.path)
        path = url.path
        if path.startswith("/_demo/"):
            self._control(path, url.query, head)
            return
        now = site.clock.now()
        base = self.server.base_url
        if path == "/robots.txt":
            self._send(200, robots(site, base), {"Content-Type": "text/plain"}, head=head, at=now)
            return
        if path == "/":
            self._send(200, render_home(site), {}, head=head, at=now)
            return
        if path.startswith("/private/"):
            self._send(
                200,
                b"<html><body>Private: robots.txt says keep out.</body></html>",
                {},
                head=head,
                at=now,
            )
            return
        spec = site.pages.get(path)
        if spec is None or site.gone(path, now):
            status = spec.gone_status if spec is not None else 404
            self._send(status, b"<html><body>Not here.</body></html>", {}, head=head, at=now)
            return
        if site.flaky_now(path):
            self._send(
                503,
                b"<html><body>Busy, come back later.</body></html>",
                {"Retry-After": str(site.retry_after)},
                head=head,
                at=now,
            )
            return
        headers: dict[str, str] = {}
        modified = site.modified(path, now)
        etag = etag_of(path, site.version(path, now))
        if spec.validators == "etag":
            headers["ETag"] = etag
        if spec.validators in ("etag", "lm"):
            headers["Last-Modified"] = http_date(modified)
        inm = self.headers.get("If-None-Match")
        ims = self.headers.get("If-Modified-Since")
        if spec.validators == "etag" and inm is not None:
            fresh = _etag_matches(inm, etag)
        elif spec.validators in ("etag", "lm") and ims is not None:
            fresh = _not_modified_since(ims, modified)
        else:
            fresh = False
        if fresh:
            self._send(304, b"", headers, head=head, at=now)
            return
        body, content_type = render(site, spec, now, base)
        headers["Content-Type"] = content_type
        self._send(200, body, headers, head=head, at=now)

    def _control(self, path: str, query: str, head: bool) -> None:
        site = self.server.site
        if path == "/_demo/clock":
            self._json(
                {"now": site.clock.now(), "speed": site.clock.speed, "started": site.started},
                head=head,
            )
        elif path == "/_demo/truth":
            try:
                since = max(0, int(parse_qs(query).get("since", ["0"])[0]))
            except ValueError:
                self._send(400, b"since must be a whole number\n", {}, head=head, log=False)
                return
            self._json(site.truth(since), head=head)
        else:
            self._send(404, b"unknown control endpoint\n", {}, head=head, log=False)


class DemoServer(ThreadingHTTPServer):
    """A :class:`~scrapy_fresh.demo.model.DemoSite` served on ``host:port`` (0: a free port).

    Use it as a context manager (serves in a thread) or call :meth:`serve_forever`.
    """

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, site: DemoSite, host: str = "127.0.0.1", port: int = 0) -> None:
        self.site = site
        super().__init__((host, port), _Handler)
        self.host = host
        self.port = int(self.server_address[1])
        self.base_url = f"http://{host}:{self.port}"
        self._thread: threading.Thread | None = None

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return  # a client that hung up
        super().handle_error(request, client_address)

    def url(self, path: str = "/") -> str:
        return self.base_url + path

    def __enter__(self) -> DemoServer:  # noqa: PYI034
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
