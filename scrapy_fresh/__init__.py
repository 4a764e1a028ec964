"""scrapy_fresh: keep a Scrapy-crawled collection fresh.

The package is layered (see ``docs/topics/architecture.rst``):

* :mod:`scrapy_fresh.policy` -- pure maths (standard library only),
* :mod:`scrapy_fresh.fingerprint` -- shingles and 64-bit simhash,
* :mod:`scrapy_fresh.store` -- URL records behind one protocol (memory, SQLite),
* the Scrapy glue (scheduler, middlewares, pipelines, add-on) on top.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
