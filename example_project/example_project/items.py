"""The one item type of the example project."""

from __future__ import annotations

import scrapy


class Article(scrapy.Item):
    """A page's content. scrapy_fresh compares ``title``, ``body`` and ``date`` exactly
    (FRESH_FINGERPRINT_FIELDS) and sets ``fresh_changed`` (True for a new or changed
    item, False for an unchanged one) and ``fresh_changed_fields`` (the fields that
    changed)."""

    url = scrapy.Field()
    section = scrapy.Field()
    title = scrapy.Field()
    body = scrapy.Field()
    date = scrapy.Field()
    fresh_changed = scrapy.Field()
    fresh_changed_fields = scrapy.Field()
