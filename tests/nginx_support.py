"""A real nginx for the crawl tests, and the sites it serves.

:class:`Nginx` runs ``nginx`` as a child process of the test (``daemon off``) on a free
127.0.0.1 port, with a configuration generated under a directory of the test: its
prefix, pid file, temp dirs, error log and access log all live there. nginx answers
with its own ``ETag``/``Last-Modified`` and its own 304 logic, which is the point: no
test server of ours decides what a conditional request gets.

The access log has one line per request, in a format of our own (:data:`LOG_FORMAT`),
read back by :meth:`Nginx.requests` as :class:`Logged` entries: status, body bytes
sent, method, path and the conditional headers the request carried.

Sites: :func:`make_dense_site` generates a link-dense site (every page links to many
others, each link twice, plain and with a ``#section`` fragment, as a documentation
table of contents does); :func:`copy_python_docs` copies the HTML documentation of
Python 3.11 (Debian package ``python3.11-doc``), resolving its symlinks.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import TracebackType

    from typing_extensions import Self

#: Where to look for nginx when it is not on PATH (Debian installs it in /usr/sbin).
NGINX_PLACES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")

#: Python's HTML documentation as Debian installs it (python3.11-doc).
PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")

#: The access log line: status, body bytes, method, URI and the conditional headers.
LOG_FORMAT = (
    "$status $body_bytes_sent $request_method $request_uri "
    '"$http_if_none_match" "$http_if_modified_since"'
)

INSTALL_HINT = "apt-get install nginx-light (or nginx); .ci/run installs it when missing"


def find_nginx() -> str | None:
    """The nginx executable, or None."""
    found = shutil.which("nginx")
    if found:
        return found
    return next((p for p in NGINX_PLACES if os.access(p, os.X_OK)), None)


def nginx_missing_reason() -> str | None:
    """Why nginx cannot be used here (a skip reason), or None when it can."""
    if find_nginx() is None:
        return f"nginx not found on PATH nor in {', '.join(NGINX_PLACES)} ({INSTALL_HINT})"
    return None


def python_docs_missing_reason() -> str | None:
    """Why the Python 3.11 HTML docs cannot be used here (a skip reason), or None."""
    if not (PYTHON_DOCS / "index.html").exists():
        return (
            f"{PYTHON_DOCS} not found (apt-get install python3.11-doc; .ci/run installs "
            "it when missing)"
        )
    return None


@dataclass(frozen=True)
class Logged:
    """One request in nginx's access log."""

    status: int
    body_bytes: int
    method: str
    path: str
    if_none_match: str
    if_modified_since: str

    @property
    def conditional(self) -> bool:
        return bool(self.if_none_match or self.if_modified_since)


def _parse_line(line: str) -> Logged:
    head, inm, _, ims, _ = line.rsplit('"', 4)
    status, size, method, path = head.split()
    return Logged(int(status), int(size), method, path, _header(inm), _header(ims))


def _header(logged: str) -> str:
    """A header value as logged: nginx writes ``-`` for none and ``\\x22`` for ``"``."""
    return "" if logged == "-" else logged.replace("\\x22", '"')


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


CONFIG = """\
{user}worker_processes 1;
daemon off;
master_process on;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 256; }}
http {{
    types {{
        text/html html;
        text/css css;
        application/javascript js;
        application/json json;
        application/xml xml;
        application/rss+xml rss;
        text/plain txt;
        image/png png;
        image/svg+xml svg;
    }}
    default_type application/octet-stream;
    log_format fresh '{log_format}';
    access_log {prefix}/access.log fresh;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    sendfile on;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        server_name localhost;
        root {root};
        index index.html;
{extra}
    }}
}}
"""


class Nginx:
    """nginx serving ``root`` on a free 127.0.0.1 port; state under ``prefix``.

    A context manager: ``with Nginx(root, prefix) as server: server.url("/a.html")``.
    Run as root (as in CI containers), the workers keep the user that started nginx
    (``user root``), since the test's directories are readable by it alone.
    """

    def __init__(self, root: Path, prefix: Path, extra: str = "") -> None:
        exe = find_nginx()
        if exe is None:
            raise RuntimeError(nginx_missing_reason())
        self.exe = exe
        self.root = root.resolve()
        self.prefix = prefix.resolve()
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._read = 0  # access log lines already returned by new_requests()
        #: More directives of the ``server`` block (``location = /old { return 301 /new; }``).
        self.extra = extra

    @property
    def access_log(self) -> Path:
        return self.prefix / "access.log"

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _config(self) -> Path:
        (self.prefix / "tmp").mkdir(parents=True, exist_ok=True)
        user = "user root root;\n" if os.geteuid() == 0 else ""
        conf = self.prefix / "nginx.conf"
        conf.write_text(
            CONFIG.format(
                user=user,
                prefix=self.prefix,
                root=self.root,
                port=self.port,
                log_format=LOG_FORMAT,
                extra=self.extra,
            )
        )
        return conf

    def start(self, port: int | None = None) -> None:
        """Start nginx on a free port, or on ``port`` (a stopped server started again
        where its clients knew it)."""
        for _attempt in range(5 if port is None else 1):  # a free port may be taken first
            self.port = _free_port() if port is None else port
            conf = self._config()
            self.process = subprocess.Popen(
                [
                    self.exe,
                    "-p",
                    str(self.prefix),
                    "-c",
                    str(conf),
                    "-e",
                    str(self.prefix / "error.log"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                        return
                except OSError:  # noqa: PERF203  # not listening yet
                    time.sleep(0.02)
            self.stop()
        errors = (self.prefix / "error.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"nginx did not start on 127.0.0.1:{self.port}: {errors}")

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)  # graceful: logs flushed
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        self.process = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def requests(self) -> list[Logged]:
        """Every request logged so far."""
        if not self.access_log.exists():
            return []
        return [_parse_line(line) for line in self.access_log.read_text().splitlines()]

    def new_requests(self) -> list[Logged]:
        """The requests logged since the last call (all of them on the first call)."""
        logged = self.requests()
        new, self._read = logged[self._read :], len(logged)
        return new


# -- sites ---------------------------------------------------------------------------------


def dense_page(n: int, pages: int, links: int, version: int = 0) -> str:
    """Page ``n`` of a dense site: links to the ``links`` pages after it (wrapping
    round), each plain and then with a ``#section`` fragment, plus the index."""
    targets = [(n + k) % pages for k in range(1, links + 1)]
    toc = "\n".join(f'<li><a href="p{t}.html">Page {t}</a></li>' for t in targets)
    sections = "\n".join(
        f'<li><a href="p{t}.html#s{t % 7}">Page {t}, section {t % 7}</a></li>' for t in targets
    )
    edit = f"<p>Edited {version} time(s).</p>" if version else ""
    return (
        f"<!DOCTYPE html><html><head><title>Page {n}</title></head><body>"
        f'<nav><a href="index.html">Home</a><ul>{toc}</ul></nav>'
        f'<article><h1 id="s0">Page {n}</h1><p>{prose(n, 60)}</p>'
        f"{edit}<ul>{sections}</ul></article></body></html>\n"
    )


WORDS = [
    *[
        "able",
        "acid",
        "aged",
        "also",
        "area",
        "army",
        "away",
        "baby",
        "back",
        "ball",
        "band",
        "bank",
        "base",
        "bath",
        "bear",
        "beat",
    ],
    *[
        "been",
        "beer",
        "bell",
        "belt",
        "best",
        "bill",
        "bird",
        "blow",
        "blue",
        "boat",
        "body",
        "bomb",
        "bond",
        "bone",
        "book",
        "boom",
    ],
    *[
        "born",
        "boss",
        "both",
        "bowl",
        "bulk",
        "burn",
        "bush",
        "busy",
        "call",
        "calm",
        "came",
        "camp",
        "card",
        "care",
        "case",
        "cash",
    ],
    *[
        "cast",
        "cell",
        "chat",
        "chip",
        "city",
        "club",
        "coal",
        "coat",
        "code",
        "cold",
        "come",
        "cook",
        "cool",
        "cope",
        "copy",
        "core",
    ],
    *["cost", "crew", "crop"],
]


def prose(n: int, count: int) -> str:
    """``count`` words of text of its own for page ``n`` (an edit then moves its
    simhash fingerprint by several bits, as an edit of real prose does)."""
    return " ".join(WORDS[(n * 31 + i * 17 + i * i) % len(WORDS)] for i in range(count)) + "."


def make_dense_site(root: Path, pages: int, links: int) -> list[str]:
    """Write a dense site of ``pages`` pages under ``root``; return its paths (index
    first). The index links to page 0 and page 0 onwards reaches every page."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.html").write_text(
        "<!DOCTYPE html><html><head><title>Index</title></head><body><article>"
        '<p>A dense site.</p><a href="p0.html">Start</a> <a href="p0.html#top">Top</a>'
        "</article></body></html>\n"
    )
    for n in range(pages):
        (root / f"p{n}.html").write_text(dense_page(n, pages, links))
    return ["/index.html", *(f"/p{n}.html" for n in range(pages))]


def edit_page(path: Path, version: int = 1) -> None:
    """Change a page's content where an item sees it (a first paragraph of its body), and
    so its size, ETag and Last-Modified."""
    text = path.read_text()
    body = re.search(r"<body[^>]*>", text)
    assert body is not None, path
    edit = f"<p>Edited again: version {version}. {prose(1000 + version, 12)}</p>"
    path.write_text(text[: body.end()] + edit + text[body.end() :])
    later = time.time() + version  # a later mtime even within the same second
    os.utime(path, (later, later))


def copy_python_docs(dest: Path) -> int:
    """Copy Python's HTML docs to ``dest``, symlinks resolved (some point into
    /usr/share/javascript); the archives (``_downloads``) and reST sources are left out.
    Return the number of HTML pages copied."""
    shutil.copytree(
        PYTHON_DOCS,
        dest,
        symlinks=False,
        ignore=shutil.ignore_patterns("_downloads", "_sources"),
        ignore_dangling_symlinks=True,
    )
    return sum(1 for _ in dest.rglob("*.html"))


def _iso(when: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


def shop_page(n: int, count: int) -> str:
    """Item page ``n`` of the small site: its text, links to the next two and home."""
    nxt = [(n + k) % count for k in (1, 2)]
    links = " ".join(
        f'<a href="i{t}.html">Item {t}</a> <a href="i{t}.html#buy">Buy {t}</a>' for t in nxt
    )
    return (
        f"<!DOCTYPE html><html><head><title>Item {n}</title></head><body>"
        f'<nav><a href="index.html">Home</a> {links}</nav>'
        f"<article><p>Item {n} costs {n * 3 + 1} euros.</p></article></body></html>\n"
    )


def make_small_site(root: Path, base: str, count: int = 30, missing: int = 2) -> list[str]:
    """A small site for Scrapy's built-in spiders, served at ``base`` (no trailing /).

    ``index.html`` links every item page (plain and with a fragment) and ``missing``
    pages that do not exist (404); ``sitemap_index.xml`` points to ``sitemap-items.xml``
    (every item page with its ``<lastmod>``); ``feed.xml`` is an RSS feed of the first
    ten items. Return the item pages' paths. :func:`write_site_maps` rewrites the
    sitemap and the feed after an edit.
    """
    root.mkdir(parents=True, exist_ok=True)
    links = "\n".join(
        f'<li><a href="i{n}.html">Item {n}</a> <a href="i{n}.html#price">price</a></li>'
        for n in range(count)
    )
    gone = "\n".join(f'<li><a href="m{k}.html">Missing {k}</a></li>' for k in range(missing))
    (root / "index.html").write_text(
        "<!DOCTYPE html><html><head><title>Shop</title></head><body>"
        f"<article><p>The shop.</p></article><ul>{links}\n{gone}</ul></body></html>\n"
    )
    for n in range(count):
        (root / f"i{n}.html").write_text(shop_page(n, count))
    write_site_maps(root, base, count)
    return [f"/i{n}.html" for n in range(count)]


def _write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless the file holds it already (its ETag stays the same then);
    a rewritten file gets a later mtime, so a new ETag, even within the same second."""
    if path.exists() and path.read_text() == text:
        return
    before = path.stat().st_mtime if path.exists() else 0.0
    path.write_text(text)
    later = max(time.time(), before + 1)
    os.utime(path, (later, later))


def write_site_maps(
    root: Path, base: str, count: int, titles: dict[int, str] | None = None
) -> None:
    """(Re)write the sitemap index, the child sitemap (``<lastmod>`` = each page's
    mtime) and the RSS feed (``titles`` overrides entry titles)."""
    _write_if_changed(
        root / "sitemap_index.xml",
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{base}/sitemap-items.xml</loc></sitemap></sitemapindex>\n",
    )
    urls = "".join(
        f"<url><loc>{base}/i{n}.html</loc>"
        f"<lastmod>{_iso((root / f'i{n}.html').stat().st_mtime)}</lastmod></url>"
        for n in range(count)
    )
    _write_if_changed(
        root / "sitemap-items.xml",
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>\n',
    )
    titles = titles or {}
    entries = "".join(
        f"<item><title>{titles.get(n, f'Item {n}')}</title><link>{base}/i{n}.html</link>"
        f"<guid>{base}/i{n}.html</guid></item>"
        for n in range(min(count, 10))
    )
    _write_if_changed(
        root / "feed.xml",
        '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel>'
        f"<title>Shop</title><link>{base}/</link><description>New items</description>"
        f"{entries}</channel></rss>\n",
    )


def linked_page(n: int, pages: int, links: int, text_bytes: int) -> str:
    """Page ``n`` of a benchmark site: about ``text_bytes`` of prose and ``links`` links,
    the first to the next page (so every page is reached), the others spread by a hash."""
    targets = [(n + 1) % pages] + [(n * 7919 + k * 104729) % pages for k in range(1, links)]
    nav = " ".join(f'<a href="p{t}.html">Page {t}</a>' for t in targets)
    paragraphs = []
    size, k = 0, 0
    while size < text_bytes:
        para = prose(n * 97 + k, 40)
        paragraphs.append(f"<p>{para}</p>")
        size += len(para) + 7
        k += 1
    return (
        f"<!DOCTYPE html><html><head><title>Page {n}</title></head><body>"
        f"<nav>{nav}</nav><article><h1>Page {n}</h1>{''.join(paragraphs)}</article>"
        "</body></html>\n"
    )


def make_linked_site(root: Path, pages: int, links: int, text_bytes: int) -> list[str]:
    """Write a benchmark site of ``pages`` pages (:func:`linked_page`) and an
    ``index.html`` linking page 0; return the paths."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.html").write_text(
        "<!DOCTYPE html><html><head><title>Index</title></head><body><article>"
        '<p>A benchmark site.</p><a href="p0.html">Start</a></article></body></html>\n'
    )
    for n in range(pages):
        (root / f"p{n}.html").write_text(linked_page(n, pages, links, text_bytes))
    return ["/index.html", *(f"/p{n}.html" for n in range(pages))]
