"""scrapy_fresh: keep a Scrapy-crawled collection fresh.

The package is layered (see ``docs/topics/architecture.rst``):

* :mod:`scrapy_fresh.policy` -- pure maths (standard library only),
* :mod:`scrapy_fresh.fingerprint` -- shingles and 64-bit simhash,
* :mod:`scrapy_fresh.store` -- URL records behind one protocol (memory, SQLite),
* the Scrapy glue (scheduler, middlewares, pipelines, add-on) on top:
  ``ADDONS = {"scrapy_fresh.Addon": 0}`` installs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Addon", "__version__"]

if TYPE_CHECKING:
    from scrapy_fresh.addon import Addon


def __getattr__(name: str) -> Any:
    # Imported on first use so that ``import scrapy_fresh.policy`` stays free of Scrapy.
    if name == "Addon":
        from scrapy_fresh.addon import Addon

        return Addon
    raise AttributeError(f"module 'scrapy_fresh' has no attribute {name!r}")
