"""``FRESH_CONTENT_LINKS``: a link that points elsewhere under the same words is an edit.

By default a page's content is its text: a link whose target changes while its words
stay (a "Download the report" link moved to next year's PDF) is not seen. With
``FRESH_CONTENT_LINKS = True`` the targets of the content's links and images are part
of the content. Turning it on or off is a content rules change like any other: pages
are judged by the rules their stored digest was made with, so no page is "changed" for
it, and a text edit in the same run is still seen. In the run that turns it off, a link
moved since the last visit is still judged by the rules that counted links (the stored
digest's), once; from the next run on, moved links are not content.

Real pages (the Python 3.11 docs, which link densely inside their main text) on nginx,
a spider that yields no item, real SQLite. Every file is touched between runs, so that
every page is downloaded and judged, not answered 304.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.nginx_support import Nginx
from tests.realsite.test_realsite_rules_change import (
    changed,
    copy_pages,
    docs_run,
    edit,
    touch_all,
)
from tests.realsite.test_realsite_verdicts import PAGES, _replace_in_main

pytestmark = [
    pytest.mark.realsite,
    pytest.mark.usefixtures("nginx_available", "python_docs_available"),
]

LINKS_ON = {"FRESH_CONTENT_LINKS": True}
TEXT_EDITED = PAGES[::6]
LINK_EDITED = PAGES[1::6]
LINK_EDITED_OFF = PAGES[2::6]
LINK_EDITED_LATER = PAGES[3::6]


def retarget(root: Path, pages: list[str]) -> None:
    """Point one link of each page's main text elsewhere; its words stay."""
    for page in pages:
        path = root / page
        path.write_text(
            _replace_in_main(
                path.read_text(),
                r'(<a class="reference internal" href=")([^"#]+)',
                lambda m: m.group(1) + "moved-" + m.group(2),
            )
        )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Any]:
    work = tmp_path_factory.mktemp("content-links")
    root = work / "site"
    copy_pages(root)
    out: dict[int, Any] = {}
    with Nginx(root, work / "nginx") as server:
        out[1] = docs_run(server, work, 1, {})
        edit(root, TEXT_EDITED)
        touch_all(root, time.time() - 100)
        out[2] = docs_run(server, work, 2, LINKS_ON)  # turned on
        retarget(root, LINK_EDITED)
        touch_all(root, time.time() - 60)
        out[3] = docs_run(server, work, 3, LINKS_ON)
        retarget(root, LINK_EDITED_OFF)
        touch_all(root, time.time() - 20)
        out[4] = docs_run(server, work, 4, {})  # turned off again
        retarget(root, LINK_EDITED_LATER)
        touch_all(root, time.time() - 10)
        out[5] = docs_run(server, work, 5, {})
    return out


def test_turning_links_on_floods_nothing_and_sees_text_edits(runs: dict[int, Any]) -> None:
    outcomes, crawl = runs[2]
    assert sorted(outcomes) == sorted("/" + p for p in PAGES)
    assert changed(outcomes) == {"/" + p for p in TEXT_EDITED}
    assert crawl.stat("fresh/digest_scheme_changed") == len(PAGES)


def test_a_link_moved_under_the_same_words_is_changed(runs: dict[int, Any]) -> None:
    outcomes, crawl = runs[3]
    assert crawl.stat("fresh/digest_scheme_changed") == 0
    assert changed(outcomes) == {"/" + p for p in LINK_EDITED}  # each one, nothing else


def test_turning_links_off_judges_once_by_the_rules_that_counted_them(
    runs: dict[int, Any],
) -> None:
    outcomes, crawl = runs[4]
    assert crawl.stat("fresh/digest_scheme_changed") == len(PAGES)
    assert changed(outcomes) == {"/" + p for p in LINK_EDITED_OFF}  # nothing else floods


def test_without_the_setting_link_targets_are_not_content(runs: dict[int, Any]) -> None:
    outcomes, crawl = runs[5]
    assert crawl.stat("fresh/digest_scheme_changed") == 0
    assert len(outcomes) == len(PAGES)
    assert changed(outcomes) == set()  # the default: a link moved under its words is unseen
