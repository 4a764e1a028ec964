"""A user changes the content rules between two runs: no flood of "changed".

Pages without items are judged by the exact digest of their main content; a digest made
by other rules (or by an older ``CONTENT_VERSION``, after an upgrade) hashes another
text, so comparing it would make every page "changed" once. Its scheme tag tells it
apart and the simhash distance judges that one visit; the visit after compares exact
digests again and sees a one-digit or one-word edit.

Real pages (the Python 3.11 docs) on nginx, a plain spider that yields no item, real
SQLite. Every file is touched between runs (new validators, same body), so that every
page is downloaded and judged, not answered 304.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.nginx_support import PYTHON_DOCS, Nginx
from tests.realsite.test_realsite_verdicts import PAGES, one_number, one_word
from tests.realsite_support import ALL_DUE_OFFSET, outcomes_by_path, run_crawl, visits

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


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Outcomes and stats of runs 2 (new rules, nothing edited) and 3 (same new rules,
    a digit or a word edited on some pages)."""
    work = tmp_path_factory.mktemp("rules")
    root = work / "site"
    for page in PAGES:
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(PYTHON_DOCS) / page, root / page)
    settings = {
        "ADDONS": {"scrapy_fresh.Addon": 0},
        "FRESH_SQLITE_PATH": str(work / "state.sqlite"),
    }
    out: dict[str, Any] = {}
    with Nginx(root, work / "nginx") as server:
        config = {"spider": "links", "no_items": True, "no_follow": True,
                  "start": [server.url("/" + p) for p in PAGES]}  # fmt: skip

        def run(n: int, extra: dict[str, Any]) -> None:
            log = work / f"v{n}.jsonl"
            crawl = run_crawl(
                {**config, "clock_offset": ALL_DUE_OFFSET * (n - 1),
                 "settings": {**settings, **extra, "FRESH_VISIT_LOG": str(log)}},
                work / f"c{n}",
            )  # fmt: skip
            crawl.check()
            out[n] = (outcomes_by_path(visits(log)), crawl)

        run(1, {})
        touch_all(root, time.time() - 100)
        run(2, NEW_RULES)
        for page in EDITED:
            path = root / page
            text = path.read_text()
            try:
                path.write_text(one_number(text))  # a digit, where a paragraph has one
            except AssertionError:
                path.write_text(one_word(text))
        touch_all(root, time.time() - 50)
        run(3, NEW_RULES)
    return out


def test_new_rules_do_not_make_every_page_changed(runs: dict[str, Any]) -> None:
    outcomes, crawl = runs[2]
    assert sorted(outcomes) == sorted("/" + p for p in PAGES)
    assert {o[-1] for o in outcomes.values()} == {"unchanged"}, outcomes
    assert crawl.stat("fresh/digest_scheme_changed") == len(PAGES)


def test_the_next_visit_compares_exact_digests_again(runs: dict[str, Any]) -> None:
    outcomes, crawl = runs[3]
    assert crawl.stat("fresh/digest_scheme_changed") == 0
    changed = {path for path, o in outcomes.items() if o[-1] == "changed"}
    assert changed == {"/" + p for p in EDITED}
    assert len(outcomes) == len(PAGES)
