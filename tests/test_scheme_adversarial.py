"""Adversarial tests of the content scheme tags (scrapy_fresh.crawl.schemes): a change of
the content rules must never make every page "changed", and an edit made in the same run
as the change must still be seen, exactly.

Real parts: the SQLite store, the spider middleware's ``page_content`` (what a crawl
calls for a page without items), ``judge``. Written by an adversarial run against the
first version of the feature (session 12): each docstring tells what failed then; the
fixes (every rule set of a tag kept and tried, a failed write tried again, a rules
record no store can hold reported, an empty page under XPath rules) make them pass.
The strict xfail is a limitation the docs state. The ones named "holds" passed then.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from scrapy.http import HtmlResponse, Request

from scrapy_fresh.crawl.middlewares import page_content
from scrapy_fresh.crawl.schemes import SCHEME_NAMESPACE, ContentSchemes
from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.fingerprint import content as content_module
from scrapy_fresh.fingerprint.content import DEFAULT_RULES, ContentRules, digest_scheme
from scrapy_fresh.fingerprint.verdict import judge
from scrapy_fresh.store.base import PageState
from scrapy_fresh.store.sqlite import SQLiteStore

THRESHOLD = 3  # FRESH_FINGERPRINT_THRESHOLD_BITS' default


def product(n: int, price: str = "24.90", stock: int = 7) -> bytes:
    """A shop's product page; the product's own block is ``#product-<n>``."""
    body = "".join(
        f"<p>Paragraph {k} about product {n}, a sturdy kettle for every kitchen.</p>"
        for k in range(25)
    )
    return (
        "<html><head><title>P</title></head><body><nav><a href='/'>Home</a></nav><main>"
        f"<div id='product-{n}'><h1>Kettle {n}</h1><p class='price'>Price {price} EUR</p>"
        f"<p class='stock'>{stock} in stock</p></div>{body}"
        "<div class='reviews'>4 reviews, latest: great kettle</div>"
        "<div class='promo-13795'>Sale! Free shipping this week</div>"
        "</main></body></html>"
    ).encode()


def response(url: str, body: bytes) -> HtmlResponse:
    return HtmlResponse(url, body=body, encoding="utf-8", request=Request(url))


class Run:
    """One crawl's view: its ContentSchemes over a real SQLite store, errors collected."""

    def __init__(self, path: Path, **store_args: Any) -> None:
        self.store = SQLiteStore(path, **store_args)
        self.errors: list[str] = []
        self.schemes = ContentSchemes(
            lambda: self.store, lambda action, exc: self.errors.append(f"{action}: {exc}")
        )

    def visit(
        self, url: str, body: bytes, rules: ContentRules, state: PageState | None
    ) -> tuple[PageState, bool | None, str | None]:
        """Judge ``body`` against ``state`` as the spider middleware does; return the
        state as written, whether the page changed and the verdict's basis (None, None:
        a new page)."""
        content = page_content(response(url, body), rules, self.schemes)
        if state is None:
            state = PageState(hashlib.sha1(url.encode()).hexdigest(), url)
            changed = basis = None
        else:
            verdict = judge(state, content, THRESHOLD)
            changed, basis = verdict.changed, verdict.basis
        state.last_crawl = 1.0
        state.fingerprint = content.simhash
        state.content_hash = content.digest
        return state, changed, basis

    def close(self) -> None:
        self.store.close()


def _url(n: int) -> str:
    return f"http://shop.test/p/{n}"


# --- 1. per-request rules: 16-bit tags collide, the wrong rules are applied ---------------

#: Two per-page include selectors whose rules share a scheme tag (found by counting up:
#: among the 1000 selectors ``#product-0`` .. ``#product-999`` six such pairs exist).
COLLIDING = (61, 69)


def test_per_page_rules_that_share_a_tag_are_each_tried(
    tmp_path: Path,
) -> None:
    """A watcher gives each product page its own include selector (request meta
    ``fresh_content_include = ["#product-<n>"]``, as a changedetection.io user sets a
    filter per watch). 16-bit tags: a thousand such rule sets hold six colliding pairs.
    ``remember`` keeps the first rules of a tag and drops the second; when the rules of
    every page change later (one ``exclude`` added), the second page is digested again
    by the first page's rules: "changed", though nothing on it changed."""
    a, b = COLLIDING
    rules_a = ContentRules.build(include=[f"#product-{a}"])
    rules_b = ContentRules.build(include=[f"#product-{b}"])
    assert rules_a != rules_b
    assert rules_a.scheme == rules_b.scheme
    tags = [ContentRules.build(include=[f"#product-{n}"]).scheme for n in range(1000)]
    assert len(tags) - len(set(tags)) == 6  # not a freak: the birthday bound at work

    run1 = Run(tmp_path / "s.sqlite")
    state_a, _, _ = run1.visit(_url(a), product(a), rules_a, None)
    state_b, _, _ = run1.visit(_url(b), product(b), rules_b, None)
    run1.close()

    run2 = Run(tmp_path / "s.sqlite")  # the next run: every page also drops ".reviews"
    _, changed_a, _ = run2.visit(
        _url(a), product(a), rules_a.replace(exclude=[".reviews"]), state_a
    )
    _, changed_b, basis_b = run2.visit(
        _url(b), product(b), rules_b.replace(exclude=[".reviews"]), state_b
    )
    run2.close()
    assert changed_a is False
    assert (changed_b, basis_b) == (False, "digest"), "page b did not change"


def test_new_rules_with_the_old_rules_tag_do_not_flood(tmp_path: Path) -> None:
    """The user adds ``FRESH_CONTENT_EXCLUDE = [".promo-13795"]`` (a promotion banner on
    every page). Its tag is DEFAULT_RULES' (a 1 in 65536 chance for any change), so the
    stored digests are compared as if made by the same rules: every page "changed",
    the flood the tags exist to prevent. (Nothing tells the two apart: the store holds
    the old rules under that tag, ``remember`` leaves them, ``judge`` never asks.)"""
    new = ContentRules.build(exclude=[".promo-13795"])
    assert new != DEFAULT_RULES
    assert new.scheme == DEFAULT_RULES.scheme
    run1 = Run(tmp_path / "s.sqlite")
    states = {n: run1.visit(_url(n), product(n), DEFAULT_RULES, None)[0] for n in range(20)}
    run1.close()
    run2 = Run(tmp_path / "s.sqlite")
    changed = {n for n, s in states.items() if run2.visit(_url(n), product(n), new, s)[1]}
    held = run2.store.get_meta(SCHEME_NAMESPACE, f"{new.scheme:04x}")
    run2.close()
    assert held is not None
    assert [h["exclude"] for h in held["sets"]] == [[], [".promo-13795"]]  # both kept
    assert changed == set(), f"{len(changed)} of 20 unchanged pages reported changed"


# --- 2. the rules record not written: a store error is never retried -------------------


def test_a_failed_write_of_the_rules_is_tried_again(tmp_path: Path) -> None:
    """Another process holds the SQLite write lock (``scrapy-fresh block``, the notify
    server, a DB browser) when the run's first page without items is judged: writing
    the rules record fails, as it may. The lock goes; hundreds of pages are recorded
    with digests of these rules, but their rules are never written: ``remember`` marked
    the tag written before trying. At the next rules change every page is "unknown",
    judged by the simhash: the same-run one-digit edit the feature promises to see is
    missed (and a larger rules change floods, see the next test)."""
    path = tmp_path / "s.sqlite"
    SQLiteStore(path).close()
    run1 = Run(path, timeout=0.2)
    lock = sqlite3.connect(path, timeout=0.2, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # another writer
    state0, _, _ = run1.visit(_url(0), product(0), DEFAULT_RULES, None)
    with pytest.raises(StoreError):  # the page's own write fails as well, that page only
        run1.store.put(state0)
    lock.execute("ROLLBACK")
    lock.close()
    assert run1.errors
    assert "note the content rules in" in run1.errors[0]
    states = {n: run1.visit(_url(n), product(n), DEFAULT_RULES, None)[0] for n in range(1, 6)}
    run1.close()

    run2 = Run(path)
    new = ContentRules.build(exclude=[".reviews"])
    verdicts = {
        n: run2.visit(_url(n), product(n, price="24.99" if n == 1 else "24.90"), new, s)[1:]
        for n, s in states.items()
    }
    run2.close()
    assert verdicts[1] == (True, "digest"), f"the edit of page 1: {verdicts[1]}"
    assert all(v == (False, "digest") for n, v in verdicts.items() if n != 1), verdicts


# --- 3. rules unknown: the simhash fallback floods when the rules change much ---------


@pytest.mark.xfail(
    strict=True,
    reason="known limitation: rules that cannot be applied again (an upgrade) leave the "
    "simhash, which a narrowed include moves on every page",
)
def test_an_upgrade_with_a_rules_change_floods(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented fallback: the stored digest's rules are of another CONTENT_VERSION
    (an upgrade), so the page is judged by the simhash distance "that once". If the user
    narrows the content in the same run (``FRESH_CONTENT_INCLUDE = [".price", ".stock"]``,
    the typical first filter of a price watcher), the old simhash is of the whole main
    text and the new of two lines: more than 3 bits on every page, every page "changed".
    Nothing edited."""
    run1 = Run(tmp_path / "s.sqlite")
    states = {n: run1.visit(_url(n), product(n), DEFAULT_RULES, None)[0] for n in range(20)}
    run1.close()
    monkeypatch.setattr(content_module, "CONTENT_VERSION", content_module.CONTENT_VERSION + 1)
    monkeypatch.setattr(
        "scrapy_fresh.crawl.schemes.CONTENT_VERSION", content_module.CONTENT_VERSION
    )
    new = ContentRules.build(include=[".price", ".stock"])
    assert digest_scheme(states[0].content_hash or 0) != new.scheme
    run2 = Run(tmp_path / "s.sqlite")
    verdicts = {n: run2.visit(_url(n), product(n), new, s)[1:] for n, s in states.items()}
    run2.close()
    assert {v[1] for v in verdicts.values()} == {"simhash"}  # the fallback, as documented
    changed = {n for n, v in verdicts.items() if v[0]}
    assert changed == set(), f"{len(changed)} of 20 unchanged pages reported changed"


# --- 4. rules a store cannot hold ---------------------------------------------------------


def test_an_ignore_pattern_with_surrogates_does_not_break_the_verdict(tmp_path: Path) -> None:
    """``FRESH_CONTENT_IGNORE = ["[\\ud800-\\udfff]"]`` (broken emoji halves, written as
    scrapy_fresh's own ``_SURROGATE`` is) digests fine, but the rules record cannot be
    stored: SQLite raises UnicodeEncodeError (not a StoreError), out of ``remember``,
    out of the page's verdict: the first page without items of the run is not judged
    (the exception reaches Scrapy), and the rules are never kept."""
    rules = ContentRules.build(ignore=["[\ud800-\udfff]"])
    run1 = Run(tmp_path / "s.sqlite")
    try:
        state, _, _ = run1.visit(_url(0), product(0), rules, None)
    finally:
        run1.close()
    assert state.content_hash is not None


def test_old_xpath_rules_judge_an_empty_page(tmp_path: Path) -> None:
    """The user replaced ``FRESH_CONTENT_INCLUDE = ["xpath://div[@class='price']"]`` by a
    CSS selector. A page that now answers an empty document (a doctype alone: a CMS
    error page with status 200) digests fine by the new rules, but is digested again
    by the old XPath ones, and lxml raises ParserError ("Document is empty") out of
    ``judge``: the page is never recorded (it was changed: its content went away).
    (Present before the feature for XPath rules in force; the redigest reaches it after
    the user removed them.)"""
    old = ContentRules.build(include=["xpath://p[@class='price']"])
    new = ContentRules.build(include=["p.price"])
    run1 = Run(tmp_path / "s.sqlite")
    state, _, _ = run1.visit(_url(0), product(0), old, None)
    run1.close()
    run2 = Run(tmp_path / "s.sqlite")
    try:
        _, changed, basis = run2.visit(_url(0), b"<!DOCTYPE html>\n", new, state)
    finally:
        run2.close()
    assert (changed, basis) == (True, "digest")


# --- what holds ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({}, {"noise": []}),  # noise rules switched off
        ({"noise": []}, {}),  # ... and on again
        ({}, {"include": ["xpath://div[starts-with(@id, 'product-')]"]}),
        ({"include": ["xpath://div[starts-with(@id, 'product-')]"]}, {"exclude": ["//nav"]}),
        ({"ignore": [r"\d+ in stock"]}, {"ignore": [r"\d+ in stock", "Sale!.*"]}),
        ({"include": ["main", "main"]}, {"include": ["main"]}),  # same text, other tag
        ({"exclude": [".reviews", ".promo-13795"]}, {"exclude": [".promo-13795", ".reviews"]}),
    ],
)
def test_holds_rules_changes_judged_exactly(
    tmp_path: Path, old: dict[str, Any], new: dict[str, Any]
) -> None:
    """Holds: rules changed in many ways, an edit of the price in the same run is seen
    on the edited page and no other page changes; the run after compares digests of the
    same rules."""
    old_rules, new_rules = ContentRules.build(**old), ContentRules.build(**new)
    assert old_rules.scheme != new_rules.scheme
    run1 = Run(tmp_path / "s.sqlite")
    states = {n: run1.visit(_url(n), product(n), old_rules, None)[0] for n in range(4)}
    run1.close()
    run2 = Run(tmp_path / "s.sqlite")
    verdicts = {
        n: run2.visit(_url(n), product(n, price="24.99" if n == 0 else "24.90"), new_rules, s)[1:]
        for n, s in states.items()
    }
    assert verdicts == {0: (True, "digest"), 1: (False, "digest"), 2: (False, "digest"),
                        3: (False, "digest")}  # fmt: skip
    assert run2.errors == []
    run2.close()


def test_holds_two_rule_sets_in_one_run_alternating(tmp_path: Path) -> None:
    """Holds: a page requested with one rule set in one run and another in the next
    (meta keys that differ between requests), back and forth over four runs."""
    r1 = ContentRules.build(exclude=[".reviews"])
    r2 = ContentRules.build(include=["#product-3"])
    run = Run(tmp_path / "s.sqlite")
    state, _, _ = run.visit(_url(3), product(3), r1, None)
    run.visit(_url(4), product(4), r2, None)  # r2 known in this run too
    run.close()
    seen = []
    for n, rules in enumerate([r2, r1, r2, r1]):
        run = Run(tmp_path / "s.sqlite")
        body = product(3, stock=7 + n // 2)  # stock edited on runs 2 and 4 (n = 2)
        state, changed, basis = run.visit(_url(3), body, rules, state)
        seen.append((changed, basis))
        run.close()
    assert seen == [(False, "digest"), (False, "digest"), (True, "digest"), (False, "digest")]
