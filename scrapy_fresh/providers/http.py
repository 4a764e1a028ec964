"""Update signals in HTTP response headers.

* ``Last-Modified`` -> :class:`~scrapy_fresh.providers.signals.PastUpdate` (signal
  ``http-lastmod``; smart level).
* ``Cache-Control: max-age`` (less ``Age``), else ``Expires`` (measured against the
  response's ``Date`` so that clock skew between us and the server cancels out) ->
  :class:`~scrapy_fresh.providers.signals.NotBefore` (signal ``cache``): nothing to gain
  from fetching again before then. ``no-store``/``no-cache`` give none.
"""

from __future__ import annotations

from collections.abc import Mapping

from scrapy_fresh.dates import parse_rfc822
from scrapy_fresh.providers._common import FUTURE_TOLERANCE_SECS
from scrapy_fresh.providers.signals import NotBefore, PastUpdate, Signals

__all__ = ["cache_lifetime", "has_header_signals", "header_signals"]

#: Longest lifetime read from a header (one year, RFC 9111's advice for Expires).
MAX_LIFETIME_SECS = 365 * 86400.0


def _delta_seconds(text: str) -> int | None:
    text = text.strip().strip('"')
    if not text.isdigit() or len(text) > 12:
        return None
    return int(text)


def cache_lifetime(headers: Mapping[str, str | None], signals: Signals) -> float | None:
    """Seconds the response stays fresh by ``Cache-Control``/``Expires``, or None.

    Bad values are counted in ``signals.report`` (``bad_number``, ``bad_date``).

    >>> cache_lifetime({"cache-control": "public, max-age=600", "age": "100"}, Signals())
    500.0
    >>> cache_lifetime({"cache-control": "no-cache, max-age=600"}, Signals()) is None
    True
    >>> cache_lifetime({"expires": "Thu, 01 Jan 1970 01:00:00 GMT",
    ...                 "date": "Thu, 01 Jan 1970 00:00:00 GMT"}, Signals())
    3600.0
    """
    control = headers.get("cache-control") or ""
    if not (control or headers.get("expires")):
        return None  # nothing says a lifetime (Date and Age only measure one)
    report = signals.report
    directives: dict[str, str | None] = {}
    for part in control.split(","):
        name, sep, value = part.strip().partition("=")
        if name:
            directives[name.strip().lower()] = value if sep else None
    if "no-store" in directives or "no-cache" in directives:
        return None
    lifetime: float | None = None
    if "max-age" in directives:
        seconds = _delta_seconds(directives["max-age"] or "")
        if seconds is None:
            report.skip("bad_number")
        else:
            lifetime = float(seconds)
    if lifetime is None and headers.get("expires"):
        expires = parse_rfc822(headers.get("expires"))
        if expires is None:
            report.skip("bad_date")  # "0", "-1": already expired, as HTTP says
            return None
        date = parse_rfc822(headers.get("date"))
        if date is None:
            return None  # nothing to measure Expires against safely
        lifetime = expires - date
    if lifetime is None:
        return None
    age = _delta_seconds(headers.get("age") or "") if headers.get("age") else 0
    lifetime -= float(age or 0)
    if lifetime <= 0:
        return None
    return min(lifetime, MAX_LIFETIME_SECS)


def has_header_signals(headers: Mapping[str, str | None]) -> bool:
    """Whether ``headers`` hold anything :func:`header_signals` reads: without a
    ``Last-Modified``, ``Cache-Control`` or ``Expires`` it finds and skips nothing (it reads
    ``Date`` and ``Age`` only to measure the lifetime these give).

    >>> has_header_signals({"etag": '"x"', "date": "Thu, 01 Jan 1970 00:00:00 GMT"})
    False
    >>> has_header_signals({"cache-control": "no-cache"})
    True
    """
    return bool(
        headers.get("last-modified") or headers.get("cache-control") or headers.get("expires")
    )


def header_signals(headers: Mapping[str, str | None], url: str, now: float) -> Signals:
    """Signals of one response's headers (``headers`` by lower-case name).

    >>> s = header_signals({"last-modified": "Thu, 01 Jan 1970 00:01:40 GMT",
    ...                     "cache-control": "max-age=60"}, "http://a.test/", now=1000.0)
    >>> s.past[0].when, s.not_before[0].when
    (100.0, 1060.0)
    """
    signals = Signals()
    signals.report.kind = "headers"
    raw = headers.get("last-modified")
    if raw:
        when = parse_rfc822(raw)
        if when is None:
            signals.report.skip("bad_date")
        elif when > now + FUTURE_TOLERANCE_SECS:
            signals.report.skip("future_date")
        else:
            signals.past.append(PastUpdate(url, when, "http-lastmod"))
    lifetime = cache_lifetime(headers, signals)
    if lifetime is not None:
        signals.not_before.append(NotBefore(url, now + lifetime, "cache"))
    return signals
