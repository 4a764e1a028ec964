"""The Redis backend: one store and frontier shared by many crawl processes.

:mod:`~scrapy_fresh.distributed.store` (records, Lua scripts in
:mod:`~scrapy_fresh.distributed._lua`), :mod:`~scrapy_fresh.distributed.frontier` (the
shared due queue) and :mod:`~scrapy_fresh.distributed.shared` (what a crawl process does
with them: pulling due pages, surviving an outage). See :doc:`/topics/redis`.
"""
