"""The notify-server's endpoints under attack (issue 18): a real server on 127.0.0.1.

Host bypasses (the URL tricks of :mod:`tests.adversarial.tricks`), hostile bodies,
slow clients and too many connections: each gets a 4xx answer or a closed connection,
is counted, and nothing reaches the store that Scrapy would fetch from another host.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, settings

from scrapy_fresh.notify_server import NotifyConfig, NotifyServer
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
