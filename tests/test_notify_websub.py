"""WebSub content distribution, intent verification and the rate limits of notify-server
(a real server on 127.0.0.1 writing a real SQLite store; the clock is injected)."""

from __future__ import annotations

import gzip
import http.client
import json
import logging
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from scrapy_fresh.commands.notify_server import read_subscriptions
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.keys import url_key
from scrapy_fresh.notify.record import record_updates
from scrapy_fresh.notify.server import NotifyConfig, NotifyServer, RateLimiter
from scrapy_fresh.notify.websub import (
    Subscription,
    check_signature,
    link_urls,
    load_subscriptions,
    sign,
)
from scrapy_fresh.providers.ledger import iter_trust
from scrapy_fresh.store.base import Provider, Status
from scrapy_fresh.store.memory import MemoryStore
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.notify_support import KEY, NOW, known, request, serving, start_command, two_page_store

SECRET = "s3cr3t-0123456789-abcdef"
TOPIC = "http://127.0.0.1/feed"


def w3c(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat()


def atom(*entries: tuple[str, float]) -> bytes:
    body = "".join(
        f'<entry><title>x</title><link href="{url}"/><updated>{w3c(t)}</updated></entry>'
        for url, t in entries
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        f"<title>news</title>{body}</feed>"
    ).encode()


# -- the pure parts ----------------------------------------------------------------------


def test_pushed_times_make_pages_due_only_when_later_than_their_last_crawl() -> None:
    store = MemoryStore()
    store.put_many([known("https://a.test/old"), known("https://a.test/fresh")])
    result = record_updates(
        store,
        [
            ("https://a.test/old", NOW - 7200),  # before its last crawl: seen already
            ("https://a.test/fresh", NOW - 120),
            ("https://a.test/fresh", NOW - 600),  # the latest time per URL counts
            ("https://a.test/new", NOW - 60),
            ("https://a.test/future", NOW + 86400),
            ("https://a.test/nan", float("nan")),
            ("javascript:x", NOW),
        ],
        now=NOW,
    )
    assert result.seen == ["https://a.test/old"]
    assert result.updated == ["https://a.test/fresh"]
    assert result.added == ["https://a.test/new"]
    assert set(result.rejected) == {"https://a.test/future", "https://a.test/nan", "javascript:x"}
    old, fresh, new = (store.get(url_key(f"https://a.test/{p}")) for p in ("old", "fresh", "new"))
    assert old is not None
    assert fresh is not None
    assert new is not None
    assert (old.past_updates, old.next_due, old.provider) == (
        [NOW - 7200],
        NOW + 86400,
        Provider.SMART,
    )
    assert (fresh.past_updates, fresh.next_due) == ([NOW - 120], NOW)
    assert (new.past_updates, new.next_due, new.status) == ([NOW - 60], NOW, Status.QUEUED)
    assert [(t.kind, t.host) for t in iter_trust(store)] == [("push", "a.test")]


@pytest.mark.parametrize("method", ["sha1", "sha256", "sha384", "sha512"])
def test_every_recognised_signature_method_is_checked(method: str) -> None:
    body = atom(("http://127.0.0.1/a", NOW))
    assert check_signature(sign(body, SECRET, method), body, SECRET) is None
    assert check_signature(sign(body, SECRET, method).upper(), body, SECRET) is None
    assert check_signature(sign(body, SECRET + "x", method), body, SECRET) is not None
    assert check_signature(sign(body + b" ", SECRET, method), body, SECRET) is not None
    assert check_signature(method, body, SECRET) is not None


def test_link_headers_and_subscription_files() -> None:
    assert link_urls(
        ['<https://hub.test/>; rel="hub"', '<https://e.test/f>; rel="alternate self"'], "self"
    ) == ["https://e.test/f"]
    assert link_urls(["garbage, <x>"], "self") == []
    subs = load_subscriptions(
        {"n-1": {"topic": TOPIC, "secret": SECRET, "hub": "https://hub.test/"}}
    )
    assert subs["n-1"] == Subscription("n-1", TOPIC, SECRET, "https://hub.test/")
    for data, message in [
        ([], "JSON object"),
        ({"n": {"topic": TOPIC}}, "needs"),
        ({"n": {"topic": TOPIC, "secret": "short"}}, "at least 16"),
        ({"n": {"topic": "ftp://x/", "secret": SECRET}}, "not an absolute http"),
        ({"a/b": {"topic": TOPIC, "secret": SECRET}}, "callback path"),
        ({"n": {"topic": TOPIC, "secret": SECRET, "extra": 1}}, "unknown keys"),
        ({"n": {"topic": TOPIC, "secret": "x" * 300}}, "199 bytes"),
    ]:
        with pytest.raises((TypeError, ValueError), match=message):
            load_subscriptions(data)


def test_subscription_file_errors_name_the_option(tmp_path: Path) -> None:
    bad = tmp_path / "subs.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="--websub-file"):
        read_subscriptions(str(bad))
    bad.write_text(json.dumps({"n": {"topic": TOPIC, "secret": "short"}}))
    with pytest.raises(ConfigError, match=r"--websub-file .* at least 16"):
        read_subscriptions(str(bad))


def test_rate_limiter_refills_steadily_and_forgets_old_keys() -> None:
    limiter = RateLimiter(3, 60.0, max_keys=2)
    assert [limiter.take("a", 0.0) for _ in range(4)] == [0.0, 0.0, 0.0, 20.0]
    assert limiter.take("a", 10.0) == pytest.approx(10.0)  # half a token back: wait 10 s
    assert limiter.take("a", 20.0) == 0.0
    assert RateLimiter(0, 60.0).take("a", 0.0) == 0.0  # no limit
    limiter.take("b", 20.0)
    limiter.take("c", 20.0)  # "a" is forgotten: it starts full again
    assert [limiter.take("a", 20.0) for _ in range(3)] == [0.0, 0.0, 0.0]


def test_config_checks() -> None:
    with pytest.raises(ValueError, match="rate_limit"):
        NotifyConfig(rate_limit=-1)
    with pytest.raises(ValueError, match="rate_window"):
        NotifyConfig(rate_window=0)
    with pytest.raises(ValueError, match="websub"):
        NotifyConfig(websub={"a": Subscription("b", TOPIC, SECRET)})


# -- the server --------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = two_page_store(tmp_path / "state.sqlite")
    yield s
    s.close()


def serve(store: SQLiteStore, clock: Clock, **config: Any) -> Iterator[NotifyServer]:
    defaults: dict[str, Any] = {
        "keys": {"127.0.0.1": frozenset({KEY})},
        "websub": {"news": Subscription("news", TOPIC, SECRET)},
        "max_body_bytes": 64 * 1024,
        "max_urls": 50,
    }
    yield from serving(store, NotifyConfig(**{**defaults, **config}), clock)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(store: SQLiteStore, clock: Clock) -> Iterator[NotifyServer]:
    yield from serve(store, clock)


call = request


def push(
    server: NotifyServer,
    body: bytes,
    *,
    name: str = "news",
    signature: str | None = None,
    ctype: str = "application/atom+xml",
    **headers: str,
) -> tuple[int, dict[str, Any]]:
    sent = {
        "Content-Type": ctype,
        "Link": f'<https://hub.test/>; rel="hub", <{TOPIC}>; rel="self"',
        "X-Hub-Signature": sign(body, SECRET) if signature is None else signature,
        **headers,
    }
    status, raw, _ = call(server, "POST", f"/websub/{name}", body, sent)
    return status, json.loads(raw)


def verify(
    server: NotifyServer, name: str = "news", **params: str
) -> tuple[int, bytes, dict[str, str]]:
    query = urlencode({f"hub.{k}": v for k, v in params.items()})
    return call(server, "GET", f"/websub/{name}?{query}")


def test_signed_content_records_each_entry_with_its_own_time(
    server: NotifyServer, store: SQLiteStore
) -> None:
    body = atom(
        ("http://127.0.0.1/a", NOW - 60),
        ("http://127.0.0.1/new", NOW - 30),
        ("http://127.0.0.1/b", NOW - 7200),  # before b's last crawl
        ("http://evil.test/x", NOW - 10),  # another site: not this topic's to speak for
    )
    status, answer = push(server, body)
    assert status == 200, answer
    assert answer == {
        "accepted": 3,  # a, new, and the feed itself
        "added": 2,
        "updated": 1,
        "seen": 1,
        "rejected": 0,
        "skipped": 1,
        "outcome": "ok",
    }
    got = {s.url: s for s in store.iterate()}
    assert (got["http://127.0.0.1/a"].past_updates, got["http://127.0.0.1/a"].next_due) == (
        [NOW - 60],
        NOW,
    )
    assert got["http://127.0.0.1/new"].past_updates == [NOW - 30]
    assert got["http://127.0.0.1/b"].next_due == NOW + 86400  # already crawled since
    assert got[TOPIC].past_updates == [NOW - 10]  # the feed's newest entry, whatever its link
    assert "http://evil.test/x" not in got
    assert server.counts == {200: 1}


@pytest.mark.parametrize(
    ("signature", "why"),
    [
        ("", "no X-Hub-Signature"),
        ("sha256=" + "0" * 64, "does not match"),
        ("md5=abc", "not one of"),
        ("sha256", "method=signature"),
    ],
)
def test_bad_or_missing_signatures_are_refused_and_nothing_is_written(
    server: NotifyServer, store: SQLiteStore, signature: str, why: str
) -> None:
    body = atom(("http://127.0.0.1/a", NOW - 60))
    status, answer = push(server, body, signature=signature)
    assert (status, why in answer["error"]) == (403, True), answer
    # a valid signature of another body (a replayed header) does not sign this one
    status, _ = push(server, body, signature=sign(atom(), SECRET))
    assert status == 403
    assert store.get(url_key("http://127.0.0.1/a")).past_updates == []  # type: ignore[union-attr]
    assert len(store) == 2


def bomb() -> bytes:
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    body = packer.compress(b'<feed xmlns="http://www.w3.org/2005/Atom">')
    body += b"".join(packer.compress(b" " * (1 << 20)) for _ in range(8))
    return body + packer.flush()


def laughs() -> bytes:
    entities = '<!ENTITY l0 "lol">' + "".join(
        f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10)
    )
    return (
        f'<?xml version="1.0"?><!DOCTYPE feed [{entities}]>'
        '<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="&l9;"/></entry></feed>'
    ).encode()


def test_hostile_or_malformed_pushes_get_a_clear_status(
    server: NotifyServer, store: SQLiteStore
) -> None:
    assert push(server, bomb())[0] == 422  # signed, but inflates past max_body_bytes
    status, answer = push(server, laughs())
    assert (status, "entities_refused" in answer["error"]) == (422, True)
    assert push(server, b"\x00\xff" * 100)[0] == 422
    assert push(server, b"<html><body>hello</body></html>")[0] == 422  # not a feed
    assert push(server, atom(), ctype="text/html")[0] == 415
    assert push(server, atom(), **{"Content-Encoding": "gzip"})[0] == 415
    assert push(server, b"x" * (64 * 1024 + 1))[0] == 413
    assert push(server, atom(), name="other")[0] == 410  # not (any more) subscribed
    status, _, _ = call(server, "POST", "/websub/news", b"<feed/>", {"Content-Type": "text/xml"})
    assert status == 403  # no signature at all
    # a feed that breaks off keeps what came before it
    cut = atom(("http://127.0.0.1/a", NOW - 60), ("http://127.0.0.1/c", NOW))[:-40]
    status, answer = push(server, cut)
    assert (status, answer["outcome"], answer["updated"]) == (200, "malformed", 1)
    urls = {s.url for s in store.iterate()}
    assert urls == {"http://127.0.0.1/a", "http://127.0.0.1/b", TOPIC}  # not /c
    # a gzip body is read when it fits (the feed reader inflates it safely)
    status, answer = push(server, gzip.compress(atom(("http://127.0.0.1/b", NOW - 5))))
    assert (status, answer["updated"]) == (200, 2)  # /b and the feed, added just before
    assert server.counts[422] == 4


def test_intent_verification_for_the_configured_topic_only(server: NotifyServer) -> None:
    status, body, headers = verify(
        server, mode="subscribe", topic=TOPIC, challenge="c-h_a.l~l3nge", lease_seconds="864000"
    )
    assert (status, body) == (200, b"c-h_a.l~l3nge")
    assert headers["content-type"] == "application/octet-stream"
    assert headers["x-content-type-options"] == "nosniff"
    assert verify(server, mode="subscribe", topic=TOPIC + "?other", challenge="x")[0] == 404
    assert verify(server, mode="unsubscribe", topic=TOPIC, challenge="x")[0] == 404
    assert verify(server, name="other", mode="subscribe", topic=TOPIC, challenge="x")[0] == 404
    assert verify(server, mode="subscribe", topic=TOPIC, challenge="a b")[0] == 400
    assert verify(server, mode="subscribe", topic=TOPIC, challenge="x" * 201)[0] == 400
    assert verify(server, mode="subscribe", topic=TOPIC)[0] == 400
    assert verify(server, topic=TOPIC, challenge="x")[0] == 400
    assert verify(server, mode="denied", topic=TOPIC, reason="no")[0] == 200


def test_a_client_over_the_rate_limit_gets_429_with_retry_after(
    store: SQLiteStore, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    for server in serve(store, clock, rate_limit=3, rate_window=60.0):
        caplog.set_level(logging.INFO, logger="scrapy_fresh.notify.server")
        path = f"/indexnow?url=http://127.0.0.1/a&key={KEY}"
        assert [call(server, "GET", path)[0] for _ in range(3)] == [200, 200, 200]
        status, body, headers = call(server, "GET", path)
        assert (status, headers["retry-after"]) == (429, "20")
        assert "too many requests" in json.loads(body)["error"]
        assert call(server, "GET", "/nowhere")[0] == 429  # every request counts
        # another client is not held up
        assert call(server, "GET", path, source="127.0.0.2")[0] == 200
        # the bucket refills: one request every 20 s
        clock.now += 20
        assert call(server, "GET", path)[0] == 200
        assert call(server, "GET", path)[0] == 429
        assert server.counts[429] == 3
        warnings = [r for r in caplog.records if "over the rate limit" in r.getMessage()]
        assert len(warnings) == 2  # once per streak, not per request


def test_a_host_over_its_limit_gets_429_and_strangers_cannot_use_its_share(
    store: SQLiteStore, clock: Clock
) -> None:
    for server in serve(store, clock, rate_limit=0, host_rate_limit=2, rate_window=60.0):
        bad = "/indexnow?url=http://127.0.0.1/a&key=wrong-key-123"
        assert [call(server, "GET", bad)[0] for _ in range(5)] == [403] * 5
        good = f"/indexnow?url=http://127.0.0.1/a&key={KEY}"
        assert [call(server, "GET", good)[0] for _ in range(2)] == [200, 200]
        status, _, headers = call(server, "GET", good)
        assert (status, headers["retry-after"]) == (429, "30")
        # WebSub content about the same host shares its limit
        assert push(server, atom(("http://127.0.0.1/a", NOW - 1)))[0] == 429
        clock.now += 30
        assert push(server, atom(("http://127.0.0.1/a", NOW - 1)))[0] == 200


def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_limit(
    store: SQLiteStore, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    path = f"/indexnow?url=http://127.0.0.1/a&key={KEY}"

    def via(server: NotifyServer, client: str, source: str = "127.0.0.1") -> int:
        return call(server, "GET", path, headers={"X-Forwarded-For": client}, source=source)[0]

    for server in serve(store, clock, rate_limit=2, trusted_proxies=("127.0.0.0/30",)):
        caplog.set_level(logging.WARNING, logger="scrapy_fresh.notify.server")
        assert [via(server, "198.51.100.1") for _ in range(3)] == [200, 200, 429]
        assert "client 198.51.100.1 is over the rate limit" in caplog.text
        assert via(server, "198.51.100.2") == 200  # another client behind the same proxy
        # proxies append: the nearest untrusted address is the client, not a spoofed first
        assert via(server, "203.0.113.7, 198.51.100.1") == 429
        assert via(server, "198.51.100.1, 198.51.100.3, 127.0.0.2") == 200  # 127.0.0.2 is a proxy
        assert via(server, "198.51.100.3, not-an-address") == 400
        assert server.counts[400] == 1
    for server in serve(store, clock, rate_limit=2):  # no proxy trusted: header ignored
        assert [via(server, f"198.51.100.{n}") for n in range(3)] == [200, 200, 429]
    for server in serve(store, clock, rate_limit=2, trusted_proxies=("127.0.0.1",)):
        # a client that is not a trusted proxy cannot choose whom it is counted as
        assert [via(server, f"198.51.100.{n}", source="127.0.0.5") for n in range(3)] == [
            200,
            200,
            429,
        ]
        assert via(server, "198.51.100.9") == 200


def test_trusted_proxies_must_be_addresses_or_networks() -> None:
    with pytest.raises(ValueError, match=r"'proxy\.local' \(--trusted-proxy\)"):
        NotifyConfig(trusted_proxies=("10.0.0.0/8", "proxy.local"))


@pytest.mark.slow
def test_notify_server_command_serves_websub(tmp_path: Path, python_env: dict[str, str]) -> None:
    db = tmp_path / "s.sqlite"
    SQLiteStore(db).close()
    subs = tmp_path / "subs.json"
    subs.write_text(json.dumps({"news-7f3a": {"topic": TOPIC, "secret": SECRET}}))
    process, _ = start_command(db, python_env, "--websub-file", str(subs), "--rate-limit", "10")
    try:
        assert process.stdout is not None
        second = process.stdout.readline()
        assert second.startswith("notify-server: http://127.0.0.1:"), second
        assert second.rstrip().endswith(f"/websub/news-7f3a <- {TOPIC}"), second
        port = int(second.split("127.0.0.1:", 1)[1].split("/", 1)[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        query = urlencode({"hub.mode": "subscribe", "hub.topic": TOPIC, "hub.challenge": "abc"})
        conn.request("GET", f"/websub/news-7f3a?{query}")
        response = conn.getresponse()
        assert (response.status, response.read()) == (200, b"abc")
        body = atom(("http://127.0.0.1/z", time.time() - 5))
        conn.request(
            "POST",
            "/websub/news-7f3a",
            body,
            {
                "Content-Type": "application/atom+xml",
                "X-Hub-Signature": sign(body, SECRET, "sha1"),
            },
        )
        response = conn.getresponse()
        assert response.status == 200, response.read()
        response.read()
        conn.close()
    finally:
        process.terminate()
        process.communicate(timeout=10)
    s = SQLiteStore(db)
    try:
        assert sorted(x.url for x in s.due(time.time() + 1, 10)) == [TOPIC, "http://127.0.0.1/z"]
    finally:
        s.close()


# -- subscribing at a hub ----------------------------------------------------------------


class FakeHub(ThreadingHTTPServer):
    """A WebSub hub on 127.0.0.1: takes subscriptions (202), verifies the subscriber's
    intent with a GET to its callback, then delivers a signed feed to it."""

    daemon_threads = True

    def __init__(self, feed: bytes, lease: int = 100) -> None:
        self.feed = feed
        self.lease = lease
        self.answer = 202
        #: Verify (and deliver) before answering the subscription: what a fast hub's
        #: verification thread does when it runs before the subscriber reads the 202.
        self.verify_first = False
        self.forms: list[dict[str, str]] = []
        self.verified: list[tuple[int, bytes]] = []
        self.delivered: list[int] = []
        self.done = threading.Event()
        super().__init__(("127.0.0.1", 0), _HubHandler)

    def url(self, path: str = "/hub") -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def verify_and_deliver(self, form: dict[str, str]) -> None:
        callback = urlsplit(form["hub.callback"])
        query = urlencode(
            {
                "hub.mode": "subscribe",
                "hub.topic": form["hub.topic"],
                "hub.challenge": "ch-4711",
                "hub.lease_seconds": str(self.lease),
            }
        )
        conn = http.client.HTTPConnection(callback.hostname or "", callback.port, timeout=10)
        conn.request("GET", f"{callback.path}?{query}")
        response = conn.getresponse()
        self.verified.append((response.status, response.read()))
        conn.request(
            "POST",
            callback.path,
            self.feed,
            {
                "Content-Type": "application/atom+xml",
                "Link": f'<{self.url()}>; rel="hub", <{form["hub.topic"]}>; rel="self"',
                "X-Hub-Signature": sign(self.feed, form["hub.secret"], "sha512"),
            },
        )
        response = conn.getresponse()
        response.read()
        self.delivered.append(response.status)
        conn.close()
        self.done.set()


class _HubHandler(BaseHTTPRequestHandler):
    server: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/old":  # this hub moved: 307 to the new one
            self.send_response(307)
            self.send_header("Location", self.server.url())
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        self.server.forms.append(form)
        status = self.server.answer
        if status == 202 and self.server.verify_first:
            self.server.verify_and_deliver(form)
            status = 0  # answered below, nothing more to do
        self.send_response(status or 202)
        self.send_header("Content-Length", "0")
        self.end_headers()
        if status == 202:  # verification comes after the answer, as the spec says
            threading.Thread(
                target=self.server.verify_and_deliver, args=(form,), daemon=True
            ).start()


def test_the_server_subscribes_at_the_hub_and_renews_the_lease(
    store: SQLiteStore, clock: Clock
) -> None:
    hub = FakeHub(atom(("http://127.0.0.1/a", NOW - 60)))
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    try:
        sub = Subscription("news", TOPIC, SECRET, hub.url("/old"))
        for server in serve(
            store, clock, websub={"news": sub}, callback_base="http://127.0.0.1:1"
        ):
            host, port = server.server_address[:2]
            server.config.callback_base = f"http://{host}:{port}"
            assert server.subscribe_due() == 1
            assert hub.done.wait(10)
            (form,) = hub.forms
            assert form == {
                "hub.callback": f"http://{host}:{port}/websub/news",
                "hub.mode": "subscribe",
                "hub.topic": TOPIC,
                "hub.secret": SECRET,
                "hub.lease_seconds": "864000",
            }
            assert hub.verified == [(200, b"ch-4711")]
            assert hub.delivered == [200]
            a = store.get(url_key("http://127.0.0.1/a"))
            assert a is not None
            assert (a.past_updates, a.next_due) == ([NOW - 60], NOW)
            # renewed at 90% of the lease the hub granted (100 s), not before
            assert server.renew_at("news") == pytest.approx(NOW + 90)
            clock.now += 60
            assert server.subscribe_due() == 0
            clock.now += 31
            hub.done.clear()
            hub.answer = 500  # the hub fails: retried after 1 min, then 2 min
            assert server.subscribe_due() == 1
            assert server.renew_at("news") == pytest.approx(clock.now + 60)
            clock.now += 60
            assert server.subscribe_due() == 1
            assert server.renew_at("news") == pytest.approx(clock.now + 120)
            assert len(hub.forms) == 3
    finally:
        hub.shutdown()
        hub.server_close()


def test_a_lease_the_hub_granted_before_its_answer_arrived_is_kept(
    store: SQLiteStore, clock: Clock
) -> None:
    hub = FakeHub(atom(("http://127.0.0.1/a", NOW - 60)))
    hub.verify_first = True  # the verification overtakes the 202 (a loaded machine)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    try:
        sub = Subscription("news", TOPIC, SECRET, hub.url())
        for server in serve(
            store, clock, websub={"news": sub}, callback_base="http://127.0.0.1:1"
        ):
            host, port = server.server_address[:2]
            server.config.callback_base = f"http://{host}:{port}"
            assert server.subscribe_due() == 1
            assert hub.done.is_set()
            assert hub.verified == [(200, b"ch-4711")]
            # the hub granted 100 s: renewed at 90 s, not at 90% of the 864000 s asked
            assert server.renew_at("news") == pytest.approx(NOW + 90)
    finally:
        hub.shutdown()
        hub.server_close()
