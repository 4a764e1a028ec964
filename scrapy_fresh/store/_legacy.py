"""Site rows that were meta records: how stores before schema 6 kept them.

Up to SQLite schema 5 (and in Redis stores written before meta records), the crawl's
trust records, stamped-read counts, quiet claims and run cadence were
:class:`~scrapy_fresh.store.base.SiteState` rows with a ``/`` in their ``host`` and
other meanings for ``p_c`` and ``refresh_secs``. :func:`meta_of_site` turns one such row
into the meta record that replaces it (namespace, key, value), in the value layout the
readers use (:mod:`scrapy_fresh.providers.ledger`, :mod:`scrapy_fresh.crawl.sources`;
``tests/test_meta_records.py`` reads an old file through them). This layout is history:
it never changes.
"""

from __future__ import annotations

from typing import Any

from scrapy_fresh.store.base import SiteState

__all__ = ["is_legacy_site", "meta_of_site"]


def is_legacy_site(host: str) -> bool:
    """Whether a site row is an old meta record (a ``/`` never occurs in a host name)."""
    return "/" in host


def _bits(mask: int, width: int) -> list[int]:
    return [v for v in range(width) if mask >> v & 1]


def meta_of_site(site: SiteState) -> tuple[str, str, dict[str, Any]] | None:
    """The meta record an old site row held, or None (not one, or an empty leftover).

    >>> meta_of_site(SiteState("run/cycle", refresh_secs=60.0, updated_at=5.0))
    ('run', 'cycle', {'period': 60.0, 'started_at': 5.0})
    >>> meta_of_site(SiteState("example.com")) is None
    True
    """
    name = site.host
    value: dict[str, Any]
    if name.startswith("trust/stamped/"):
        if site.visits <= 0:
            return None  # a reset: the documents' dates were believed again
        value = {"reads": site.visits, "entries": site.changes, "read_at": site.updated_at}
        return "trust.stamped", name[len("trust/stamped/") :], value
    if name.startswith("trust/"):
        value = {
            "observations": max(0, site.visits),
            "demoted": bool(site.changes),
            "confirmed": max(0.0, site.p_c),
            "refuted": max(0.0, site.refresh_secs or 0.0),
            "last_claim_at": site.updated_at,
        }
        return "trust", name[len("trust/") :], value
    if name.startswith("quiet/"):
        checks = site.checks or {}
        value = {
            "claimed_at": site.updated_at,
            "own_due": site.p_c,
            "until": site.refresh_secs,
            "hours": _bits(int(checks.get("hours", 0)), 24),
            "days": _bits(int(checks.get("days", 0)), 7),
        }
        return "quiet", name[len("quiet/") :], value
    if name == "run/cycle":
        return "run", "cycle", {"period": site.refresh_secs, "started_at": site.updated_at}
    return None
