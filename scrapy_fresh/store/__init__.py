"""URL state stores behind one protocol (:class:`~scrapy_fresh.store.base.StateStore`)."""

from __future__ import annotations

from scrapy_fresh.store.base import PageState, Provider, SiteState, StateStore, Status

__all__ = ["PageState", "Provider", "SiteState", "StateStore", "Status"]
