"""runtime.documents: the spider's sitemaps a crawl has read, kept in the store."""

from __future__ import annotations

from typing import Any

from scrapy_fresh.crawl.documents import DOCUMENT_NAMESPACE, KnownDocuments
from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.store.sqlite import SQLiteStore

KEY = "0" * 40


def test_a_document_is_remembered_in_the_store(tmp_path: Any) -> None:
    store = SQLiteStore(tmp_path / "s.sqlite")
    errors: list[str] = []
    first = KnownDocuments(lambda: store, lambda action, exc: errors.append(action))
    assert KEY not in first
    first.add(KEY, "sitemapindex")
    first.add("1" * 40, "rss")  # a feed: its own schedule says when
    assert KEY in first
    store.close()
    store = SQLiteStore(tmp_path / "s.sqlite")
    again = KnownDocuments(lambda: store, lambda action, exc: errors.append(action))
    assert KEY in again
    assert "1" * 40 not in again
    assert store.get_meta(DOCUMENT_NAMESPACE, KEY) == {"kind": "sitemapindex"}
    assert errors == []
    store.close()


class _Failing:
    def meta(self, namespace: str) -> Any:
        raise StoreError("Redis is gone")

    def put_meta(self, namespace: str, key: str, value: Any) -> None:
        raise StoreError("Redis is gone")


def test_a_store_that_fails_forces_nothing_and_is_reported() -> None:
    errors: list[str] = []
    known = KnownDocuments(lambda: _Failing(), lambda action, exc: errors.append(action))  # type: ignore[arg-type,return-value]
    assert KEY not in known
    known.add(KEY, "sitemap")
    assert KEY not in known  # not written: taken again from the next read
    assert len(errors) == 2
