"""Tolerant date parsing for sitemaps, feeds and HTTP headers: a bad value gives None.

The package's only date parsers: the conditional check
(:func:`~scrapy_fresh.validators.parse_http_date`) and the provider signals read an HTTP
date with the same :func:`parse_rfc822`, so they never disagree about one header.

Providers write dates in two families: W3C/ISO 8601 (sitemap ``<lastmod>``, Atom,
``sy:updateBase``) and RFC 822/1123 (RSS ``pubDate``, HTTP headers). Both parsers
return Unix seconds or ``None``; callers count a ``None`` as a skipped value and go on
with the next one. A date without a time zone is read as UTC (what sitemaps mean; the
RSS specification requires a zone, and we prefer a usable value to none).
"""

from __future__ import annotations

import calendar
import math
import re
from email.utils import parsedate_tz
from functools import lru_cache

__all__ = ["parse_rfc822", "parse_w3c"]

_W3C = re.compile(
    r"""^\s*(?P<y>\d{4})
    (?:-(?P<mo>\d{2})
      (?:-(?P<d>\d{2})
        (?:[T ](?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<frac>\d{1,9}))?)?
          \s*(?P<tz>Z|z|[+-]\d{2}:?\d{2}|[+-]\d{2}|UTC|GMT)?
        )?
      )?
    )?\s*$""",
    re.VERBOSE,
)


def _seconds(y: int, mo: int, d: int, h: int, mi: int, s: int) -> float | None:
    if not (1 <= mo <= 12 and 1 <= d <= calendar.monthrange(y, mo)[1]):
        return None
    if not (0 <= h <= 23 and 0 <= mi <= 59 and 0 <= s <= 60):
        return None
    return float(calendar.timegm((y, mo, d, h, mi, min(s, 59), 0, 0, 0)))


def parse_w3c(text: str | None) -> float | None:
    """Return the Unix time of a W3C datetime (ISO 8601 profile), or None if malformed.

    Accepts ``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD`` and date-times with optional seconds,
    fraction and zone (``Z``, ``+hh:mm``, ``+hhmm``, ``+hh``).

    >>> parse_w3c("2005-01-01")
    1104537600.0
    >>> parse_w3c("2004-12-23T18:00:15+01:00")
    1103821215.0
    >>> parse_w3c("2004-13-01") is None, parse_w3c("yesterday") is None
    (True, True)
    """
    if not text or len(text) > 64:
        return None
    m = _W3C.match(text)
    if m is None:
        return None
    y = int(m["y"])
    if y < 1970 or y > 9999:
        return None
    base = _seconds(
        y,
        int(m["mo"] or 1),
        int(m["d"] or 1),
        int(m["h"] or 0),
        int(m["mi"] or 0),
        int(m["s"] or 0),
    )
    if base is None:
        return None
    if m["frac"]:
        base += float(f"0.{m['frac']}")
    tz = m["tz"]
    if tz and tz not in ("Z", "z", "UTC", "GMT"):
        sign = -1 if tz[0] == "-" else 1
        digits = tz[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:] or 0)
        if hours > 14 or minutes > 59:
            return None
        base -= sign * (hours * 3600 + minutes * 60)
    return base


def parse_rfc822(text: str | None) -> float | None:
    """Return the Unix time of an RFC 822/1123 date (RSS, HTTP), or None if malformed.

    Time-zone names beyond those :mod:`email.utils` knows are read as UTC; a
    two-digit year is read as the RFC 2822 rules say.

    >>> parse_rfc822("Sat, 07 Sep 2002 00:00:01 GMT")
    1031356801.0
    >>> parse_rfc822("Sat, 07 Sep 2002 02:00:01 +0200")
    1031356801.0
    >>> parse_rfc822("Sat, 31 Feb 2002 00:00:01 GMT") is None
    True
    """
    if not text or len(text) > 128:
        return None
    return _parse_rfc822(text)


@lru_cache(maxsize=1024)  # the Date of every answer in the same second is the same text
def _parse_rfc822(text: str) -> float | None:
    try:
        parts = parsedate_tz(text.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parts is None:
        return None
    y, mo, d, h, mi, s = parts[:6]
    if y < 1970 or y > 9999:
        return None
    try:
        base = _seconds(y, mo, d, h, mi, s)
    except (ValueError, OverflowError):
        return None
    if base is None:
        return None
    offset = parts[9] or 0
    if abs(offset) > 14 * 3600:
        return None
    value = base - offset
    return value if math.isfinite(value) else None
