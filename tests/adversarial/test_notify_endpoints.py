"""The notify-server's endpoints under attack (issue 18): a real server on 127.0.0.1.

Host bypasses (the URL tricks of :mod:`tests.adversarial.tricks`), hostile bodies,
slow clients and too many connections: each gets a 4xx answer or a closed connection,
is counted, and nothing reaches the store that Scrapy would fetch from another host.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, settings

from scrapy_fresh.notify.server import NotifyConfig, NotifyServer
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.adversarial.tricks import BYPASS, COVERED, fetched_from, urls
from tests.notify_support import KEY, NOW, request, serving

# -- host bypasses ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NotifyServer]:
    store = SQLiteStore(Path(tmp_path_factory.mktemp("bypass")) / "s.sqlite")
    config = NotifyConfig(
        keys={COVERED: frozenset({KEY})}, rate_limit=0, host_rate_limit=0, max_urls=10
    )
    yield from serving(store, config, lambda: NOW)
    store.close()


def post(server: NotifyServer, url: str) -> int:
    body = json.dumps({"host": COVERED, "key": KEY, "urlList": [url]}).encode()
    status, _, _ = request(server, "POST", "/indexnow", body, {"Content-Type": "application/json"})
    return status


def get(server: NotifyServer, url: str) -> int:
    query = f"/indexnow?url={quote(url, safe='')}&key={KEY}"
    return request(server, "GET", query)[0]


def stored_hosts(server: NotifyServer) -> set[tuple[str, int]]:
    return {fetched_from(state.url) for state in server.store.due(NOW + 1, 100_000)}


def test_the_reported_bypass_is_refused_on_both_endpoints(server: NotifyServer) -> None:
    assert post(server, BYPASS) in (400, 422)
    assert get(server, BYPASS) in (400, 403, 422)
    assert ("evil.example", 80) not in stored_hosts(server)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(url=urls)
@example(url=BYPASS)
@example(url="http://127.0.0.1:18080/ok")
def test_nothing_the_endpoints_accept_reaches_another_host(server: NotifyServer, url: str) -> None:
    answers: list[Any] = [post(server, url), get(server, url)]
    assert all(status in (200, 400, 403, 422) for status in answers), answers
    assert stored_hosts(server) <= {("127.0.0.1", 18080)}


# -- hostile bodies and headers -----------------------------------------------------------

GOOD = {"host": COVERED, "key": KEY, "urlList": [f"http://{COVERED}/fine"]}
DEEP = 100_000


def body_of(**fields: Any) -> bytes:
    return json.dumps({**GOOD, **fields}).encode()


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"[" * DEEP + b"]" * DEEP, "nested too deeply"),
        (b'{"a":' * DEEP + b"1" + b"}" * DEEP, "nested too deeply"),
        (body_of(urlList=[]).replace(b"[]", b"[" + b"9" * 100_000 + b"]"), "JSON"),
        (body_of(urlList=[]).replace(b"[]", b"[1e999]"), "not a string"),
        (body_of(host=5), "strings"),
        (body_of(key=["a1b2c3d4e5f6"]), "strings"),
        (body_of(urlList=f"http://{COVERED}/x"), "urlList"),
        (body_of(urlList=[{"url": f"http://{COVERED}/x"}]), "not a string"),
        (body_of(keyLocation=5), "keyLocation"),
        (body_of(host="127.0.0.1:18080/x@evil.example"), "host"),
        (body_of(host=""), "strings"),
        (body_of().replace(b'"host"', b'"host": "evil.example", "host"', 1), "more than once"),
        (body_of().replace(b'"urlList": [', b'"urlList": [NaN, ', 1), "NaN"),
        (b"\xff\xfe{}", "UTF-8"),
    ],
)
def test_hostile_bodies_get_a_400_and_the_server_carries_on(
    server: NotifyServer, body: bytes, words: str
) -> None:
    status, raw, _ = request(
        server, "POST", "/indexnow", body, {"Content-Type": "application/json"}
    )
    assert status == 400, raw[:200]
    assert words in json.loads(raw)["error"]
    assert post(server, f"http://{COVERED}/fine") == 200  # still serving
    assert 500 not in server.counts


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Content-Length": "5_0"}, 400),
        ({"Content-Length": "+50"}, 400),
        ({"Content-Length": "0x32"}, 400),
        ({"Content-Length": "9" * 40}, 400),
        ({"Content-Type": "application/xml"}, 415),
        ({"Content-Encoding": "gzip"}, 415),
    ],
)
def test_malformed_headers_are_refused_before_the_body_is_read(
    server: NotifyServer, headers: dict[str, str], status: int
) -> None:
    sock = socket.create_connection(server.server_address[:2], timeout=10)
    head = {"Content-Type": "application/json", "Content-Length": "50", **headers}
    lines = "".join(f"{name}: {value}\r\n" for name, value in head.items())
    sock.sendall(f"POST /indexnow HTTP/1.1\r\nHost: x\r\n{lines}\r\n".encode())
    answer = read_answer(sock)  # answered without waiting for the 50 bytes
    sock.close()
    assert answer.startswith(f"HTTP/1.1 {status} ".encode()), answer[:100]


def test_two_content_lengths_are_refused(server: NotifyServer) -> None:
    sock = socket.create_connection(server.server_address[:2], timeout=10)
    sock.sendall(
        b"POST /indexnow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}"
    )
    answer = read_answer(sock)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:100]


def read_answer(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (or 10 s of silence)."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


# -- slow clients and too many connections ------------------------------------------------


@pytest.fixture
def strict(tmp_path: Path) -> Iterator[NotifyServer]:
    """A server with a 1 s request deadline and 2 connections per client."""
    store = SQLiteStore(tmp_path / "s.sqlite")
    config = NotifyConfig(
        keys={COVERED: frozenset({KEY})}, request_deadline=1.0, max_connections_per_client=2
    )
    yield from serving(store, config, lambda: NOW)
    store.close()


def trickle(sock: socket.socket, lines: Iterator[bytes], pause: float = 0.25) -> bool:
    """Send ``lines`` one by one, ``pause`` apart; True if the server closed the
    connection before they ran out."""
    sock.settimeout(pause)
    return any(closed_after(sock, line) for line in lines)


def closed_after(sock: socket.socket, line: bytes) -> bool:
    """Send ``line``; wait for the socket's timeout: did the server close it?"""
    try:
        sock.sendall(line)
        return sock.recv(65536) == b""
    except TimeoutError:
        return False  # the server is still waiting
    except OSError:  # reset: closed
        return True


def test_a_client_trickling_headers_is_cut_off_at_the_deadline(strict: NotifyServer) -> None:
    sock = socket.create_connection(strict.server_address[:2], timeout=10)
    lines = iter([b"POST /indexnow HTTP/1.1\r\n"] + [f"X-{n}: y\r\n".encode() for n in range(40)])
    assert trickle(sock, lines)  # 40 lines over ~10 s; closed long before (deadline 1 s)
    sock.close()
    assert strict.drops.get("deadline") == 1


def test_a_client_trickling_its_body_is_cut_off_at_the_deadline(strict: NotifyServer) -> None:
    body = json.dumps(GOOD).encode()
    head = (
        "POST /indexnow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock = socket.create_connection(strict.server_address[:2], timeout=10)
    assert trickle(sock, iter([head, *(body[n : n + 1] for n in range(len(body)))]))
    sock.close()
    assert [s.url for s in strict.store.due(NOW + 1, 10)] == []


def test_a_client_holding_too_many_connections_is_refused(strict: NotifyServer) -> None:
    address = strict.server_address[:2]
    idle = [socket.create_connection(address, timeout=10) for _ in range(2)]
    extra = socket.create_connection(address, timeout=10)
    answer = read_answer(extra)
    extra.close()
    assert answer.startswith(b"HTTP/1.1 429 "), answer[:100]
    assert strict.drops.get("too_many_connections") == 1
    for sock in idle:
        sock.close()
    # the idle ones are closed (by the client here, by the deadline otherwise): room again
    for _ in range(100):
        status, _, _ = request(strict, "GET", f"/indexnow?url=http://{COVERED}/x&key={KEY}")
        if status != 429:
            break
        time.sleep(0.05)  # the server has yet to see the idle ones closed
    assert status == 200
