"""The fast :func:`scrapy_fresh.fingerprint.content.digest` gives exactly the answers of the plain
reference pipeline (``tests/content_reference.py``) on real pages and generated HTML."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_fresh.fingerprint.content import NOISE_RULES, ContentRules, digest
from tests import content_reference as reference

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")
RULE_SETS = {
    "default": ContentRules.build(),
    "no noise": ContentRules.build(noise=[]),
    "dates, counters": ContentRules.build(noise=["dates", "counters"]),
    "one rule each": ContentRules.build(noise=["csrf_tokens"]),
    "include": ContentRules.build(include=["div.body", "h1"], ignore=[r"^\w+:\s"]),
    "exclude": ContentRules.build(exclude=["pre", "xpath://table"], noise=["dates"]),
    "xpath include": ContentRules.build(include=["xpath://section | //p"]),
}


def _pages() -> list[Path]:
    return sorted(PYTHON_DOCS.rglob("*.html"))[::4]


@pytest.mark.skipif(not PYTHON_DOCS.is_dir(), reason="python3.11-doc is not installed")
@pytest.mark.parametrize("name", list(RULE_SETS))
def test_real_pages_give_the_reference_digest(name: str) -> None:
    rules = RULE_SETS[name]
    pages = _pages() if name == "default" else _pages()[::8]
    assert pages
    for page in pages:
        body = page.read_bytes()
        assert digest(body, rules=rules) == reference.digest(body, rules=rules), page


_WORDS = st.sampled_from(
    [
        "Updated", "2024-03-04", "12:30", "Mar 4, 2024", "Monday,", "3 minutes ago",
        "1,234 views", "Views: 12", "Comments (3)", "sid=abc123", "csrf_token=abcdefgh12",
        "x.js?v=123", "just now", "yesterday", "price", "51.77", "\x00", "\ud800", "é",
        "K", "ſ", "İ", " ", "\n", "    ", "\ufdd0", "\ufdd1", "&amp;", "<", "word",
    ]
)  # fmt: skip
_TAGS = st.sampled_from(
    [
        "p",
        "div",
        "main",
        "article",
        "nav",
        "footer",
        "aside",
        "span",
        "code",
        "b",
        "pre",
        "li",
        "table",
        "svg",
        "math",
        "template",
        "MAIN",
    ]
)
_ATTRS = st.sampled_from(
    [
        "", ' class="ad-slot"', ' role="main"', " hidden", ' class="sidebar"', ' id="ad_1"',
        ' class="footer"', ' aria-hidden="true"', ' class="body"', ' role="MAIN"',
        ' ROLE="main"', " role=main", ' role="main article"',
    ]
)  # fmt: skip


@st.composite
def _html(draw: st.DrawFn) -> str:
    def node(depth: int) -> str:
        if depth > 3 or draw(st.booleans()):
            return " ".join(draw(st.lists(_WORDS, max_size=6)))
        tag = draw(_TAGS)
        inner = "".join(node(depth + 1) for _ in range(draw(st.integers(0, 3))))
        return f"<{tag}{draw(_ATTRS)}>{inner}</{tag}>"

    body = "".join(node(0) for _ in range(draw(st.integers(0, 4))))
    return f"<html><head><title>t</title></head><body>{body}</body></html>"


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    html=_html(),
    rules=st.sampled_from(list(RULE_SETS.values())),
    as_bytes=st.booleans(),
    noise=st.lists(st.sampled_from(list(NOISE_RULES)), unique=True),
)
def test_generated_html_gives_the_reference_digest(
    html: str, rules: ContentRules, as_bytes: bool, noise: list[str]
) -> None:
    page: str | bytes = html.encode("utf-8", "surrogatepass") if as_bytes else html
    for chosen in (rules, rules.replace(noise=noise)):
        assert digest(page, rules=chosen) == reference.digest(page, rules=chosen)
