"""Real documentation sites other than the Python docs, served by nginx.

**A gzip sitemap.** The Git manual pages (Debian package ``git-doc``: 241 AsciiDoc
pages, XHTML, no main landmark, a ``404`` link) crawled by Scrapy's SitemapSpider from a sitemap index whose
child sitemap is gzip-compressed (``sitemap-pages.xml.gz``), as many sites publish it
and regenerate it on every deploy. A gzip stream carries the time it was written in its
header, so a sitemap written again with the same entries is other bytes: what it holds,
not its bytes, says whether it changed.

Three cycles, each "a month later" (every record due): plain Scrapy and the add-on reach
the same pages; with nothing edited (the sitemap written again) every page answers 304
and nothing is "changed"; after a few pages were edited and every file touched, exactly
those pages are "changed".

**Text files in directory listings.** The same pages served with nginx's ``autoindex``
(as a documentation tree often is): each directory's listing links every file, the
AsciiDoc sources (``git-add.txt``, ``text/plain``) beside the HTML pages, and a
CrawlSpider following every link reaches them all. A text file's content is its text:
``<pathspec>`` in a synopsis is words, not an HTML tag, and an edit of it is "changed".

**A gzip text file and a PDF.** The Debian Reference (``debian-reference-en``: 15
large XHTML chapters) links its plain-text edition, gzip-compressed
(``debian-reference.en.txt.gz``, served as ``application/octet-stream``), and its PDF. A
CrawlSpider following every link reaches what plain Scrapy reaches; an edit in the text
edition is "changed", though the type names no text: the gzip stream holds text, where
``dpkg --set-selections <selection.txt`` is no tag (read as one, it swallowed a quarter
of the book, edits included).
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.nginx_support import Nginx, edit_page
from tests.realsite_support import (
    addon_cycle,
    got,
    html_path,
    run_crawl,
)

GIT_DOCS = Path("/usr/share/doc/git-doc")
DEBIAN_REFERENCE = Path("/usr/share/debian-reference")

pytestmark = [pytest.mark.realsite, pytest.mark.usefixtures("nginx_available")]
needs_git_docs = pytest.mark.skipif(
    not (GIT_DOCS / "git.html").exists(),
    reason=f"{GIT_DOCS} not found (apt-get install git-doc; .ci/run installs it when missing)",
)
needs_debian_reference = pytest.mark.skipif(
    not (DEBIAN_REFERENCE / "debian-reference.en.txt.gz").exists(),
    reason=f"{DEBIAN_REFERENCE} not found (apt-get install debian-reference-en; .ci/run "
    "installs it when missing)",
)

EDITED = ["/git-add.html", "/git-log.html", "/gitglossary.html"]
SITEMAP = "/sitemap-pages.xml.gz"


def write_sitemaps(root: Path, server: Nginx) -> None:
    """The sitemap index and its gzip child (every page, ``<lastmod>`` its mtime),
    written anew: the gzip header holds the time of writing."""
    entries = "".join(
        f"<url><loc>{server.url('/' + str(p.relative_to(root)))}</loc><lastmod>"
        f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(p.stat().st_mtime))}"
        "</lastmod></url>"
        for p in sorted(root.rglob("*.html"))
    )
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset '
        f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>\n'
    )
    (root / SITEMAP[1:]).write_bytes(gzip.compress(xml.encode(), mtime=time.time()))
    (root / "sitemap_index.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex '
        'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{server.url(SITEMAP)}</loc></sitemap></sitemapindex>\n"
    )


@pytest.fixture(scope="module")
def cycles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("git-docs")
    root = work / "site"
    shutil.copytree(GIT_DOCS, root, symlinks=False, ignore_dangling_symlinks=True)
    out: dict[str, Any] = {}
    with Nginx(root, work / "nginx") as server:
        write_sitemaps(root, server)
        config = {"spider": "sitemap", "start": [server.url("/sitemap_index.xml")]}
        plain = run_crawl({**config, "settings": {}}, work / "plain")
        plain.check()
        out["plain"] = got(server.new_requests())
        for n in (1, 2, 3):
            if n == 3:
                for page in EDITED:
                    edit_page(root / page.lstrip("/"))
                later = time.time() - 10
                for f in root.rglob("*.html"):
                    if "/" + str(f.relative_to(root)) not in EDITED:
                        os.utime(f, (later, later))
            time.sleep(1.1)  # a sitemap of another second: another gzip header
            write_sitemaps(root, server)
            _, outcomes = addon_cycle(config, work, n)
            out[n] = (server.new_requests(), outcomes)
    return out


@needs_git_docs
def test_the_add_on_reaches_the_pages_plain_scrapy_reaches(cycles: dict[str, Any]) -> None:
    logged, outcomes = cycles[1]
    assert len(cycles["plain"]) > 200
    assert set(got(logged)) == set(cycles["plain"])
    assert Counter(o[-1] for o in outcomes.values()) == Counter(new=len(outcomes))


@needs_git_docs
def test_a_gzip_sitemap_written_again_is_not_changed(cycles: dict[str, Any]) -> None:
    logged, outcomes = cycles[2]
    assert set(got(logged, 304)) == set(cycles["plain"])  # every page: a 304
    changed = sorted(p for p, o in outcomes.items() if o[-1] == "changed")
    assert changed == []  # the gzip sitemap holds the same entries
    assert outcomes[SITEMAP] == ["unchanged"]


@needs_git_docs
def test_exactly_the_edited_pages_are_changed(cycles: dict[str, Any]) -> None:
    logged, outcomes = cycles[3]
    assert set(got(logged)) == set(cycles["plain"])  # every page touched: downloaded
    changed = {p for p, o in outcomes.items() if o[-1] == "changed"}
    assert {html_path(p) for p in changed} - {SITEMAP} == set(EDITED)


#: AsciiDoc sources whose synopsis names ``<pathspec>``: the edit renames it.
TEXT_EDITED = ["/git-add.txt", "/git-rm.txt", "/git-checkout.txt"]


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("git-docs-autoindex")
    root = work / "site"
    shutil.copytree(GIT_DOCS, root, symlinks=False, ignore_dangling_symlinks=True)
    out: dict[str, Any] = {}
    with Nginx(root, work / "nginx", extra="autoindex on;") as server:
        config = {"spider": "everything", "no_items": True, "start": [server.url("/")]}
        run_crawl({**config, "settings": {}}, work / "plain").check()
        out["plain"] = {r.path for r in server.new_requests() if r.status == 200}
        for n in (1, 2):
            if n == 2:
                for page in TEXT_EDITED:
                    path = root / page.lstrip("/")
                    text, count = re.subn("<pathspec>", "<path>", path.read_text(), count=1)
                    assert count == 1, page
                    path.write_text(text)
            _, outcomes = addon_cycle(config, work, n)
            out[n] = (server.new_requests(), outcomes)
    return out


@needs_git_docs
def test_listings_reach_the_same_files_as_plain_scrapy(listed: dict[str, Any]) -> None:
    logged, _ = listed[1]
    assert {p for p in listed["plain"] if p.endswith(".txt")} >= set(TEXT_EDITED)
    assert {r.path for r in logged if r.status == 200} == listed["plain"]


@needs_git_docs
def test_an_edit_of_a_text_file_is_changed(listed: dict[str, Any]) -> None:
    _, outcomes = listed[2]
    changed = {p for p, o in outcomes.items() if o[-1] == "changed"}
    # the listings show the edited files' new sizes and times: they changed too
    assert {p for p in changed if not p.endswith("/")} == set(TEXT_EDITED)


TEXT_EDITION = "/debian-reference.en.txt.gz"
CHAPTER = "/ch02.en.html"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("debian-reference")
    root = work / "site"
    shutil.copytree(DEBIAN_REFERENCE, root, symlinks=False, ignore_dangling_symlinks=True)
    out: dict[str, Any] = {}
    with Nginx(root, work / "nginx") as server:
        config = {"spider": "everything", "no_items": True, "start": [server.url("/index.html")]}
        run_crawl({**config, "settings": {}}, work / "plain").check()
        out["plain"] = {r.path for r in server.new_requests() if r.status == 200}
        for n in (1, 2):
            if n == 2:
                text = gzip.decompress((root / TEXT_EDITION[1:]).read_bytes())
                line = b"<selection.txt         |package selection|"  # in a tag's reach
                assert text.count(line) == 1
                text = text.replace(line, b"<selection.txt         |package choice   |")
                (root / TEXT_EDITION[1:]).write_bytes(gzip.compress(text, mtime=time.time()))
                edit_page(root / CHAPTER[1:])
            _, outcomes = addon_cycle(config, work, n)
            out[n] = (server.new_requests(), outcomes)
    return out


@needs_debian_reference
def test_every_link_reaches_the_same_files_as_plain_scrapy(reference: dict[str, Any]) -> None:
    logged, _ = reference[1]
    assert {TEXT_EDITION, "/debian-reference.en.pdf", CHAPTER} <= reference["plain"]
    assert {r.path for r in logged if r.status == 200} == reference["plain"]


@needs_debian_reference
def test_an_edit_of_a_gzip_text_file_is_changed(reference: dict[str, Any]) -> None:
    logged, outcomes = reference[2]
    assert {r.path for r in logged if r.status == 304} == reference["plain"] - {
        TEXT_EDITION,
        CHAPTER,
    }
    assert {p for p, o in outcomes.items() if o[-1] == "changed"} == {TEXT_EDITION, CHAPTER}
