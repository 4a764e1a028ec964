"""Every stat and request meta key the Scrapy components use is documented."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GLUE = ("crawl", "distributed")  # the packages that run inside a crawl


def _source() -> str:
    files = sorted(p for name in GLUE for p in (ROOT / "scrapy_fresh" / name).glob("*.py"))
    assert files
    return "\n".join(path.read_text() for path in files)


def test_every_stat_is_documented() -> None:
    doc = (ROOT / "docs" / "reference" / "stats.rst").read_text()
    used = {m for m in re.findall(r'"(fresh/[a-z_/]+)"', _source()) if not m.endswith("/")}
    used |= {"fresh/requests/new", "fresh/requests/refresh"}  # built from the stream name
    assert used
    documented = re.findall(r"^\.\. stat:: (\S+)$", doc, re.MULTILINE)
    # ``fresh/x/<reason>`` documents a family of stats: one path segment per ``<...>``
    patterns = [
        re.compile(
            re.sub(r"<[^>]+>", "[a-z_]+", re.escape(d).replace(r"\<", "<").replace(r"\>", ">"))
            + "$"
        )
        for d in documented
    ]
    missing = sorted(name for name in used if not any(p.match(name) for p in patterns))
    assert missing == []


def test_every_meta_key_is_documented() -> None:
    doc = (ROOT / "docs" / "reference" / "meta.rst").read_text()
    used = set(re.findall(r'"(fresh_[a-z_]+)"', _source()))
    # item fields, documented there too
    used -= {"fresh_changed", "fresh_changed_fields", "fresh_previous", "fresh_diff"}
    assert "fresh_provider" in used
    missing = sorted(name for name in used if f".. reqmeta:: {name}\n" not in doc)
    assert missing == []
    assert "``fresh_changed``" in doc
    assert "``fresh_changed_fields``" in doc
    assert "``fresh_previous``" in doc
    assert "``fresh_diff``" in doc
