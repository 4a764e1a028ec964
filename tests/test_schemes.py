"""The content rules of each digest scheme tag, kept in the store
(scrapy_fresh.crawl.schemes): a page whose rules changed is digested again by the old
ones, so its verdict stays exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.crawl.schemes import SCHEME_NAMESPACE, ContentSchemes
from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.fingerprint.content import CONTENT_VERSION, ContentRules, digest, digest_scheme
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
    assert later.candidates(OLD.scheme) == [OLD]
    assert later.candidates(NEW.scheme) == []  # never written
    assert later.candidates(OLD.scheme) == [OLD]  # (read once)
    later.remember(OLD)  # already there: nothing written twice
    assert len(store.get_meta(SCHEME_NAMESPACE, f"{OLD.scheme:04x}")["sets"]) == 1
    assert seen == []


def test_rules_of_another_version_or_damaged_or_of_another_tag_are_left_out(store: Any) -> None:
    seen, error = _errors()
    key = f"{OLD.scheme:04x}"
    sets = [
        {"version": 1, "include": [], "exclude": []},  # another CONTENT_VERSION
        {"version": CONTENT_VERSION, "exclude": ["div[["]},  # damaged
        {"version": CONTENT_VERSION, "exclude": [".x"], "noise": []},  # makes another tag
        "not a dict",
    ]
    store.put_meta(SCHEME_NAMESPACE, key, {"sets": sets})
    assert ContentSchemes(lambda: store, error).candidates(OLD.scheme) == []
    ContentSchemes(lambda: store, error).remember(OLD)  # added beside them
    assert ContentSchemes(lambda: store, error).candidates(OLD.scheme) == [OLD]
    store.put_meta(SCHEME_NAMESPACE, key, {"something": "else"})
    assert ContentSchemes(lambda: store, error).candidates(OLD.scheme) == []
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
    assert schemes.candidates(OLD.scheme) == []
    assert seen == ["read the content rules from: gone"]
    failing.fail = False
    assert schemes.candidates(OLD.scheme) == [OLD]  # not cached as unknown


def _judged(stored: PageState, page: str, schemes: ContentSchemes | None) -> tuple[bool, str]:
    found = digest(page, rules=NEW)

    def redigest(tag: int) -> tuple[int, ...] | None:
        others = schemes.candidates(tag) if schemes is not None else []
        return tuple(digest(page, rules=old).exact for old in others if old != NEW) or None

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
