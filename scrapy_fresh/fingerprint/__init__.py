"""Judging a page once: changed or not.

* :mod:`~scrapy_fresh.fingerprint.shingles`: word shingles and the 64-bit simhash of a
  page's text (how much changed);
* :mod:`~scrapy_fresh.fingerprint.content`: the page digest of pages without items (the
  main text with noise rules applied, hashed exactly);
* :mod:`~scrapy_fresh.fingerprint.itemfields`: items compared field by field;
* :mod:`~scrapy_fresh.fingerprint.verdict`: the one verdict from those.

See :doc:`/topics/fingerprint`.
"""

from __future__ import annotations

from scrapy_fresh.fingerprint.shingles import (
    changed,
    fingerprint_html,
    fingerprint_text,
    hamming,
    simhash_features,
)

__all__ = ["changed", "fingerprint_html", "fingerprint_text", "hamming", "simhash_features"]
