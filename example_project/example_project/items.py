"""The one item type of the example project."""

from __future__ import annotations

import scrapy


class Article(scrapy.Item):
    """A page's content. scrapy_fresh fingerprints ``title``, ``body`` and ``date``
    (FRESH_FINGERPRINT_FIELDS) and sets ``fresh_changed``: True for a new or changed
    page, False for an unchanged one."""

    url = scrapy.Field()
    section = scrapy.Field()
    title = scrapy.Field()
    body = scrapy.Field()
    date = scrapy.Field()
    fresh_changed = scrapy.Field()
