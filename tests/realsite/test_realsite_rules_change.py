"""A user changes the content rules between two runs: no flood of "changed", no edit
missed.

Pages without items are judged by the exact digest of their main content; a digest made
by other rules hashes another text, so comparing it would make every page "changed"
once. Its scheme tag tells it apart, and the page is digested once more with the rules
of the stored tag (kept in the store): the verdict stays exact, and a one-digit edit made
in the same run as the rules change is still "changed" (a simhash, digits made ``0``,
cannot see it). A store that does not know the old rules (an upgrade changed the
extraction) falls back on the simhash for that one visit.

Real pages (the Python 3.11 docs) on nginx, a plain spider that yields no item, real
SQLite. Every file is touched between runs (new validators, same body), so that every
page is downloaded and judged, not answered 304.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tests.nginx_support import PYTHON_DOCS, Nginx
from tests.realsite.test_realsite_verdicts import PAGES, one_number, one_word
from tests.realsite_support import addon_cycle

pytestmark = [
    pytest.mark.realsite,
    pytest.mark.usefixtures("nginx_available", "python_docs_available"),
]

#: The new rule: Sphinx's heading links (a pilcrow after every heading) are not content.
NEW_RULES = {"FRESH_CONTENT_IGNORE": ["\u00b6"]}
EDITED = PAGES[::6]


def touch_all(root: Path, when: float) -> None:
    for page in PAGES:
        os.utime(root / page, (when, when))


def copy_pages(root: Path) -> None:
    """The Python docs' :data:`PAGES` under ``root``."""
    for page in PAGES:
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(PYTHON_DOCS) / page, root / page)


def forget_rules(db: Path) -> None:
    """Delete the store's memory of content rules: as after an upgrade."""
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM meta WHERE namespace = 'content_scheme'")


def docs_run(
    server: Nginx, work: Path, n: int, extra: dict[str, Any]
) -> tuple[dict[str, list[str]], Any]:
    """Run ``n`` of the spider yielding no item over :data:`PAGES` (every page due,
    the store ``work/state.sqlite``): the outcomes by path from its visit log, and the
    crawl."""
    config = {"spider": "links", "no_items": True, "no_follow": True,
              "start": [server.url("/" + p) for p in PAGES]}  # fmt: skip
    crawl, outcomes = addon_cycle(config, work, n, extra)
    return outcomes, crawl


def edit(root: Path, pages: list[str]) -> None:
    for page in pages:
        path = root / page
        text = path.read_text()
        try:
            path.write_text(one_number(text))  # a digit, where a paragraph has one
        except AssertionError:
            path.write_text(one_word(text))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Any]:
    """Outcomes and stats of run 2 (new rules, some pages edited), run 3 (same rules,
    other pages edited) and run 4 (the rules of run 1 again, the store's memory of rules
    deleted: as after an upgrade)."""
    work = tmp_path_factory.mktemp("rules")
    root = work / "site"
    copy_pages(root)
    db = work / "state.sqlite"
    out: dict[int, Any] = {}
    with Nginx(root, work / "nginx") as server:
        out[1] = docs_run(server, work, 1, {})
        edit(root, EDITED)
        touch_all(root, time.time() - 100)
        out[2] = docs_run(server, work, 2, NEW_RULES)
        edit(root, PAGES[1::6])
        touch_all(root, time.time() - 50)
        out[3] = docs_run(server, work, 3, NEW_RULES)
        forget_rules(db)
        touch_all(root, time.time() - 20)
        out[4] = docs_run(server, work, 4, {})
    return out


def changed(outcomes: dict[str, list[str]]) -> set[str]:
    return {path for path, o in outcomes.items() if o[-1] == "changed"}


def test_new_rules_judge_exactly_by_the_old_ones(runs: dict[int, Any]) -> None:
    outcomes, crawl = runs[2]
    assert sorted(outcomes) == sorted("/" + p for p in PAGES)
    assert changed(outcomes) == {"/" + p for p in EDITED}  # every edit, nothing else
    assert crawl.stat("fresh/digest_scheme_changed") == len(PAGES)
    assert crawl.stat("fresh/digest_scheme_unknown") == 0


def test_the_next_visit_compares_digests_of_the_same_rules(runs: dict[int, Any]) -> None:
    outcomes, crawl = runs[3]
    assert crawl.stat("fresh/digest_scheme_changed") == 0
    assert changed(outcomes) == {"/" + p for p in PAGES[1::6]}
    assert len(outcomes) == len(PAGES)


def test_rules_the_store_does_not_know_fall_back_on_the_simhash(runs: dict[int, Any]) -> None:
    outcomes, crawl = runs[4]
    assert crawl.stat("fresh/digest_scheme_unknown") == len(PAGES)
    assert changed(outcomes) == set(), outcomes  # nothing edited: no flood either
