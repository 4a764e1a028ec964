"""Every stat and request meta key the Scrapy components use is documented."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GLUE = ["scheduler", "middlewares", "pipelines", "runtime", "addon", "gone", "webhook",
        "item_changes"]  # fmt: skip


def _source() -> str:
    return "\n".join((ROOT / "scrapy_fresh" / f"{name}.py").read_text() for name in GLUE)


def test_every_stat_is_documented() -> None:
    doc = (ROOT / "docs" / "reference" / "stats.rst").read_text()
    used = {m for m in re.findall(r'"(fresh/[a-z_/]+)"', _source()) if not m.endswith("/")}
    used |= {"fresh/requests/new", "fresh/requests/refresh"}  # built from the stream name
    assert used
    missing = sorted(name for name in used if f".. stat:: {name}\n" not in doc)
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
