"""The content rules of each digest scheme tag, kept in the store
(scrapy_fresh.crawl.schemes): a page whose rules changed is digested again by the old
ones, so its verdict stays exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.crawl.schemes import SCHEME_NAMESPACE, ContentSchemes
from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.fingerprint.content import ContentRules, digest, digest_scheme
from scrapy_fresh.fingerprint.verdict import PageContent, judge
from scrapy_fresh.store.base import PageState
from scrapy_fresh.store.memory import MemoryStore
from scrapy_fresh.store.sqlite import SQLiteStore

PAGE = (
    "<html><body><main><h1>Kettle</h1><p>Price 24.90 EUR</p>"
    + "".join(f"<p>Paragraph {n} about kettles and their many uses.</p>" for n in range(30))
    + "<div class='reviews'>4 reviews</div></main></body></html>"
)
OLD = ContentRules.build()
NEW = ContentRules.build(exclude=[".reviews"])


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    made = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "s.sqlite")
    yield made
    made.close()


def _errors() -> tuple[list[str], Any]:
    seen: list[str] = []
    return seen, lambda action, exc: seen.append(f"{action}: {exc}")


def test_rules_written_in_one_run_are_read_in_the_next(store: Any) -> None:
    seen, error = _errors()
    ContentSchemes(lambda: store, error).remember(OLD)
    later = ContentSchemes(lambda: store, error)
    assert later.rules_of(OLD.scheme) == OLD
    assert later.rules_of(NEW.scheme) is None  # never written
    assert later.rules_of(OLD.scheme) == OLD  # (read once)
    assert seen == []


def test_rules_of_another_version_or_damaged_or_colliding_are_unknown(store: Any) -> None:
    seen, error = _errors()
    key = f"{OLD.scheme:04x}"
    store.put_meta(SCHEME_NAMESPACE, key, {"version": 1, "include": [], "exclude": []})
    assert ContentSchemes(lambda: store, error).rules_of(OLD.scheme) is None
    store.put_meta(SCHEME_NAMESPACE, key, {"version": 4, "exclude": ["div[["]})
    assert ContentSchemes(lambda: store, error).rules_of(OLD.scheme) is None
    store.put_meta(SCHEME_NAMESPACE, key, {"version": 4, "exclude": [".x"], "noise": []})
    assert ContentSchemes(lambda: store, error).rules_of(OLD.scheme) is None  # other tag
    # remember() leaves a tag another rule set holds as it is
    ContentSchemes(lambda: store, error).remember(OLD)
    assert store.get_meta(SCHEME_NAMESPACE, key)["exclude"] == [".x"]
    assert seen == []


def test_a_store_failure_is_reported_and_asked_again() -> None:
    class Failing(MemoryStore):
        fail = False

        def get_meta(self, namespace: str, key: str) -> dict[str, Any] | None:
            if self.fail:
                raise StoreError("gone")
            return super().get_meta(namespace, key)

    failing = Failing()
    ContentSchemes(lambda: failing, lambda a, e: None).remember(OLD)
    failing.fail = True
    seen, error = _errors()
    schemes = ContentSchemes(lambda: failing, error)
    assert schemes.rules_of(OLD.scheme) is None
    assert seen == ["read the content rules from: gone"]
    failing.fail = False
    assert schemes.rules_of(OLD.scheme) == OLD  # not cached as unknown


def _judged(stored: PageState, page: str, schemes: ContentSchemes | None) -> tuple[bool, str]:
    found = digest(page, rules=NEW)

    def redigest(tag: int) -> int | None:
        old = schemes.rules_of(tag) if schemes is not None else None
        return None if old is None else digest(page, rules=old).exact

    verdict = judge(stored, PageContent(found.simhash, digest=found.exact, redigest=redigest), 3)
    return verdict.changed, verdict.basis


def test_a_page_whose_rules_changed_is_judged_exactly_by_the_old_ones(store: Any) -> None:
    before = digest(PAGE, rules=OLD)
    stored = PageState(
        "0" * 40, "http://shop.test/k", last_crawl=1.0, fingerprint=before.simhash,
        content_hash=before.exact,
    )  # fmt: skip
    assert digest_scheme(before.exact) != NEW.scheme
    ContentSchemes(lambda: store, lambda a, e: None).remember(OLD)
    schemes = ContentSchemes(lambda: store, lambda a, e: None)
    assert _judged(stored, PAGE, schemes) == (False, "digest")
    edited = PAGE.replace("24.90", "24.99")  # a digit: the simhash (digits as 0) is blind
    assert _judged(stored, edited, schemes) == (True, "digest")
    assert _judged(stored, edited, None) == (False, "simhash")  # what it would miss
