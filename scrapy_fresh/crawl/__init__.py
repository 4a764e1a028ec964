"""The Scrapy glue: everything of scrapy_fresh that imports Scrapy or Twisted.

The add-on (:mod:`~scrapy_fresh.crawl.addon`) installs the scheduler, the middlewares,
the pipeline and the extensions; :mod:`~scrapy_fresh.crawl.runtime` wires them to one
store and clock per crawl, and :mod:`~scrapy_fresh.crawl.records` is the one write path
of page records during a crawl. See :doc:`/topics/architecture`.
"""
