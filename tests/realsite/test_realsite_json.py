"""JSON answers, served by nginx: judged by their data, not as HTML.

The Python documentation's glossary (``_static/glossary.json`` of the Debian package
``python3.11-doc``: 140 kB, every term with its HTML body) served as two "APIs" in a
directory listing, crawled by a CrawlSpider following every link, as a price or stock
watcher crawls a JSON endpoint. Between two cycles one file is written again with the
same data, its members in another order and another layout (a server's JSON encoder is
free in both: an object is unordered, RFC 8259, Section 4), and the other gets one word
of one term edited. The first is not "changed" (read as HTML it was: every byte moved);
the second is.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.nginx_support import Nginx
from tests.realsite_support import addon_cycle, run_crawl

GLOSSARY = Path("/usr/share/doc/python3.11/html/_static/glossary.json")
REWRITTEN, EDITED = "/api/glossary.json", "/api/terms.json"

pytestmark = [
    pytest.mark.realsite,
    pytest.mark.usefixtures("nginx_available"),
    pytest.mark.skipif(
        not GLOSSARY.exists(),
        reason=f"{GLOSSARY} not found (apt-get install python3.11-doc; .ci/run installs it)",
    ),
]


def _later(path: Path) -> None:
    later = time.time() + 5  # a new Last-Modified and ETag, whatever the second
    os.utime(path, (later, later))


@pytest.fixture(scope="module")
def cycles(tmp_path_factory: pytest.TempPathFactory) -> dict[Any, Any]:
    work = tmp_path_factory.mktemp("json")
    root = work / "site"
    (root / "api").mkdir(parents=True)
    for name in (REWRITTEN, EDITED):
        shutil.copyfile(GLOSSARY, root / name.lstrip("/"))
    out: dict[Any, Any] = {}
    with Nginx(root, work / "nginx", extra="autoindex on;") as server:
        config = {"spider": "everything", "no_items": True, "start": [server.url("/api/")]}
        run_crawl({**config, "settings": {}}, work / "plain").check()
        out["plain"] = {r.path for r in server.new_requests() if r.status == 200}
        for n in (1, 2):
            if n == 2:
                rewritten = root / REWRITTEN.lstrip("/")
                data = json.loads(rewritten.read_text(encoding="utf-8"))
                again = dict(reversed(list(data.items())))
                rewritten.write_text(json.dumps(again, indent=1), encoding="utf-8")
                _later(rewritten)
                edited = root / EDITED.lstrip("/")
                text = edited.read_text(encoding="utf-8")
                assert text.count("The default Python prompt") == 2
                edited.write_text(
                    text.replace("The default Python prompt", "The usual Python prompt", 1),
                    encoding="utf-8",
                )
                _later(edited)
            crawl, outcomes = addon_cycle(config, work, n)
            out[n] = (server.new_requests(), outcomes, crawl)
    return out


def test_the_add_on_reaches_the_json_files_plain_scrapy_reaches(cycles: dict[Any, Any]) -> None:
    logged, outcomes, _ = cycles[1]
    assert {REWRITTEN, EDITED} <= cycles["plain"]
    assert {r.path for r in logged if r.status == 200} == cycles["plain"]
    assert outcomes[REWRITTEN] == outcomes[EDITED] == ["new"]


def test_json_written_again_in_another_order_is_not_changed(cycles: dict[Any, Any]) -> None:
    logged, outcomes, _ = cycles[2]
    downloaded = {r.path for r in logged if r.status == 200}
    assert {REWRITTEN, EDITED} <= downloaded  # new validators: both fetched in full
    assert outcomes[REWRITTEN] == ["unchanged"]


def test_an_edit_of_one_json_value_is_changed(cycles: dict[Any, Any]) -> None:
    _, outcomes, crawl = cycles[2]
    assert outcomes[EDITED] == ["changed"]
    assert crawl.stats.get("fresh/changed", 0) >= 1
