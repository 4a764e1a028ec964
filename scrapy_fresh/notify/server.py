"""An endpoint that records pushed change notifications into the store: IndexNow-style
submissions and WebSub content distribution.

Content providers (the paper's smart users, seed ``xu-content-provider-friendly-crawler``
Section 3.3, who "send a signal every time" they update) tell us which URLs changed:

* ``POST /indexnow`` with a JSON body ``{"host": ..., "key": ..., "keyLocation": ...
  (optional), "urlList": [...]}``;
* ``GET /indexnow?url=...&key=...`` (``keyLocation`` optional) for one URL;
* ``POST /websub/<name>``: a WebSub hub delivers the new content of a subscribed topic
  (a feed or a sitemap; :mod:`scrapy_fresh.notify.websub`), signed with the subscription's
  secret (``X-Hub-Signature``); each entry's link is recorded with its own update time
  (:func:`~scrapy_fresh.notify.record.record_updates`);
* ``GET /websub/<name>?hub.mode=subscribe&hub.topic=...&hub.challenge=...``: the hub's
  intent verification, answered with the challenge for the subscription's own topic.

With :attr:`NotifyConfig.callback_base` (the URL this server is reachable at from the
hubs), the server also sends the subscription requests itself (WebSub 5.1) for every
subscription that names its hub, and renews each at 90% of the lease the hub granted
(:meth:`NotifyServer.subscribe_due`, run by :meth:`NotifyServer.run_subscriber`).

Every write is authenticated. IndexNow: the key must be on the allow-list for the host
(:attr:`NotifyConfig.keys`), or, when :attr:`NotifyConfig.verify_key_files` is on, the
host must publish it as the IndexNow protocol says: a text file holding the key at
``keyLocation`` (on the same host) or ``<scheme>://<host>/<key>.txt``, fetched with a
timeout and a size limit, without following redirects, and remembered for a while.
WebSub: the body's HMAC must match the subscription's secret.

Every client is rate-limited (:class:`RateLimiter`: :attr:`NotifyConfig.rate_limit`
requests per :attr:`NotifyConfig.rate_window` seconds per client address), and so is
every host notifications are about (:attr:`NotifyConfig.host_rate_limit` accepted
submissions per window, counted once authenticated, so strangers cannot use up a
publisher's share); past the limit the answer is 429 with ``Retry-After``.

Answers: 200 (recorded; JSON body with counts; for a verification, the challenge), 400
(malformed request), 403 (key not valid for the host; WebSub signature missing or
wrong), 404 (another path; a verification the subscriber does not agree to), 405
(another method), 410 (content for a subscription that is not configured), 411 (POST
without a length), 413 (body or URL list too large), 415 (POST body not JSON, not XML
or compressed), 422 (a URL of another host, a key that does not match the protocol's
format, or a pushed document refused as unsafe), 429 (rate limit), 503 (the store
failed). Nothing is written unless the whole request is accepted.
"""

from __future__ import annotations

import http
import http.client
import io
import ipaddress
import json
import logging
import math
import re
import socket
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.keys import url_key
from scrapy_fresh.notify.record import NotifyResult, check_url, record_changes, record_updates
from scrapy_fresh.notify.websub import (
    Subscription,
    check_challenge,
    check_signature,
    link_urls,
    subscription_form,
)
from scrapy_fresh.providers.document import parse_document
from scrapy_fresh.providers.safexml import Limits
from scrapy_fresh.store.base import StateStore
from scrapy_fresh.urls import URLRefused, accept_url, fetch_url, normal_host, parse_host

__all__ = [
    "KEY_PATTERN",
    "NotifyConfig",
    "NotifyServer",
    "RateLimiter",
    "forwarded_client",
    "send_subscription",
    "verify_key_file",
]

logger = logging.getLogger(__name__)

#: IndexNow keys: 8 to 128 characters of a-z, A-Z, 0-9 and "-".
KEY_PATTERN = re.compile(r"^[A-Za-z0-9-]{8,128}$")
_PATH = "/indexnow"
_WEBSUB = "/websub/"
#: Pushed document outcomes that leave nothing to record (see ParseReport).
_REFUSED = frozenset({"too_large", "entities_refused", "not_xml", "unknown_document"})


@dataclass
class NotifyConfig:
    """How :class:`NotifyServer` authenticates and bounds requests.

    :param keys: host -> keys allowed to notify about that host's URLs.
    :param verify_key_files: also accept a key the host publishes in its key file.
    :param key_file_scheme: ``https`` (the protocol's) or ``http`` (local tests).
    :param key_file_timeout: seconds to wait for a key file.
    :param key_file_ttl: seconds a key file check is remembered (failures: a tenth).
    :param max_body_bytes: largest POST body read.
    :param max_urls: most URLs in one request (IndexNow allows 10,000); also the most
        entries read from a pushed WebSub document.
    :param add_unknown: add URLs the store does not know as new records.
    :param websub: name -> WebSub subscription (content arrives at ``/websub/<name>``).
    :param rate_limit: requests one client address may make per ``rate_window``
        (0: no limit).
    :param host_rate_limit: authenticated submissions about one host per
        ``rate_window`` (0: no limit).
    :param rate_window: seconds of the rate limits' window.
    :param callback_base: the URL hubs reach this server at (``https://host[:port]``);
        given, the server subscribes at the hubs of the subscriptions that name one.
    :param lease_seconds: the lease asked for (the hub decides; 10 days, the spec's
        suggestion).
    :param hub_timeout: seconds to wait for a hub's answer.
    :param trusted_proxies: addresses or networks (``10.0.0.0/8``) of the reverse
        proxies in front of the server. A request from one of them is counted for the
        client its ``X-Forwarded-For`` names (:func:`forwarded_client`); from anyone
        else the header is ignored, so strangers cannot dodge the rate limit.
    """

    keys: Mapping[str, frozenset[str]] = field(default_factory=dict)
    verify_key_files: bool = False
    key_file_scheme: str = "https"
    key_file_timeout: float = 5.0
    key_file_ttl: float = 3600.0
    max_body_bytes: int = 1024 * 1024
    max_urls: int = 10_000
    add_unknown: bool = True
    websub: Mapping[str, Subscription] = field(default_factory=dict)
    rate_limit: int = 120
    host_rate_limit: int = 120
    rate_window: float = 60.0
    callback_base: str | None = None
    lease_seconds: int = 864_000
    hub_timeout: float = 10.0
    trusted_proxies: tuple[str, ...] = ()
    request_deadline: float = 30.0
    max_connections_per_client: int = 16
    proxy_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = field(
        init=False, default=()
    )

    def __post_init__(self) -> None:
        self.proxy_networks = tuple(_network(p) for p in self.trusted_proxies)
        if self.key_file_scheme not in ("http", "https"):
            raise ValueError(
                f"key_file_scheme ({self.key_file_scheme!r}) must be 'http' or 'https'."
            )
        self.keys = {_key_host(h): frozenset(k) for h, k in self.keys.items()}
        for host, keys in self.keys.items():
            for key in keys:
                if not KEY_PATTERN.match(key):
                    raise ValueError(
                        f"key {key!r} for {host} must be 8-128 characters of a-z, A-Z, 0-9, '-'."
                    )
        for name, sub in self.websub.items():
            if not isinstance(sub, Subscription) or sub.name != name:
                raise ValueError(f"websub[{name!r}] must be the Subscription named {name!r}.")
        for name in ("rate_limit", "host_rate_limit", "max_connections_per_client"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} ({value!r}) must be a whole number of 0 or more.")
        for name in ("rate_window", "request_deadline"):
            value = getattr(self, name)
            if isinstance(value, bool) or not (
                isinstance(value, (int, float)) and 0 < value < math.inf
            ):
                raise ValueError(f"{name} ({value!r}) must be a number of seconds above 0.")
        if self.callback_base is not None:
            problem = check_url(self.callback_base)
            if problem is not None or urlsplit(self.callback_base).query:
                raise ValueError(
                    f"callback_base ({self.callback_base!r}) must be the http(s) URL hubs "
                    "reach this server at, without a query."
                )
        if isinstance(self.lease_seconds, bool) or not (
            isinstance(self.lease_seconds, int) and self.lease_seconds >= 60
        ):
            raise ValueError(f"lease_seconds ({self.lease_seconds!r}) must be 60 or more.")


def _key_host(text: str) -> str:
    try:
        return normal_host(text)
    except URLRefused as exc:
        raise ValueError(
            f"keys: host {text!r} must be a host name or address [:port] ({exc})"
        ) from None


def _network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValueError(
            f"trusted proxy {text!r} (--trusted-proxy) must be an IP address or a network such as "
            "10.0.0.0/8."
        ) from None


def forwarded_client(
    peer: str,
    forwarded_for: str | None,
    proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...],
) -> str:
    """The address a request is counted for: ``peer``, or, when ``peer`` is a trusted
    proxy, the nearest address in ``X-Forwarded-For`` (read from the right, each proxy
    appending the address it was called from) that is not a trusted proxy itself.

    >>> nets = (ipaddress.ip_network("10.0.0.0/8"),)
    >>> forwarded_client("10.0.0.2", "203.0.113.9, 198.51.100.4, 10.0.0.7", nets)
    '198.51.100.4'
    >>> forwarded_client("192.0.2.1", "203.0.113.9", nets)  # not a proxy: header ignored
    '192.0.2.1'

    Raises ValueError when a proxy sent an entry that is not an address.
    """
    if not forwarded_for or not _in(peer, proxies):
        return peer
    client = peer
    for entry in reversed(forwarded_for.split(",")):
        text = entry.strip()
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            raise ValueError(f"X-Forwarded-For entry {text[:60]!r} is not an IP address") from None
        client = str(address)
        if not _in(client, proxies):
            break
    return client


def _in(address: str, networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in networks)


class RateLimiter:
    """At most ``limit`` requests per ``window`` seconds per key (a token bucket).

    Each key's bucket holds up to ``limit`` tokens and refills at ``limit / window`` per
    second: a client may send ``limit`` requests at once, then one every
    ``window / limit`` seconds. :meth:`take` spends a token, or says how long to wait
    for the next one (the ``Retry-After`` of a 429). At most ``max_keys`` keys are
    remembered (the least recently used are forgotten: they start again full).

    >>> limiter = RateLimiter(2, 60.0)
    >>> [limiter.take("a", 0.0), limiter.take("a", 0.0), limiter.take("a", 0.0)]
    [0.0, 0.0, 30.0]
    >>> limiter.take("a", 30.0), limiter.take("b", 30.0)
    (0.0, 0.0)
    """

    def __init__(self, limit: int, window: float, max_keys: int = 100_000) -> None:
        self.limit = limit
        self.rate = limit / window if limit else 0.0
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: str, now: float) -> float:
        """Spend one of ``key``'s tokens: 0.0, or the seconds until one is available."""
        if not self.limit:
            return 0.0
        with self._lock:
            tokens, last = self._buckets.pop(key, (float(self.limit), now))
            tokens = min(float(self.limit), tokens + max(0.0, now - last) * self.rate)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / self.rate
            self._buckets[key] = (tokens, now)
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
            return wait


def _accepted(url: object, host: str) -> str:
    """``url`` as Scrapy will fetch it, if it is on ``host``; else a 400 or a 422."""
    try:
        return accept_url(url, host=host)
    except URLRefused as exc:
        status = 422 if exc.other_host else 400
        raise _Refused(status, f"{str(url)[:200]!r}: {exc}") from None


def _hostname(host: str) -> str:
    """``host`` without a ``:port``."""
    name, sep, port = host.rpartition(":")
    return name if sep and port.isdigit() else host


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


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


def send_subscription(hub: str, form: bytes, timeout: float) -> tuple[int, str]:
    """POST a subscription request ``form`` to ``hub``; return (status, reason).

    Follows up to 3 redirects of 307 or 308 (a hub may send the subscriber to another
    hub, WebSub 5.1.2); status 0 is a network failure.
    """
    url = hub
    for _ in range(4):
        parts = urlsplit(url)
        conn: http.client.HTTPConnection
        if parts.scheme == "https":
            conn = http.client.HTTPSConnection(
                parts.hostname or "",
                parts.port,
                timeout=timeout,
                context=ssl.create_default_context(),
            )
        else:
            conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            conn.request(
                "POST",
                path,
                body=form,
                headers={
                    "Content-Type": "application/x-www-form-urlencoded",
                    "User-Agent": "scrapy-fresh-notify",
                },
            )
            response = conn.getresponse()
            text = response.read(512).decode("utf-8", "replace").strip()
            location = response.getheader("Location")
        except (OSError, http.client.HTTPException) as exc:
            return 0, str(exc)
        finally:
            conn.close()
        if response.status in (307, 308) and location and check_url(location) is None:
            url = location
            continue
        return response.status, text[:200] or response.reason
    return 0, "too many redirects"


def _answer_raw(sock: socket.socket, status: int, message: str) -> None:
    """A short answer written straight to a socket no handler will read."""
    body = (json.dumps({"error": message}) + "\n").encode()
    head = (
        f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\nContent-Type: application/json"
        f"\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    try:
        sock.settimeout(1.0)
        sock.sendall(head.encode() + body)
    except OSError:
        pass


class _DeadlineReader(io.RawIOBase):
    """A socket read with a deadline for the whole request, not only between reads."""

    def __init__(self, sock: socket.socket, idle_timeout: float) -> None:
        self.sock = sock
        self.idle_timeout = idle_timeout
        self.deadline = math.inf

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request deadline passed")
        self.sock.settimeout(min(left, self.idle_timeout))
        return self.sock.recv_into(buffer)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members; a name given twice is refused (which one would count?)."""
    data = dict(pairs)
    if len(data) != len(pairs):
        names = [name for name, _ in pairs]
        twice = sorted({n for n in names if names.count(n) > 1})
        raise _Refused(400, f"the JSON object names {', '.join(twice)[:100]} more than once")
    return data


def _parse_json(raw: bytes) -> Any:
    """The body as JSON: 400 for anything but one plain, not too deeply nested value."""
    try:
        return json.loads(
            raw.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constant
        )
    except RecursionError:
        raise _Refused(400, "the JSON body is nested too deeply") from None
    except (UnicodeDecodeError, ValueError):
        raise _Refused(400, "the body is not valid UTF-8 JSON") from None


def _no_constant(name: str) -> Any:
    raise _Refused(400, f"the JSON body holds {name}, which is not JSON")


class _Handler(BaseHTTPRequestHandler):
    server: NotifyServer
    protocol_version = "HTTP/1.1"
    timeout = 15  # a client that stops sending is dropped
    _client = ""  # the address the request is counted for (set by _route)
    _reader: _DeadlineReader

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the socket stays open: it is read through the deadline below
        self._reader = _DeadlineReader(self.connection, float(self.timeout))
        self.rfile = io.BufferedReader(self._reader)

    def handle_one_request(self) -> None:
        """One request, which must arrive whole within the request deadline."""
        self._reader.deadline = time.monotonic() + self.server.config.request_deadline
        try:
            super().handle_one_request()
        except TimeoutError:  # while reading a body, after the headers' own handling
            self.close_connection = True
        if self.close_connection and self._reader.deadline <= time.monotonic():
            self.server.dropped("deadline", self.client_address[0])

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("notify-server: " + format, *args)

    def _answer(
        self,
        status: int,
        data: dict[str, Any] | bytes,
        headers: Mapping[str, str] = {},
        content_type: str = "application/json",
    ) -> None:
        body = data if isinstance(data, bytes) else (json.dumps(data) + "\n").encode()
        self.connection.settimeout(self.timeout)  # writing is not bound by the deadline
        self.server.count(status)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        if status >= 400:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, exc: _Refused) -> None:
        if exc.status != 429:  # a 429 is logged once per streak, by the server
            logger.info(
                "notify-server: %d to %s for %s %s: %s",
                exc.status,
                self._client or self.client_address[0],
                self.command,
                self.path[:200],
                exc.message,
            )
        self._answer(exc.status, {"error": exc.message}, exc.headers)

    def _refuse_method(self) -> None:
        self._refuse(
            _Refused(
                405,
                f"method {self.command} not allowed; use GET or POST",
                {"Allow": "GET, POST"},
            )
        )

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _refuse_method

    def do_GET(self) -> None:
        self._route()

    def do_POST(self) -> None:
        self._route()

    def _route(self) -> None:
        path = urlsplit(self.path).path
        self._client = self.client_address[0]
        try:
            self._client = forwarded_client(
                self._client,
                self.headers.get("X-Forwarded-For"),
                self.server.config.proxy_networks,
            )
        except ValueError as exc:
            self._refuse(_Refused(400, str(exc)))
            return
        try:
            self.server.limit_client(self._client)
            if path.rstrip("/") == _PATH:
                parse = self._from_query if self.command == "GET" else self._from_body
                self._indexnow(*parse())
            elif path.startswith(_WEBSUB):
                name = path[len(_WEBSUB) :].strip("/")
                if self.command == "GET":
                    self._websub_verify(name)
                else:
                    self._websub_content(name)
            else:
                raise _Refused(
                    404, f"not found; notifications go to {_PATH} or {_WEBSUB}<subscription>"
                )
        except _Refused as exc:
            self._refuse(exc)
        except TimeoutError:
            raise  # the request deadline: handle_one_request closes the connection
        except Exception:  # a bug: logged here, never a traceback to the client
            logger.exception("notify-server: %s %s failed", self.command, self.path[:200])
            self._answer(500, {"error": "internal error; see the server's log"})

    # -- IndexNow ----------------------------------------------------------------------

    def _indexnow(self, host: str, key: str, location: str | None, urls: list[str]) -> None:
        self.server.authorise(host, key, location)
        self.server.limit_host(_hostname(host))
        result = self.server.record(urls)
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
        try:
            host = fetch_url(urls[0]).authority
        except URLRefused as exc:
            raise _Refused(400, f"{urls[0][:200]!r}: {exc}") from None
        urls = self.server.check_urls(host, urls)
        return host, keys[0], locations[0] if locations else None, urls

    def _read_body(self, types: tuple[str, ...], what: str) -> bytes:
        """The POST body, bounded; ``types`` are the accepted media types."""
        lengths = self.headers.get_all("Content-Length") or []
        if self.headers.get("Transfer-Encoding") or not lengths:
            raise _Refused(411, "a POST needs a Content-Length (no chunked bodies)")
        if len(lengths) > 1:
            raise _Refused(400, "Content-Length is given more than once")
        length_text = lengths[0].strip()
        if not (length_text.isascii() and length_text.isdigit()) or len(length_text) > 18:
            raise _Refused(400, f"Content-Length ({length_text[:20]!r}) is not a byte count")
        length = int(length_text)
        limit = self.server.config.max_body_bytes
        if length > limit:
            raise _Refused(413, f"body of {length} bytes is over the limit of {limit}")
        encoding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        if encoding != "identity":
            raise _Refused(415, f"Content-Encoding {encoding[:40]!r} is not accepted")
        ctype = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if not any(t in ctype for t in types):
            raise _Refused(415, f"the body must be {what} (Content-Type {ctype[:80]!r})")
        return self.rfile.read(length)

    def _from_body(self) -> tuple[str, str, str | None, list[str]]:
        data = _parse_json(self._read_body(("application/json", "text/json"), "JSON"))
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
        try:
            host = normal_host(host)
        except URLRefused:
            raise _Refused(
                400, f"host ({host[:100]!r}) must be a host name or address [:port]"
            ) from None
        return host, key, location, self.server.check_urls(host, urls)

    # -- WebSub ------------------------------------------------------------------------

    def _websub_verify(self, name: str) -> None:
        """The hub's intent verification (WebSub 5.3) or denial (5.2)."""
        query = parse_qs(urlsplit(self.path).query, max_num_fields=16)
        values = {k: v[0] for k, v in query.items() if len(v) == 1}
        mode, topic = values.get("hub.mode"), values.get("hub.topic")
        if mode is None or topic is None:
            raise _Refused(400, "expected hub.mode and hub.topic (one each)")
        sub = self.server.config.websub.get(name)
        same_topic = (
            sub is not None and check_url(topic) is None and url_key(topic) == url_key(sub.topic)
        )
        if mode == "denied":
            logger.warning(
                "notify-server: the hub denied the subscription %s to %s: %s",
                name[:130],
                topic[:200],
                values.get("hub.reason", "no reason given")[:200],
            )
            self._answer(200, b"", content_type="text/plain")
            return
        if mode != "subscribe" or not same_topic:
            # an unsubscribe we did not ask for, or a topic we do not want: not agreed
            raise _Refused(404, f"no wish to {mode[:20]} to {topic[:200]!r} here")
        assert sub is not None
        challenge = values.get("hub.challenge")
        if challenge is None:
            raise _Refused(400, "expected one hub.challenge")
        problem = check_challenge(challenge)
        if problem is not None:
            raise _Refused(400, problem)
        lease = values.get("hub.lease_seconds", "")
        lease_secs = int(lease) if lease.isdigit() and len(lease) < 12 else None
        logger.info(
            "notify-server: subscription %s to %s verified (lease %s s)",
            name,
            sub.topic,
            lease_secs if lease_secs is not None else "not given",
        )
        self.server.subscription_verified(name, lease_secs)
        self._answer(
            200,
            challenge.encode("ascii"),
            {"X-Content-Type-Options": "nosniff"},
            content_type="application/octet-stream",
        )

    def _websub_content(self, name: str) -> None:
        """A content distribution request (WebSub 8): verify, parse, record."""
        sub = self.server.config.websub.get(name)
        if sub is None:
            raise _Refused(410, "no such subscription here (any more)")
        body = self._read_body(("xml", "rss", "atom"), "a feed or sitemap (XML)")
        problem = check_signature(self.headers.get("X-Hub-Signature"), body, sub.secret)
        if problem is not None:
            raise _Refused(403, problem)
        selves = link_urls(self.headers.get_all("Link") or [], "self")
        if selves and url_key(selves[0]) != url_key(sub.topic):
            logger.info(
                "notify-server: subscription %s: the hub names the topic %s (subscribed: %s)",
                name,
                selves[0][:200],
                sub.topic,
            )
        now = self.server.clock()
        config = self.server.config
        limits = Limits(config.max_body_bytes, config.max_body_bytes, config.max_urls)
        document = parse_document(body, sub.topic, now, limits)
        report = document.report
        if report.outcome in _REFUSED:
            raise _Refused(
                422, f"the pushed document was refused ({report.outcome}): {report.error}"
            )
        self.server.limit_host((urlsplit(sub.topic).hostname or "").lower())
        updates = [(update.url, update.when) for update in document.past]
        result = self.server.record_times(updates) if updates else NotifyResult()
        self._answer(
            200,
            {
                "accepted": result.accepted,
                "added": len(result.added),
                "updated": len(result.updated),
                "seen": len(result.seen),
                "rejected": len(result.rejected),
                "skipped": sum(report.skipped.values()),
                "outcome": report.outcome,
            },
        )


class NotifyServer(ThreadingHTTPServer):
    """The endpoint, recording into ``store``; ``with NotifyServer(...) as s: s.serve()``.

    :param store: where notifications are recorded (thread-safe use is serialised here).
    :param config: authentication and limits.
    :param address: (host, port) to listen on; port 0 picks a free one.
    :param clock: returns the current Unix time (rate limits and recorded times).
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
        self.client_limiter = RateLimiter(config.rate_limit, config.rate_window)
        self.host_limiter = RateLimiter(config.host_rate_limit, config.rate_window)
        self._limited: set[str] = set()
        #: subscription name -> when to send its next subscription request; failures.
        self._renew_at: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        #: When the hub last verified each subscription (its lease wins over the asked one).
        self._verified_at: dict[str, float] = {}
        #: connections refused or closed, by reason ("deadline", "too_many_connections")
        self.drops: dict[str, int] = {}
        self._open: dict[int, str] = {}  # id(socket) -> client address
        self._per_client: dict[str, int] = {}
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}{_PATH}"

    def websub_url(self, name: str) -> str:
        """The callback URL of the subscription ``name`` on this server."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}{_WEBSUB}{name}"

    def count(self, status: int) -> None:
        with self._verified_lock:
            self.counts[status] = self.counts.get(status, 0) + 1

    def dropped(self, reason: str, address: str) -> None:
        """Count and log a connection closed without an answer, or refused."""
        with self._verified_lock:
            self.drops[reason] = self.drops.get(reason, 0) + 1
        logger.info("notify-server: connection from %s closed (%s)", address, reason)

    # -- connections per client --------------------------------------------------------

    def verify_request(self, request: Any, client_address: Any) -> bool:
        """Take the connection unless its address already holds the most it may."""
        address = str(client_address[0])
        cap = self.config.max_connections_per_client
        with self._verified_lock:
            held = self._per_client.get(address, 0)
            if cap and held >= cap and not _in(address, self.config.proxy_networks):
                refused = True
            else:
                refused = False
                self._per_client[address] = held + 1
                self._open[id(request)] = address
        if refused:
            self.dropped("too_many_connections", address)
            _answer_raw(request, 429, f"at most {cap} connections per client")
        return not refused

    def shutdown_request(self, request: Any) -> None:
        with self._verified_lock:
            address = self._open.pop(id(request), None)
            if address is not None:
                left = self._per_client.get(address, 1) - 1
                if left > 0:
                    self._per_client[address] = left
                else:
                    self._per_client.pop(address, None)
        super().shutdown_request(request)

    # -- rate limits -------------------------------------------------------------------

    def limit_client(self, address: str) -> None:
        """Spend one of the client's requests; raise a 429 past the limit."""
        self._limit(self.client_limiter, f"client {address}")

    def limit_host(self, host: str) -> None:
        """Spend one of the host's submissions; raise a 429 past the limit."""
        self._limit(self.host_limiter, f"host {host}")

    def _limit(self, limiter: RateLimiter, key: str) -> None:
        wait = limiter.take(key, self.clock())
        with self._verified_lock:
            if not wait:
                self._limited.discard(key)
                return
            first = key not in self._limited
            if first and len(self._limited) < 100_000:
                self._limited.add(key)
        if first:
            logger.warning(
                "notify-server: %s is over the rate limit (%d per %g s); answering 429",
                key,
                limiter.limit,
                self.config.rate_window,
            )
        raise _Refused(
            429,
            f"too many requests from this {key.split(' ', 1)[0]}; retry later",
            {"Retry-After": str(max(1, math.ceil(wait)))},
        )

    # -- checks ------------------------------------------------------------------------

    def check_urls(self, host: str, urls: list[Any]) -> list[str]:
        """``urls`` as Scrapy will fetch them, if all are fetched from ``host``."""
        return [_accepted(url, host) for url in urls]

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
            file_url = self._key_location(host, location)
        else:
            file_url = f"{self.config.key_file_scheme}://{host}/{key}.txt"
        if not self._key_file_ok(host, key, file_url):
            raise _Refused(403, f"the key was not found in the key file of {host}")

    @staticmethod
    def _key_location(host: str, location: str) -> str:
        """``keyLocation`` as it is fetched, if it is on ``host`` (any port)."""
        try:
            fetched = fetch_url(location)
        except URLRefused as exc:
            raise _Refused(422, f"keyLocation: {exc}") from None
        if fetched.host != parse_host(host)[0]:
            raise _Refused(422, "keyLocation must be a URL on the host itself")
        return fetched.url

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

    # -- subscribing at hubs (WebSub 5.1) ----------------------------------------------

    def callback_url(self, name: str) -> str | None:
        """The callback URL hubs are given for the subscription ``name``."""
        base = self.config.callback_base
        return None if base is None else f"{base.rstrip('/')}{_WEBSUB}{name}"

    def subscribe_due(self) -> int:
        """Send the subscription requests that are due: each subscription with a hub at
        first, then again at 90% of its lease (or after a failure, with back-off from
        one minute to an hour). Return how many were sent."""
        sent = 0
        for name, sub in sorted(self.config.websub.items()):
            callback = self.callback_url(name)
            if sub.hub is None or callback is None:
                continue
            now = self.clock()
            with self._verified_lock:
                if self._renew_at.get(name, -math.inf) > now:
                    continue
            if urlsplit(sub.hub).scheme != "https":
                logger.warning(
                    "notify-server: the hub of %s is not HTTPS: its secret is sent in clear",
                    name,
                )
            form = subscription_form(sub, callback, self.config.lease_seconds)
            status, reason = send_subscription(sub.hub, form, self.config.hub_timeout)
            sent += 1
            with self._verified_lock:
                if 200 <= status < 300 and self._verified_at.get(name, -math.inf) >= now:
                    pass  # the hub verified it already (granting its own lease): kept
                elif 200 <= status < 300:
                    self._failures.pop(name, None)
                    self._renew_at[name] = now + 0.9 * self.config.lease_seconds
                else:
                    failures = self._failures.get(name, 0) + 1
                    self._failures[name] = failures
                    self._renew_at[name] = now + min(3600.0, 60.0 * 2 ** (failures - 1))
            if 200 <= status < 300:
                logger.info(
                    "notify-server: asked %s to deliver %s to %s (%d)",
                    sub.hub,
                    sub.topic,
                    callback,
                    status,
                )
            else:
                logger.warning(
                    "notify-server: the hub %s refused the subscription %s (%s: %s); "
                    "trying again later",
                    sub.hub,
                    name,
                    status or "no answer",
                    reason,
                )
        return sent

    def subscription_verified(self, name: str, lease_seconds: int | None) -> None:
        """The hub verified ``name``: renew it at 90% of the lease it granted."""
        lease = lease_seconds if lease_seconds else self.config.lease_seconds
        with self._verified_lock:
            now = self.clock()
            self._verified_at[name] = now
            self._renew_at[name] = now + 0.9 * lease
            self._failures.pop(name, None)

    def renew_at(self, name: str) -> float | None:
        """When the subscription ``name`` is next sent to its hub (None: not yet planned)."""
        with self._verified_lock:
            return self._renew_at.get(name)

    def run_subscriber(self, stop: threading.Event, poll_secs: float = 30.0) -> None:
        """Call :meth:`subscribe_due` every ``poll_secs`` until ``stop`` is set."""
        while not stop.is_set():
            try:
                self.subscribe_due()
            except Exception:
                logger.exception("notify-server: subscribing failed")
            stop.wait(poll_secs)

    # -- writing -----------------------------------------------------------------------

    def record(self, urls: list[str]) -> NotifyResult:
        """Record that ``urls`` changed now (IndexNow)."""
        return self._write(
            lambda: record_changes(
                self.store, urls, now=self.clock(), add_unknown=self.config.add_unknown
            )
        )

    def record_times(self, updates: list[tuple[str, float]]) -> NotifyResult:
        """Record updates with their own times (WebSub)."""
        return self._write(
            lambda: record_updates(
                self.store, updates, now=self.clock(), add_unknown=self.config.add_unknown
            )
        )

    def _write(self, write: Callable[[], NotifyResult]) -> NotifyResult:
        try:
            with self._store_lock:
                result = write()
                self.store.flush()
        except StoreError as exc:
            logger.error("notify-server: the store failed: %s", exc)
            raise _Refused(503, "the store is not available; try again later") from None
        logger.info(
            "notify-server: %d URLs recorded (%d new, %d already crawled since)",
            result.accepted,
            len(result.added),
            len(result.seen),
        )
        return result
