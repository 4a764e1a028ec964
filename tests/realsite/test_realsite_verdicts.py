"""Page verdicts on real pages without items: the Python 3.11 docs on nginx (issue 15).

A plain spider that yields no item, so each page is judged by the exact digest of its
main content (scrapy_fresh.fingerprint.content). Between two cycles, real edits inside the main
content (one word, one number, one sentence, a code line dedented in a ``<pre>``) and
noise (the footer's "Last updated on" date, a file touched: new ETag and Last-Modified,
same body). Every real edit is "changed", no noise is.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.nginx_support import PYTHON_DOCS, Nginx
from tests.realsite_support import ALL_DUE_OFFSET, outcomes_by_path, run_crawl, visits

pytestmark = [
    pytest.mark.realsite,
    pytest.mark.usefixtures("nginx_available", "python_docs_available"),
]

PAGES = sorted(
    str(p.relative_to(PYTHON_DOCS))
    for p in (Path(PYTHON_DOCS) / "library").glob("*.html")
    if p.stat().st_size > 30_000
)[:24]
#: An indented line in a code block (Sphinx keeps a ``<pre>``'s own whitespace).
_INDENTED_CODE = r"(?s)(<pre>(?:(?!</pre>).)*?\n)    (\S)"
#: Pages of the code edit: the next four that have such a line.
CODE_PAGES = [
    str(p.relative_to(PYTHON_DOCS))
    for p in sorted((Path(PYTHON_DOCS) / "library").glob("*.html"))
    if p.stat().st_size > 30_000
    and str(p.relative_to(PYTHON_DOCS)) not in PAGES
    and re.search(_INDENTED_CODE, p.read_text(encoding="utf-8"))
][:4]


def _replace_in_main(text: str, pattern: str, make: Any) -> str:
    start = text.index('role="main"')
    end = (
        text.index('class="sphinxsidebar"', start)
        if 'class="sphinxsidebar"' in text[start:]
        else len(text)
    )
    main = text[start:end]
    new, n = re.subn(pattern, make, main, count=1)
    assert n == 1, pattern
    return text[:start] + new + text[end:]


def one_word(text: str) -> str:
    return _replace_in_main(text, r"(<p>[^<]*?)\b(the)\b", lambda m: m.group(1) + "a")


def one_number(text: str) -> str:
    """A digit in the text of a paragraph, a list item or a table cell."""
    return _replace_in_main(
        text,
        r"(<(?:p|li|td)>[^<]*?)(\d)",
        lambda m: m.group(1) + str((int(m.group(2)) + 1) % 10),
    )


def one_sentence(text: str) -> str:
    return _replace_in_main(text, r"(<p>)", lambda m: m.group(1) + "This sentence is new. ")


def code_dedent(text: str) -> str:
    """A line of a code example moved out of its block (four spaces less)."""
    return _replace_in_main(text, _INDENTED_CODE, lambda m: m.group(1) + m.group(2))


def footer_date(text: str) -> str:
    new, n = re.subn(
        r"Last updated on [A-Za-z]+ \d+, \d{4}", "Last updated on January 02, 2031", text
    )
    assert n == 1
    return new


EDITS = {"word": one_word, "number": one_number, "sentence": one_sentence, "footer": footer_date}
REAL = ("word", "number", "sentence", "code")


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Outcomes of cycle 2 by edit class (``touched``: same body, new validators)."""
    work = tmp_path_factory.mktemp("verdicts")
    root = work / "site"
    root.mkdir()
    for page in PAGES + CODE_PAGES:
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(PYTHON_DOCS) / page, root / page)
    settings = {
        "ADDONS": {"scrapy_fresh.Addon": 0},
        "FRESH_SQLITE_PATH": str(work / "state.sqlite"),
    }
    classes = {**{name: PAGES[i::5] for i, name in enumerate(EDITS)}, "touched": PAGES[4::5]}
    classes["code"] = CODE_PAGES
    edits = {**EDITS, "code": code_dedent}
    with Nginx(root, work / "nginx") as server:
        config = {"spider": "links", "no_items": True, "no_follow": True,
                  "start": [server.url("/" + p) for p in PAGES + CODE_PAGES]}  # fmt: skip
        first = {**config, "settings": {**settings, "FRESH_VISIT_LOG": str(work / "v1.jsonl")}}
        run_crawl(first, work / "c1")
        for name, edit in edits.items():
            for page in classes[name]:
                path = root / page
                path.write_text(edit(path.read_text()))
        later = time.time() + 5
        for page in PAGES + CODE_PAGES:  # every file touched: new validators for each
            os.utime(root / page, (later, later))
        second = {**config, "clock_offset": ALL_DUE_OFFSET,
                  "settings": {**settings, "FRESH_VISIT_LOG": str(work / "v2.jsonl")}}  # fmt: skip
        run_crawl(second, work / "c2")
    lines = visits(work / "v2.jsonl")
    outcomes = outcomes_by_path(lines)
    magnitudes = {line["url"]: line.get("magnitude") for line in lines if line.get("e") == "visit"}
    assert all(isinstance(m, int) for m in magnitudes.values()), magnitudes
    assert magnitudes, "no visit logged"
    return {
        name: [o for page in pages for o in outcomes.get("/" + page, ["missing"])]
        for name, pages in classes.items()
    }


@pytest.mark.parametrize("edit", REAL)
def test_every_real_edit_is_changed(judged: dict[str, list[str]], edit: str) -> None:
    assert judged[edit]
    assert set(judged[edit]) == {"changed"}, judged[edit]


@pytest.mark.parametrize("noise", ["footer", "touched"])
def test_noise_is_not_a_change(judged: dict[str, list[str]], noise: str) -> None:
    assert judged[noise]
    assert set(judged[noise]) == {"unchanged"}, judged[noise]
