"""Pushed change notifications: the Python API, the CLI and the IndexNow-style server
(a real server on 127.0.0.1 writing a real SQLite store)."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from scrapy_fresh.keys import url_key
from scrapy_fresh.notify.record import record_changes
from scrapy_fresh.notify.server import NotifyConfig, NotifyServer
from scrapy_fresh.providers.ledger import iter_trust
from scrapy_fresh.store.base import Provider, Status
from scrapy_fresh.store.memory import MemoryStore
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.notify_support import KEY, NOW, known, request, serving, start_command, two_page_store

# -- the Python API ---------------------------------------------------------------------


def test_known_pages_become_due_now_and_smart() -> None:
    store = MemoryStore()
    store.put_many(
        [
            known("https://a.test/1"),
            known(
                "https://a.test/2",
                request={"url": "https://a.test/2", "meta": {"fresh_provider": "normal"}},
            ),
            known("https://a.test/3", status=Status.GONE, errors=2),
        ]
    )
    result = record_changes(
        store, ["https://a.test/1", "https://a.test/2", "https://a.test/3"], NOW - 60, now=NOW
    )
    assert sorted(result.updated) == ["https://a.test/1", "https://a.test/2", "https://a.test/3"]
    one, two, three = (store.get(url_key(f"https://a.test/{n}")) for n in (1, 2, 3))
    assert one is not None
    assert two is not None
    assert three is not None
    assert (one.provider, one.next_due, one.past_updates) == (Provider.SMART, NOW, [NOW - 60])
    assert two.provider is Provider.NORMAL  # fixed by its request meta
    assert two.next_due == NOW
    assert (three.status, three.errors) == (Status.IDLE, 0)  # pushed: it is back
    assert [(t.kind, t.host) for t in iter_trust(store)] == [("push", "a.test")]
    assert store.due(NOW, 10)[0].key in {one.key, two.key, three.key}


def test_unknown_urls_are_added_unless_known_only_and_bad_ones_rejected() -> None:
    store = MemoryStore()
    result = record_changes(
        store,
        ["https://b.test/new", "javascript:alert(1)", "x" * 3000, "https://b.test/new"],
        now=NOW,
    )
    assert result.added == ["https://b.test/new"]
    assert set(result.rejected) == {"javascript:alert(1)", "x" * 3000}
    state = store.get(url_key("https://b.test/new"))
    assert state is not None
    assert (state.status, state.next_due, state.past_updates) == (Status.QUEUED, NOW, [NOW])
    skipped = record_changes(store, ["https://b.test/other"], now=NOW, add_unknown=False)
    assert skipped.rejected == {"https://b.test/other": "not in the store"}
    assert len(store) == 1


def test_a_change_in_the_future_is_refused() -> None:
    with pytest.raises(ValueError, match="announcement"):
        record_changes(MemoryStore(), ["https://a.test/"], NOW + 86400, now=NOW)


# -- the server -------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = two_page_store(tmp_path / "state.sqlite")
    yield s
    s.close()


@pytest.fixture
def server(store: SQLiteStore) -> Iterator[NotifyServer]:
    config = NotifyConfig(keys={"127.0.0.1": frozenset({KEY})}, max_body_bytes=4096, max_urls=5)
    yield from serving(store, config, lambda: NOW)


def call(
    server: NotifyServer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any], dict[str, str]]:
    status, raw, answer_headers = request(server, method, path, body, headers)
    return status, json.loads(raw) if raw else {}, answer_headers


def post(server: NotifyServer, data: Any, **headers: str) -> tuple[int, dict[str, Any]]:
    body = data if isinstance(data, bytes) else json.dumps(data).encode()
    status, answer, _ = call(
        server,
        "POST",
        "/indexnow",
        body,
        {"Content-Type": "application/json; charset=utf-8", **headers},
    )
    return status, answer


def due_urls(store: SQLiteStore) -> list[str]:
    return sorted(s.url for s in store.due(NOW, 100))


def test_post_with_an_allowed_key_records_the_changes(
    server: NotifyServer, store: SQLiteStore
) -> None:
    status, answer = post(
        server,
        {"host": "127.0.0.1", "key": KEY, "urlList": ["http://127.0.0.1/a", "http://127.0.0.1/c"]},
    )
    assert (status, answer) == (200, {"accepted": 2, "added": 1, "updated": 1})
    assert due_urls(store) == ["http://127.0.0.1/a", "http://127.0.0.1/c"]
    a = store.get(url_key("http://127.0.0.1/a"))
    assert a is not None
    assert (a.provider, a.past_updates) == (Provider.SMART, [NOW])


def test_get_with_an_allowed_key_records_one_change(
    server: NotifyServer, store: SQLiteStore
) -> None:
    status, answer, _ = call(server, "GET", f"/indexnow?url=http://127.0.0.1/b&key={KEY}")
    assert (status, answer["accepted"]) == (200, 1)
    assert due_urls(store) == ["http://127.0.0.1/b"]


@pytest.mark.parametrize(
    ("request_", "status", "words"),
    [
        (
            (
                "POST",
                {"host": "127.0.0.1", "key": "wrongkey123", "urlList": ["http://127.0.0.1/a"]},
            ),
            403,
            "not allowed",
        ),
        (
            ("POST", {"host": "127.0.0.1", "key": "short", "urlList": ["http://127.0.0.1/a"]}),
            422,
            "8-128",
        ),
        (
            (
                "POST",
                {
                    "host": "127.0.0.1",
                    "key": KEY,
                    "urlList": ["http://127.0.0.1/a", "http://evil.test/x"],
                },
            ),
            422,
            "host",
        ),
        (("POST", {"host": "127.0.0.1", "key": KEY, "urlList": []}), 400, "urlList"),
        (
            ("POST", {"host": "127.0.0.1", "key": KEY, "urlList": ["ftp://127.0.0.1/a"]}),
            400,
            "http",
        ),
        (("POST", {"key": KEY, "urlList": ["http://127.0.0.1/a"]}), 400, "host"),
        (("POST", ["not", "an", "object"]), 400, "object"),
        (("POST", b"{not json"), 400, "JSON"),
        (
            (
                "POST",
                {
                    "host": "127.0.0.1",
                    "key": KEY,
                    "urlList": [f"http://127.0.0.1/{n}" for n in range(6)],
                },
            ),
            413,
            "at most 5",
        ),
        (
            ("GET", f"/indexnow?url=http://127.0.0.1/a&key={KEY}&url=http://127.0.0.1/b"),
            400,
            "one url",
        ),
        (("GET", "/indexnow?url=http://127.0.0.1/a&key=nottheright1"), 403, "not allowed"),
        (("GET", f"/elsewhere?url=http://127.0.0.1/a&key={KEY}"), 404, "not found"),
    ],
)
def test_bad_requests_get_the_right_status_and_write_nothing(
    server: NotifyServer, store: SQLiteStore, request_: tuple[str, Any], status: int, words: str
) -> None:
    method, what = request_
    if method == "POST":
        got, answer = post(server, what)
    else:
        got, answer, _ = call(server, "GET", what)
    assert got == status
    assert words in answer["error"]
    assert due_urls(store) == []


def test_oversized_bodies_are_refused_unread(server: NotifyServer, store: SQLiteStore) -> None:
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(str(host), port, timeout=10)
    conn.putrequest("POST", "/indexnow")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(10 << 20))  # announced, never sent
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 413
    assert "over the limit of 4096" in json.loads(response.read())["error"]
    conn.close()
    assert due_urls(store) == []


def test_methods_lengths_and_types(server: NotifyServer) -> None:
    status, _, headers = call(server, "PUT", "/indexnow", b"{}")
    assert (status, headers["allow"]) == (405, "GET, POST")
    status, answer = post(server, {"host": "127.0.0.1"}, **{"Content-Type": "text/plain"})
    assert (status, "JSON" in answer["error"]) == (415, True)
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(str(host), port, timeout=10)
    conn.putrequest("POST", "/indexnow")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    conn.send(b"0\r\n\r\n")
    assert conn.getresponse().status == 411
    conn.close()
    assert server.counts[405] == 1


class _KeyFiles(BaseHTTPRequestHandler):
    files: ClassVar[dict[str, bytes]] = {}

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        body = self.files.get(self.path)
        if body is None:
            self.send_response(302 if self.path == "/redirect.txt" else 404)
            self.send_header("Location", f"http://127.0.0.1:1/{KEY}.txt")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_key_files_are_checked_as_the_protocol_says(store: SQLiteStore) -> None:
    _KeyFiles.files = {f"/{KEY}.txt": f"{KEY}\n".encode(), "/other.txt": b"someotherkey1"}
    files = ThreadingHTTPServer(("127.0.0.1", 0), _KeyFiles)
    threading.Thread(target=files.serve_forever, daemon=True).start()
    site = f"127.0.0.1:{files.server_address[1]}"
    config = NotifyConfig(verify_key_files=True, key_file_scheme="http", key_file_timeout=2)
    try:
        with NotifyServer(store, config, ("127.0.0.1", 0), clock=lambda: NOW) as server:
            threading.Thread(target=server.serve_forever, daemon=True).start()
            url = f"http://{site}/page"
            ok = post(server, {"host": site, "key": KEY, "urlList": [url]})
            assert ok == (200, {"accepted": 1, "added": 1, "updated": 0})
            for location, status in (
                (f"http://{site}/other.txt", 403),  # the file holds another key
                (f"http://{site}/redirect.txt", 403),  # redirects are not followed
                (f"http://{site}/missing.txt", 403),
                (f"http://evil.test/{KEY}.txt", 422),  # key files live on the host
            ):
                got, answer = post(
                    server,
                    {
                        "host": site,
                        "key": "anotherkey99",
                        "keyLocation": location,
                        "urlList": [url],
                    },
                )
                assert got == status, (location, answer)
            # no key file server at all: refused after the timeout, not hung
            started = time.monotonic()
            got, _ = post(
                server, {"host": "127.0.0.1:1", "key": KEY, "urlList": ["http://127.0.0.1:1/x"]}
            )
            assert got == 403
            assert time.monotonic() - started < 10
            server.shutdown()
    finally:
        files.shutdown()
        files.server_close()
    assert [s.url for s in store.due(NOW, 10)] == [f"http://{site}/page"]


# -- the command line -------------------------------------------------------------------


def test_notify_command_records_into_the_store(tmp_path: Path, python_env: dict[str, str]) -> None:
    db = tmp_path / "s.sqlite"
    s = SQLiteStore(db)
    s.put(known("http://127.0.0.1/a", next_due=time.time() + 86400))
    s.close()
    cmd = [
        sys.executable,
        "-m",
        "scrapy_fresh.commands",
        "notify",
        "--sqlite-path",
        str(db),
        "--json",
        "http://127.0.0.1/a",
        "mailto:nobody",
    ]
    out = subprocess.run(
        cmd, capture_output=True, text=True, env=python_env, cwd=tmp_path, check=False
    )
    assert out.returncode == 1, out.stderr  # one URL was rejected
    data = json.loads(out.stdout)
    assert data["updated"] == ["http://127.0.0.1/a"]
    assert data["rejected"] == {"mailto:nobody": "not an absolute http(s) URL"}
    s = SQLiteStore(db)
    try:
        assert [x.url for x in s.due(time.time(), 10)] == ["http://127.0.0.1/a"]
    finally:
        s.close()
    bad = subprocess.run(
        [*cmd[:-2], "--at", "next tuesday", "http://127.0.0.1/a"],
        capture_output=True,
        text=True,
        env=python_env,
        cwd=tmp_path,
        check=False,
    )
    assert bad.returncode == 2
    assert "--at ('next tuesday')" in bad.stderr


def test_notify_server_command_refuses_to_run_without_authentication(
    tmp_path: Path, python_env: dict[str, str]
) -> None:
    db = tmp_path / "s.sqlite"
    SQLiteStore(db).close()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy_fresh.commands",
            "notify-server",
            "--sqlite-path",
            str(db),
            "--port",
            "0",
        ],
        capture_output=True,
        text=True,
        env=python_env,
        timeout=60,
        check=False,
    )
    assert out.returncode == 2
    assert "unauthenticated writes are never accepted" in out.stderr


@pytest.mark.slow
def test_notify_server_command_serves_and_writes(
    tmp_path: Path, python_env: dict[str, str]
) -> None:
    db = tmp_path / "s.sqlite"
    SQLiteStore(db).close()
    process, port = start_command(db, python_env, "--key", f"127.0.0.1={KEY}")
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", f"/indexnow?url=http://127.0.0.1/z&key={KEY}")
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        process.terminate()
        process.communicate(timeout=10)
    s = SQLiteStore(db)
    try:
        assert [x.url for x in s.due(time.time() + 1, 10)] == ["http://127.0.0.1/z"]
    finally:
        s.close()
