"""What the notify tests share: records, a notify-server on 127.0.0.1 and a client.

(Imported as ``tests.notify_support``: test modules are imported by path, not by name.)
"""

from __future__ import annotations

import http.client
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from scrapy_fresh.keys import url_host, url_key
from scrapy_fresh.notify.server import NotifyConfig, NotifyServer
from scrapy_fresh.store.base import PageState, Status
from scrapy_fresh.store.sqlite import SQLiteStore

NOW = 1_700_000_000.0
KEY = "a1b2c3d4e5f6"


def known(url: str, **fields: Any) -> PageState:
    """A record crawled an hour before ``NOW``, due a day after."""
    defaults: dict[str, Any] = {
        "status": Status.IDLE,
        "last_crawl": NOW - 3600,
        "next_due": NOW + 86400,
        "request": {"url": url},
    }
    return PageState(url_key(url), url, host=url_host(url), **{**defaults, **fields})


def two_page_store(path: Path) -> SQLiteStore:
    """A real SQLite store holding ``http://127.0.0.1/a`` and ``/b``."""
    store = SQLiteStore(path)
    store.put_many([known("http://127.0.0.1/a"), known("http://127.0.0.1/b")])
    return store


def serving(
    store: SQLiteStore, config: NotifyConfig, clock: Callable[[], float]
) -> Iterator[NotifyServer]:
    """A notify-server on a free port of 127.0.0.1, in a thread, while iterated."""
    with NotifyServer(store, config, ("127.0.0.1", 0), clock=clock) as server:
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        thread.start()
        yield server
        server.shutdown()


def request(
    server: NotifyServer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    source: str = "127.0.0.1",
) -> tuple[int, bytes, dict[str, str]]:
    """One request from ``source``: status, body and lower-cased headers."""
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(str(host), port, timeout=10, source_address=(source, 0))
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def start_command(
    db: Path, env: dict[str, str], *options: str
) -> tuple[subprocess.Popen[str], int]:
    """``scrapy-fresh notify-server`` on a free port; the process and the port it says."""
    command = ["--sqlite-path", str(db), "--port", "0", *options]
    process = subprocess.Popen(
        [sys.executable, "-m", "scrapy_fresh.commands", "notify-server", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("notify-server: http://127.0.0.1:"), line
    return process, int(line.split("127.0.0.1:", 1)[1].split("/", 1)[0])
