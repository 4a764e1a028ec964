"""WebSub, the subscriber's side: subscriptions, signatures, intent verification.

WebSub (W3C Recommendation, 23 January 2018) lets a hub push a topic's new content to a
subscriber's callback URL: a content distribution request is a POST whose body is the
topic's content (for a feed, possibly only its new entries), with ``Link`` headers
naming the hub (``rel=hub``) and the topic (``rel=self``) and, when the subscription has
a secret, an ``X-Hub-Signature: method=hexdigest`` header, the HMAC of the body keyed
with the secret (section 8). Before a subscription starts, the hub checks the
subscriber meant it with a GET carrying ``hub.mode``, ``hub.topic``, ``hub.challenge``
(and ``hub.lease_seconds``); the subscriber echoes the challenge or answers 404
(section 5.3).

The spec says a subscriber must not identify a subscription by the ``Link`` headers
(the topic URL may have changed), so each subscription here has its own callback path,
``/websub/<name>`` (an unguessable name is best: the spec's capability URL), with its
topic and secret. Every subscription must have a secret: an unsigned content
distribution would be an unauthenticated write.

:func:`subscription_form` builds the subscription request a subscriber POSTs to the hub
(section 5.1). Used by ``scrapy-fresh notify-server`` (:mod:`scrapy_fresh.notify.server`,
which also sends it); no network or store here.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from scrapy_fresh.notify.record import check_url

__all__ = [
    "HASHES",
    "MAX_CHALLENGE_LENGTH",
    "MIN_SECRET_LENGTH",
    "Subscription",
    "check_challenge",
    "check_signature",
    "link_urls",
    "load_subscriptions",
    "sign",
    "subscription_form",
]

#: The recognised ``X-Hub-Signature`` methods (WebSub section 8.1).
HASHES: dict[str, Callable[..., Any]] = {
    "sha1": hashlib.sha1,
    "sha256": hashlib.sha256,
    "sha384": hashlib.sha384,
    "sha512": hashlib.sha512,
}
#: Shortest secret accepted (the spec asks for a cryptographically random one).
MIN_SECRET_LENGTH = 16
#: A ``hub.secret`` "MUST be less than 200 bytes" (section 5.1).
MAX_SECRET_BYTES = 199
#: Longest ``hub.challenge`` echoed (the spec asks subscribers to limit it, section 9).
MAX_CHALLENGE_LENGTH = 200
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_CHALLENGE = re.compile(r"^[\x21-\x7e]+$")
_LINK = re.compile(r"<([^>]*)>((?:\s*;\s*[^,;]*)*)")
_REL = re.compile(r"""\brel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))""", re.IGNORECASE)


@dataclass(frozen=True)
class Subscription:
    """One WebSub subscription: content for ``topic`` arrives at ``/websub/<name>``.

    :param name: the callback path segment: 1-128 characters of ``A-Za-z0-9_-``.
    :param topic: the topic URL; pushed entries may only speak for its site.
    :param secret: the ``hub.secret`` given to the hub (16 characters to 199 bytes).
    :param hub: the hub's URL (kept for reference; this module sends nothing).
    """

    name: str
    topic: str
    secret: str
    hub: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(
                f"subscription name {self.name!r} must be 1-128 characters of A-Z, a-z, "
                "0-9, '_' and '-' (it is the callback path /websub/<name>)."
            )
        problem = check_url(self.topic)
        if problem is not None:
            raise ValueError(f"subscription {self.name}: topic {self.topic!r} is {problem}.")
        if (
            not isinstance(self.secret, str)
            or len(self.secret) < MIN_SECRET_LENGTH
            or len(self.secret.encode("utf-8")) > MAX_SECRET_BYTES
        ):
            raise ValueError(
                f"subscription {self.name}: the secret must be a string of at least "
                f"{MIN_SECRET_LENGTH} characters and at most {MAX_SECRET_BYTES} bytes (a "
                "random one: every content distribution is checked against it)."
            )
        if self.hub is not None and check_url(self.hub) is not None:
            raise ValueError(f"subscription {self.name}: hub {self.hub!r} is not an http(s) URL.")


def load_subscriptions(data: Any, where: str = "the subscriptions") -> dict[str, Subscription]:
    """Subscriptions from JSON data ``{"<name>": {"topic": ..., "secret": ..., "hub": ...}}``.

    Raises TypeError (not an object) or ValueError (a bad entry), naming ``where``.

    >>> subs = load_subscriptions({"news": {"topic": "https://e.test/feed",
    ...                                     "secret": "0123456789abcdef"}})
    >>> subs["news"].topic
    'https://e.test/feed'
    >>> load_subscriptions({"news": {"topic": "https://e.test/feed"}})
    Traceback (most recent call last):
    ...
    ValueError: the subscriptions: news needs "topic" and "secret" strings.
    """
    if not isinstance(data, Mapping):
        raise TypeError(
            f'{where} must be a JSON object {{"<name>": {{"topic": URL, "secret": ...}}}}.'
        )
    result: dict[str, Subscription] = {}
    for name, entry in data.items():
        if not isinstance(entry, Mapping) or not all(
            isinstance(entry.get(k), str) for k in ("topic", "secret")
        ):
            raise ValueError(f'{where}: {name} needs "topic" and "secret" strings.')
        unknown = set(entry) - {"topic", "secret", "hub"}
        if unknown:
            raise ValueError(f"{where}: {name} has unknown keys {sorted(unknown)}.")
        hub = entry.get("hub")
        if hub is not None and not isinstance(hub, str):
            raise ValueError(f"{where}: {name}'s hub must be a URL string.")
        try:
            result[str(name)] = Subscription(str(name), entry["topic"], entry["secret"], hub)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return result


def sign(body: bytes, secret: str, method: str = "sha256") -> str:
    """The ``X-Hub-Signature`` value a hub sends for ``body`` (what a test hub needs).

    >>> sign(b"x", "0123456789abcdef", "sha1")
    'sha1=512db29bd1e993f874ae719e286203d6c3c50114'
    """
    digest = hmac.new(secret.encode("utf-8"), body, HASHES[method]).hexdigest()
    return f"{method}={digest}"


def check_signature(header: str | None, body: bytes, secret: str) -> str | None:
    """Why ``header`` (an ``X-Hub-Signature`` value) does not sign ``body``; None if it does.

    >>> body, secret = b"<feed/>", "0123456789abcdef"
    >>> check_signature(sign(body, secret), body, secret) is None
    True
    >>> check_signature(sign(body, secret), b"<feed>forged</feed>", secret)
    'the signature does not match the body'
    >>> check_signature("md5=abc", body, secret)
    "the signature method 'md5' is not one of sha1, sha256, sha384, sha512"
    >>> check_signature(None, body, secret)
    'no X-Hub-Signature header (the subscription has a secret)'
    """
    if header is None or not header.strip():
        return "no X-Hub-Signature header (the subscription has a secret)"
    method, sep, given = header.strip().partition("=")
    method = method.strip().lower()
    if not sep:
        return "the X-Hub-Signature header is not of the form method=signature"
    if method not in HASHES:
        return f"the signature method {method[:20]!r} is not one of {', '.join(HASHES)}"
    expected = hmac.new(secret.encode("utf-8"), body, HASHES[method]).hexdigest()
    if not hmac.compare_digest(expected, given.strip().lower()):
        return "the signature does not match the body"
    return None


def check_challenge(challenge: str) -> str | None:
    """Why ``challenge`` (a ``hub.challenge``) is not echoed; None if it can be.

    >>> check_challenge("abc123") is None
    True
    >>> check_challenge("<script>") is None
    True
    >>> check_challenge("a b")
    'hub.challenge must be 1-200 printable ASCII characters without spaces'
    """
    if not 0 < len(challenge) <= MAX_CHALLENGE_LENGTH or not _CHALLENGE.match(challenge):
        return (
            f"hub.challenge must be 1-{MAX_CHALLENGE_LENGTH} printable ASCII characters "
            "without spaces"
        )
    return None


def link_urls(values: Iterable[str], rel: str) -> list[str]:
    """The URLs of the ``Link`` header ``values`` whose ``rel`` includes ``rel``.

    >>> link_urls(['<https://hub.test/>; rel="hub", <https://e.test/feed>; rel=self'], "self")
    ['https://e.test/feed']
    """
    found: list[str] = []
    for value in values:
        for match in _LINK.finditer(value[:8192]):
            url, params = match.groups()
            for rel_match in _REL.finditer(params):
                rels = (rel_match.group(1) or rel_match.group(2) or "").lower().split()
                if rel.lower() in rels:
                    found.append(url.strip())
    return found


def subscription_form(
    sub: Subscription, callback: str, lease_seconds: int, mode: str = "subscribe"
) -> bytes:
    """The ``application/x-www-form-urlencoded`` body of a subscription request for
    ``sub`` with the callback URL ``callback`` (WebSub 5.1).

    >>> sub = Subscription("n", "https://e.test/feed", "0123456789abcdef", "https://hub.test/")
    >>> subscription_form(sub, "https://me.test/websub/n", 864000).decode()[:77]
    'hub.callback=https%3A%2F%2Fme.test%2Fwebsub%2Fn&hub.mode=subscribe&hub.topic='
    """
    if mode not in ("subscribe", "unsubscribe"):
        raise ValueError(f"mode ({mode!r}) must be 'subscribe' or 'unsubscribe'.")
    if isinstance(lease_seconds, bool) or not isinstance(lease_seconds, int) or lease_seconds < 1:
        raise ValueError(f"lease_seconds ({lease_seconds!r}) must be a whole number above 0.")
    return urlencode(
        {
            "hub.callback": callback,
            "hub.mode": mode,
            "hub.topic": sub.topic,
            "hub.secret": sub.secret,
            "hub.lease_seconds": str(lease_seconds),
        }
    ).encode("ascii")
