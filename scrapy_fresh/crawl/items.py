"""Items scrapy_fresh itself sends through the item pipelines and feed exports."""

from __future__ import annotations

import scrapy

__all__ = ["PageGone"]


class PageGone(scrapy.Item):
    """A page that is gone: its 404 or 410 was confirmed (:setting:`FRESH_GONE_CONFIRMATIONS`
    visits in a row), directly or after a redirect. Sent once when the page becomes gone,
    and again only if it comes back and goes again, so that a search index or a database
    can delete it. See :doc:`/topics/changes`.

    ``url`` the page's URL as recorded; ``key`` its record key
    (:func:`~scrapy_fresh.keys.url_key`); ``last_seen`` the last visit that found the page
    (Unix seconds; None if no visit ever did); ``status`` the HTTP status that confirmed
    it; ``reason`` ``"gone"``, or ``"redirected to a gone page"`` when the request was
    redirected to the 404 or 410.
    """

    url = scrapy.Field()
    key = scrapy.Field()
    last_seen = scrapy.Field()
    status = scrapy.Field()
    reason = scrapy.Field()
