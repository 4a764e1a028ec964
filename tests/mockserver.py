"""A local test site on 127.0.0.x whose pages change when the test says so.

Page families (``N`` is 0..count-1), each a different validator behaviour:

* ``/v/N``  validators honoured: strong ETag + Last-Modified, 304 on a match.
* ``/i/N``  conditionals ignored (always 200 with a body) but HEAD replies carry
  ETag, Last-Modified and Content-Length.
* ``/n/N``  no validators at all.
* ``/c/N``  cosmetic churn: the footer has the request time and a rotating ad.
* ``/w/N``  weak ETag (``W/"..."``) honoured with 304.
* ``/r/N``  a fresh random ETag on every response (validators that never match).
* ``/gone/N`` 404 (even N) or 410 (odd N).
* ``/err/N`` 500 (even N) or a reply delayed past the test's timeout (odd N).
* ``/busy/N`` 503 with ``Retry-After: <retry_after>`` while ``retry_after`` is set, else
  404.
* ``/private/...`` disallowed by robots.txt.

``/`` links to every page (of the families in ``linked``); ``/robots.txt`` has a
Crawl-delay (configurable) and a ``Disallow: /private/``. The server logs every request
it serves (method, path, status, body bytes, request headers) so tests can check what
really crossed the wire.
"""

from __future__ import annotations

import hashlib
import random
import sys
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORDS = (  # noqa: SIM905
    "river market signal garden copper window harbor lantern meadow orbit canvas pepper "
    "thunder velvet quarry saddle timber violet walnut yonder anchor basket candle dagger "
    "ember falcon glacier hollow island jungle kettle ladder marble nectar oyster pillow "
    "quiver ribbon silver tunnel umbrella vessel wander zephyr"
).split(" ")

FAMILIES = ("v", "i", "n", "c", "w", "r", "gone", "err")


def _paragraph(rng: random.Random, words: int = 60) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


@dataclass
class Page:
    path: str
    paragraphs: list[str]
    version: int = 0
    modified: float = field(default_factory=time.time)

    def body(self, footer: str = "") -> bytes:
        paras = "".join(f"<p>{p}</p>" for p in self.paragraphs)
        return (
            f"<html><head><title>{self.path}</title></head><body>"
            f"<h1>Page {self.path}</h1><article>{paras}</article>"
            f"<footer>{footer}</footer></body></html>"
        ).encode()

    @property
    def etag(self) -> str:
        digest = hashlib.sha1(f"{self.path}:{self.version}".encode()).hexdigest()[:16]
        return f'"{digest}"'


@dataclass
class LoggedRequest:
    time: float
    method: str
    path: str
    status: int
    body_bytes: int
    headers: dict[str, str]


class MockSite:
    """The pages and the request log behind one server."""

    def __init__(
        self,
        count: int = 15,
        paragraphs: int = 8,
        seed: int = 1,
        crawl_delay: float | None = None,
        slow_secs: float = 3.0,
        linked: tuple[str, ...] = FAMILIES,
        retry_after: str | None = None,
    ) -> None:
        self.rng = random.Random(seed)
        self.count = count
        self.linked = linked  # the families ``/`` links to
        self.crawl_delay = crawl_delay
        self.slow_secs = slow_secs
        self.retry_after = retry_after
        self.lock = threading.Lock()
        self.pages: dict[str, Page] = {}
        for family in ("v", "i", "n", "c", "w", "r"):
            for n in range(count):
                path = f"/{family}/{n}"
                self.pages[path] = Page(
                    path,
                    [_paragraph(self.rng) for _ in range(paragraphs)],
                    modified=time.time() - 86400,
                )
        self.log: list[LoggedRequest] = []
        self.request_count = 0

    def paths(self, families: tuple[str, ...] = FAMILIES) -> list[str]:
        """Every page path of these families (robots-allowed, linked from ``/``)."""
        return [f"/{f}/{n}" for f in families for n in range(self.count)]

    def change(self, path: str) -> None:
        """Rewrite one paragraph of ``path``: a real change."""
        with self.lock:
            page = self.pages[path]
            i = self.rng.randrange(len(page.paragraphs))
            page.paragraphs[i] = _paragraph(self.rng)
            page.version += 1
            page.modified = max(time.time(), page.modified + 1)

    def change_same_length(self, path: str) -> None:
        """Reverse the words of one paragraph of ``path``: a real change that keeps the
        byte length (no header can show it)."""
        with self.lock:
            page = self.pages[path]
            words = page.paragraphs[0].rstrip(".").lower().split(" ")
            page.paragraphs[0] = " ".join(reversed(words)).capitalize() + "."
            page.version += 1
            page.modified = max(time.time(), page.modified + 1)

    def touch_cosmetic(self, path: str) -> None:
        """Bump the validators (ETag, Last-Modified) without changing the content."""
        with self.lock:
            page = self.pages[path]
            page.version += 1
            page.modified = max(time.time(), page.modified + 1)

    def requests_for(self, path: str) -> list[LoggedRequest]:
        with self.lock:
            return [r for r in self.log if r.path == path]

    def record(self, entry: LoggedRequest) -> None:
        with self.lock:
            self.log.append(entry)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        return

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def do_GET(self) -> None:
        self._serve(head=False)

    def _send(self, status: int, body: bytes, headers: dict[str, str], head: bool) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        if "Content-Type" not in headers:
            self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        sent = 0
        if not head and status != 304:
            self.wfile.write(body)
            sent = len(body)
        self.server.site.record(
            LoggedRequest(
                time.time(),
                self.command,
                self.path,
                status,
                sent,
                {k.lower(): v for k, v in self.headers.items()},
            )
        )

    def _serve(self, head: bool) -> None:
        site = self.server.site
        path = self.path.split("?", 1)[0]
        if path == "/robots.txt":
            lines = ["User-agent: *", "Disallow: /private/"]
            if site.crawl_delay is not None:
                lines.append(f"Crawl-delay: {site.crawl_delay:g}")
            self._send(
                200, ("\n".join(lines) + "\n").encode(), {"Content-Type": "text/plain"}, head
            )
            return
        if path == "/":
            links = "".join(f'<a href="{p}">{p}</a> ' for p in site.paths(site.linked))
            self._send(200, f"<html><body>{links}</body></html>".encode(), {}, head)
            return
        parts = path.strip("/").split("/")
        family = parts[0]
        if family == "gone":
            n = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
            self._send(404 if n % 2 == 0 else 410, b"gone", {}, head)
            return
        if family == "busy" and site.retry_after is not None:
            self._send(503, b"busy", {"Retry-After": site.retry_after}, head)
            return
        if family == "err":
            n = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
            if n % 2:
                time.sleep(site.slow_secs)
            self._send(500, b"error", {}, head)
            return
        page = site.pages.get(path)
        if page is None:
            self._send(404, b"not found", {}, head)
            return
        with site.lock:
            modified = page.modified
            etag = page.etag
            footer = ""
            if family == "c":
                footer = f"Served {time.time():.6f}. Ad: {random.choice(WORDS)}"
            body = page.body(footer)
        last_modified = formatdate(modified, usegmt=True)
        headers: dict[str, str] = {}
        if family in ("v", "i"):
            headers = {"ETag": etag, "Last-Modified": last_modified}
        elif family == "w":
            headers = {"ETag": "W/" + etag}
        elif family == "r":
            headers = {"ETag": f'"{random.getrandbits(64):x}"'}
        if family in ("v", "w"):
            inm = self.headers.get("If-None-Match")
            ims = self.headers.get("If-Modified-Since")
            if (inm is not None and inm.strip() == headers["ETag"]) or (
                inm is None and ims is not None and family == "v" and ims == last_modified
            ):
                self._send(304, b"", {**headers, "Content-Length": "0"}, head)
                return
        self._send(200, body, headers, head)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default listen backlog (5) overflows when a crawl opens many connections at
    # once; Linux then drops SYNs and the client retries one second later.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], site: MockSite) -> None:
        self.site = site
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and hung up on a slow page is not an error here.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class MockServer:
    """A running :class:`MockSite` on ``host`` (default 127.0.0.1) and a free port."""

    def __init__(self, site: MockSite | None = None, host: str = "127.0.0.1") -> None:
        self.site = site or MockSite()
        self.httpd = _Server((host, 0), self.site)
        self.host = host
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, daemon=True, kwargs={"poll_interval": 0.05}
        )

    def __enter__(self) -> MockServer:  # noqa: PYI034
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"
