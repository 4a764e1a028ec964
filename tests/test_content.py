"""Page digests (scrapy_fresh.fingerprint.content): extraction, noise rules, user rules, validation."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from scrapy.settings import Settings

from scrapy_fresh.config import FreshConfig
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.fingerprint.content import (
    DEFAULT_RULES,
    NOISE_RULES,
    ContentRules,
    content_text,
    digest,
    digest_scheme,
    normalize_text,
)
from scrapy_fresh.fingerprint.shingles import hamming


def _page(content: str, *, furniture: str = "") -> str:
    return (
        "<html><head><title>T</title></head><body><nav><a href='/'>Home</a></nav>"
        f"{furniture}<main><h1>Ducks</h1>{content}</main>"
        "<footer>Last updated on Mar 04, 2024</footer></body></html>"
    )


# --- built-in noise rules: each one changes what it should and nothing else ----------

RULE_CASES = {
    "cache_busters": (
        ["see https://example.com/app.js?v=123 now", "get /a.css?ver=2.1&x=1"],
        ["see https://example.com/search?q=ducks now", "page?id=17"],
    ),
    "session_ids": (
        ["link /cart;jsessionid=A1B2C3D4 here", "url?PHPSESSID=9f8e7d6c5b"],
        ["the sid of a process", "sessions=3 workers"],
    ),
    "csrf_tokens": (
        ["csrf_token=8f14e45fceea167a5a36", "nonce: 'abcdefgh12345678'"],
        ["csrf_token=abc", "the nonce is random"],
    ),
    "relative_times": (
        ["Updated 3 minutes ago", "posted an hour ago", "5m ago", "just now", "yesterday"],
        ["3 minutes later", "Chicago is a city", "hours of fun"],
    ),
    "dates": (
        [
            "2024-03-04",
            "2024-03-04T12:30:01Z",
            "04/03/2024",
            "4.3.2024",
            "4 March 2024",
            "Mar 4, 2024",
            "March 2024",
            "Monday, March 4, 2024",
            "at 12:30",
            "12:30:01 pm UTC",
            "07-Oct-2025",
            "Tue Oct  7 10:11:12 2025",
        ],
        [
            "version 3.11.7",
            "Python 3.11",
            "ratio 3:2",
            "1998 people",
            "may 2 ducks",
            "part 12-Oct-20255",
            "Apollo 11 2025",
            "SKU 07-OCTO-2025",
        ],
    ),
    "counters": (
        ["1,234 views", "17 comments", "1.2k likes", "Views: 1234", "Comments (12)"],
        ["19 available", "Price: 51.77", "3.7. Like this", "3 ducks"],
    ),
}


@pytest.mark.parametrize("name", list(NOISE_RULES))
def test_each_noise_rule_replaces_its_tokens(name: str) -> None:
    only = ContentRules.build(noise=[name])
    none = ContentRules.build(noise=[])
    for text in RULE_CASES[name][0]:
        assert normalize_text(text, only) != normalize_text(text, none), text
    for text in RULE_CASES[name][1]:
        assert normalize_text(text, only) == normalize_text(text, none), text


def test_every_rule_has_cases() -> None:
    assert set(RULE_CASES) == set(NOISE_RULES)


def test_a_date_and_its_time_become_one_placeholder() -> None:
    one = normalize_text("Updated Mar 4, 2024 at 12:30 UTC.")
    two = normalize_text("Updated Apr 11, 2025 at 9:05 UTC.")
    assert one == two == "Updated {date}."
    assert normalize_text("Mon, 04 Mar 2024 12:30:00 GMT") == "{date}"


@pytest.mark.parametrize(
    "text",
    [
        "git-add.html   07-Oct-2025 12:35   12345",  # nginx's and Apache's listings
        "git-add.html   28-Feb-2026 09:01   12345",
        "git-add.html Tue Oct  7 10:11:12 2025 12345",  # asctime, the date command
        "git-add.html Sat Feb 28 09:01:00 UTC 2026 12345",
    ],
)
def test_listing_and_asctime_dates_are_one_placeholder(text: str) -> None:
    assert normalize_text(text) == "git-add.html {date} 12345"


def test_whitespace_is_collapsed_but_words_are_kept() -> None:
    assert normalize_text("  a\n\n b\tc  ") == "a b c"
    assert normalize_text("ab") != normalize_text("a b")


# --- extraction ----------------------------------------------------------------------


def test_the_main_landmark_is_the_content() -> None:
    page = _page("<p>Ducks swim.</p>", furniture="<div class='sidebar'>Sale!</div><p>x</p>")
    assert content_text(page) == "Ducks Ducks swim."


def test_role_main_and_articles_are_landmarks() -> None:
    role = "<body><div>menu</div><div role='main'><p>Body text.</p></div></body>"
    assert content_text(role) == "Body text."
    articles = "<body><div>menu</div><article>One.</article><article>Two.</article></body>"
    assert content_text(articles) == "One. Two."


def test_without_landmarks_the_body_loses_its_furniture() -> None:
    page = (
        "<body><nav>Menu</nav><div class='ad-slot'>Buy!</div><p>Text.</p>"
        "<aside>Related</aside><footer>(c) 2024</footer><div class='footer'>x</div>"
        "<div class='sidebar'>Links</div></body>"
    )
    assert content_text(page) == "Text."


def test_inside_a_landmark_asides_and_footers_are_content() -> None:
    page = _page(
        "<p>Text.</p><aside class='footnote'>Note 1.</aside><footer>By Ann</footer>"
        "<aside class='sidebar'>See also x.</aside>"
    )
    assert content_text(page) == "Ducks Text. Note 1. By Ann See also x."


def test_ad_slots_and_hidden_elements_are_dropped_but_admonitions_stay() -> None:
    page = _page(
        "<div class='admonition note'>Careful.</div><div class='ad-slot'>Buy!</div>"
        "<div id='ad-top'>Ad</div><p hidden>secret</p><ins class='adsbygoogle'>x</ins>"
        "<span class='badge'>new</span>"
    )
    assert content_text(page) == "Ducks Careful. new"


def test_markup_and_attribute_order_are_not_content() -> None:
    a = _page('<p class="x" id="y">Ducks <b>swim</b>.</p><input type="hidden" value="t1">')
    b = _page('<p id="y"  class="x">Ducks\n  <b>swim</b>.</p>\n<input value="t2" type="hidden">')
    assert digest(a) == digest(b)


def test_bytes_str_and_encodings_agree() -> None:
    page = _page("<p>Café crème.</p>")
    assert (
        digest(page) == digest(page.encode("utf-8")) == digest(page.encode("latin-1"), "latin-1")
    )
    # What Scrapy's response.encoding says for "Content-Type: text/html; charset=base64"
    # (no text encoding: Scrapy's response.text raises) is ignored, not an error.
    for codec in ("base64", "rot-13", "punycode"):
        assert digest(page.encode("utf-8"), codec) == digest(page.encode("utf-8"))


@pytest.mark.parametrize("junk", [b"", b"\x00\xff\xfe garbage", "<p>\ud800</p>", "   "])
def test_junk_does_not_fail(junk: str | bytes) -> None:
    assert isinstance(digest(junk).exact, int)


# --- user rules ----------------------------------------------------------------------


def test_include_selectors_choose_the_content() -> None:
    page = _page("<p class='price'>51.77</p><p>Blah.</p>", furniture="<p id='stock'>19</p>")
    css = ContentRules.build(include=[".price", "#stock"])
    assert content_text(page, rules=css) == "19 51.77"  # document order
    xpath = ContentRules.build(include=["xpath://p[@class='price']"])
    assert content_text(page, rules=xpath) == "51.77"
    assert content_text(page, rules=ContentRules.build(include=["//p[@id='stock']"])) == "19"


def test_include_matching_nothing_gives_empty_content() -> None:
    assert content_text(_page("<p>x</p>"), rules=ContentRules.build(include=[".none"])) == ""


def test_include_keeps_furniture_the_user_asked_for() -> None:
    page = _page("<p>x</p>").replace("<footer>", "<footer><span class='v'>v2</span>")
    assert content_text(page, rules=ContentRules.build(include=["footer .v"])) == "v2"


def test_exclude_selectors_drop_elements() -> None:
    page = _page("<p>Keep.</p><div class='ticker'>DAX 18,000</div><p id='x'>Drop.</p>")
    rules = ContentRules.build(exclude=[".ticker", "xpath://p[@id='x']"])
    assert content_text(page, rules=rules) == "Ducks Keep."
    assert "DAX" in content_text(page)


def test_ignore_patterns_delete_their_matches() -> None:
    page = _page("<p>Served by node web-7.</p><p>Ducks swim.</p>")
    rules = ContentRules.build(ignore=[r"^Served by node \S+$"])
    assert content_text(page, rules=rules) == "Ducks Ducks swim."
    other = page.replace("web-7", "web-3")
    assert digest(page, rules=rules) == digest(other, rules=rules)
    assert digest(page) != digest(other)


@pytest.mark.parametrize(
    ("setting", "value", "words"),
    [
        ("FRESH_CONTENT_INCLUDE", ["div[["], "not a valid CSS selector"),
        ("FRESH_CONTENT_INCLUDE", ["xpath://div["], "not a valid XPath"),
        ("FRESH_CONTENT_EXCLUDE", ["/html/body["], "not a valid XPath"),
        ("FRESH_CONTENT_EXCLUDE", ["p >"], "not a valid CSS selector"),
        ("FRESH_CONTENT_IGNORE", ["(unclosed"], "not a valid Python regular expression"),
        ("FRESH_CONTENT_IGNORE", [5], "must be a list of regular expressions"),
        ("FRESH_CONTENT_INCLUDE", {"a": 1}, "must be a list of CSS or XPath selectors"),
        ("FRESH_CONTENT_NOISE_RULES", ["dates", "weather"], "unknown rules ['weather']"),
        ("FRESH_CONTENT_LINKS", "sometimes", "must be True or False"),
        ("FRESH_CONTENT_LINKS", 2, "must be True or False"),
    ],
)
def test_bad_rules_are_refused_at_start_up_naming_the_setting(
    setting: str, value: object, words: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(words)) as refused:
        FreshConfig.from_settings(Settings({setting: value}))
    assert str(refused.value).startswith(setting)


def test_good_rules_are_read_from_settings() -> None:
    config = FreshConfig.from_settings(
        Settings(
            {
                "FRESH_CONTENT_INCLUDE": "main p, main li",
                "FRESH_CONTENT_EXCLUDE": ["xpath://p[@class='x']"],
                "FRESH_CONTENT_IGNORE": [r"\d+ in stock"],
                "FRESH_CONTENT_NOISE_RULES": ["dates"],
            }
        )
    )
    assert config.content_rules == ContentRules(
        ("main p, main li",), ("xpath://p[@class='x']",), (r"\d+ in stock",), ("dates",)
    )
    assert FreshConfig.from_settings(Settings({})).content_rules == DEFAULT_RULES


def test_spider_attributes_and_meta_keys_replace_the_settings() -> None:
    base = ContentRules.build(exclude=[".a"], ignore=["x"])

    class Spider:
        fresh_content_exclude = (".b",)

    spider_rules = base.for_spider(Spider())
    assert spider_rules.exclude == (".b",)
    assert spider_rules.ignore == ("x",)
    assert base.for_spider(object()) is base
    request_rules = spider_rules.for_request({"fresh_content_ignore": ["y"], "other": 1})
    assert request_rules.exclude == (".b",)
    assert request_rules.ignore == ("y",)
    assert spider_rules.for_request({}) is spider_rules

    class Bad:
        fresh_content_include = ("p[[",)

    with pytest.raises(ConfigError, match=r"^spider attribute fresh_content_include contains"):
        base.for_spider(Bad())
    with pytest.raises(ConfigError, match=r"^meta\['fresh_content_ignore'\] contains"):
        base.for_request({"fresh_content_ignore": ["("]})
    with pytest.raises(ConfigError, match=r"^meta\['fresh_content_exclude'\]"):
        base.for_request({"fresh_content_exclude": [["nested"]]})


def test_rules_reject_a_wrong_type() -> None:
    with pytest.raises(TypeError, match="must be a ContentRules"):
        content_text("<p>x</p>", rules="main")  # type: ignore[arg-type]


# --- digests: verdict and magnitude ---------------------------------------------------


def test_simhash_measures_magnitude_not_the_verdict() -> None:
    text = " ".join(f"Word{i} ducks swim in the pond every morning." for i in range(60))
    a = digest(_page(f"<p>{text}</p>"))
    small = digest(_page(f"<p>{text.replace('Word7 ', 'Word8 ', 1)}</p>"))
    big = digest(_page(f"<p>{text[: len(text) // 2]}</p>"))
    assert a.exact != small.exact
    assert a.exact != big.exact
    assert hamming(a.simhash, small.simhash) < hamming(a.simhash, big.simhash)


def test_digits_are_content() -> None:
    assert digest(_page("<p>Price: 51.77 EUR</p>")) != digest(_page("<p>Price: 52.77 EUR</p>"))
    assert digest(_page("<p>19 available</p>")) != digest(_page("<p>18 available</p>"))


# --- real pages ----------------------------------------------------------------------

DOCS = Path("/usr/share/doc/python3.11/html")
REAL_PAGES = ["library/timeit.html", "library/heapq.html", "tutorial/interpreter.html"]


@pytest.fixture
def real_pages(tmp_path: Path) -> list[str]:
    if not all((DOCS / name).is_file() for name in REAL_PAGES):
        pytest.skip(
            f"the Python 3.11 docs are not installed at {DOCS} (apt install python3.11-doc)"
        )
    pages = []
    for name in REAL_PAGES:
        copy = tmp_path / name.replace("/", "_")
        shutil.copyfile(DOCS / name, copy)
        pages.append(copy.read_text(encoding="utf-8"))
    return pages


def _first_paragraph(page: str) -> re.Match[str]:
    main = page.index('role="main"')
    found = re.compile(r"<p>([^<]{40,})").search(page, main)
    assert found is not None
    return found


def test_real_edits_on_real_pages_change_the_digest(real_pages: list[str]) -> None:
    for page in real_pages:
        base = digest(page)
        para = _first_paragraph(page)
        words = para.group(1).split(" ")
        one_word = " ".join([words[0], "zebra", *words[2:]])
        edits = [
            page[: para.start(1)] + one_word + page[para.end(1) :],
            page[: para.start(1)] + "A rewritten paragraph about geese." + page[para.end(1) :],
            page.replace("</section>", "<ul><li>one</li><li>two added</li></ul></section>", 1),
            page.replace("</section>", "<p>Price: 51.77 EUR</p></section>", 1),
        ]
        for edited in edits:
            assert digest(edited).exact != base.exact
        price = page.replace("</section>", "<p>Price: 52.77 EUR</p></section>", 1)
        assert digest(price).exact != digest(edits[-1]).exact


def test_noise_on_real_pages_leaves_the_digest(real_pages: list[str]) -> None:
    for page in real_pages:
        base = digest(page)
        main = page.index('role="main">') + len('role="main">')
        noisy = [
            re.sub(r"Last updated on [^.]*", "Last updated on Jan 09, 2026", page),
            page[:main] + "<p>Page generated 2025-11-02 08:01:59 UTC</p>" + page[main:],
            page[:main]
            + "<div class='ad-slot'><a href='/ad?id=3'>Cheap flights!</a></div>"
            + page[main:],
            page.replace("<head>", '<head><meta name="csrf-token" content="x9x9x9x9x9">', 1),
            re.sub(r"\n", "\n   ", page[: page.index("<pre")]) + page[page.index("<pre") :],
        ]
        stamped = page[:main] + "<p>Page generated 2024-03-04 12:30:01 UTC</p>" + page[main:]
        assert digest(stamped).exact == digest(noisy[1]).exact
        for edited in noisy[:1] + noisy[2:]:
            assert digest(edited).exact == base.exact


# -- edits a watcher must see (found by an adversarial run on real and shop HTML) ------

_SHOP = (
    "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body><main><h1>Whisk</h1>"
    "<p>A sturdy whisk.</p>{}</main></body></html>"
)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "<form><button>Add to cart</button></form>",
            "<form><button disabled>Sold out</button></form>",
        ),
        (
            "<select><option>S - in stock</option><option>M - in stock</option></select>",
            "<select><option>S - in stock</option><option>M - out of stock</option></select>",
        ),
        ("<p>Part no. 4711-56-78</p>", "<p>Part no. 4711-56-79</p>"),
    ],
    ids=["button", "select option", "part number"],
)
def test_a_shop_edit_in_a_form_or_a_part_number_changes_the_digest(
    before: str, after: str
) -> None:
    assert digest(_SHOP.format(before)).exact != digest(_SHOP.format(after)).exact


def test_a_hidden_input_is_still_not_content() -> None:
    page = "<form><input type='hidden' name='csrf' value='{}'><button>Buy</button></form>"
    assert digest(_SHOP.format(page.format("a1b2c3"))) == digest(
        _SHOP.format(page.format("z9y8x7"))
    )


def test_reviews_written_as_articles_do_not_hide_the_price() -> None:
    page = (
        "<html><body><div class='product'><h1>Kettle</h1><p>Price: <span>{}</span></p>"
        "<p>Steel body, 1.7 litres, auto shut-off and a filter you can wash.</p></div>"
        "<section><article class='review'><p>Fast and quiet.</p></article></section></body></html>"
    )
    assert digest(page.format("49.90")).exact != digest(page.format("54.90")).exact


def test_articles_that_are_the_page_are_still_its_content() -> None:
    page = (
        "<html><body><div class='promo'>Big sale {}</div><article><h1>Ducks</h1>"
        "<p>Ducks walk to the pond every morning and swim there until noon.</p></article>"
        "</body></html>"
    )
    assert content_text(page.format("today")) == content_text(page.format("tomorrow"))


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            '<pre><span class="n">word</span>[4:42]</pre>',
            '<pre><span class="n">word</span>[4:43]</pre>',
        ),
        ("<p>Use <code>items[0:10]</code>.</p>", "<p>Use <code>items[0:20]</code>.</p>"),
        (
            "<pre>for x in xs:\n    check(x)\n    count += 1\n</pre>",
            "<pre>for x in xs:\n    check(x)\ncount += 1\n</pre>",
        ),
    ],
    ids=["slice in a code block", "slice in inline code", "line dedented out of a loop"],
)
def test_an_edit_of_code_changes_the_digest(before: str, after: str) -> None:
    """Code is content as written: no noise rule (a slice is no clock time), and a
    block keeps its indentation."""
    assert digest(_SHOP.format(before)).exact != digest(_SHOP.format(after)).exact


def test_noise_rules_still_apply_around_code() -> None:
    page = (
        "<p>Updated {} by Ann: use <code>f(1:2)</code> now.</p><pre>\n  x = 1  \n\n  y = 2\n</pre>"
    )
    text = content_text(_SHOP.format(page.format("Mar 4, 2024 12:30")))
    assert text == content_text(_SHOP.format(page.format("Apr 11, 2025 9:05")))
    assert text.endswith("Updated {date} by Ann: use f(1:2) now.   x = 1\n  y = 2")


def test_the_code_marks_in_a_page_are_plain_text_to_it() -> None:
    """A page that holds the characters marking code (Unicode noncharacters) loses them
    first: they cannot open or close code."""
    plain = content_text(_SHOP.format("<p>at 12:30 <code>a  b</code></p>"))
    assert content_text(_SHOP.format("<p>at \ufdd0 12:30 <code>a  b</code>\ufdd1</p>")) == plain


@pytest.mark.slow
def test_the_noise_rules_touch_as_many_doc_pages_as_documented() -> None:
    """docs/topics/fingerprint.rst: on the 530 pages of the Python 3.11 docs the rules
    touch 38 pages (dates 35, counters 2); code is never touched."""
    pages = sorted(DOCS.rglob("*.html"))
    if len(pages) < 500:
        pytest.skip(
            f"the Python 3.11 docs are not installed at {DOCS} (apt install python3.11-doc)"
        )
    none = ContentRules.build(noise=[])

    def touched(rules: ContentRules) -> int:
        return sum(
            content_text(body, rules=rules) != content_text(body, rules=none)
            for body in (page.read_bytes() for page in pages)
        )

    assert len(pages) == 530
    assert touched(ContentRules.build()) == 38
    assert touched(ContentRules.build(noise=["dates"])) == 35
    assert touched(ContentRules.build(noise=["counters"])) == 2


def test_undecodable_bytes_keep_their_difference() -> None:
    """Latin-1 bytes under a UTF-8 declaration: M\u00fcller -> M\u00f6ller is an edit."""
    page = "<html><head><meta charset='utf-8'></head><body><main><p>Contact: {}</p></main></body></html>"
    before = page.format("M\u00fcller").encode("latin-1")
    after = page.format("M\u00f6ller").encode("latin-1")
    assert digest(before, "utf-8") != digest(after, "utf-8")


# --- digests of other schemes: an upgrade or a rules change floods nobody --------------


def test_a_digest_made_by_other_rules_or_an_older_version_is_not_compared_exactly() -> None:
    """A price watcher who changes FRESH_CONTENT_EXCLUDE, or upgrades to a new
    CONTENT_VERSION, must not see every page "changed" on its next download: the
    digests' scheme tags differ, so the simhash distance decides, once."""
    from scrapy_fresh.fingerprint.verdict import PageContent, judge
    from scrapy_fresh.store.base import PageState

    text = "".join(
        f"<p>Widget {n} is a sturdy thing for every kitchen shelf.</p>" for n in range(40)
    )
    page = _page(f"<p class='price'>12.50 EUR</p>{text}<div class='related'>Also: Gadget</div>")
    before = digest(page)
    stored = PageState(
        "0" * 40, "http://shop.test/w", last_crawl=1.0, fingerprint=before.simhash,
        content_hash=before.exact,
    )  # fmt: skip

    def verdict(found: object) -> tuple[bool, str]:
        v = judge(stored, PageContent(found.simhash, digest=found.exact), 3)  # type: ignore[attr-defined]
        return v.changed, v.basis

    narrow = ContentRules.build(exclude=[".related"])
    assert digest_scheme(digest(page, rules=narrow).exact) != digest_scheme(before.exact)
    assert verdict(digest(page, rules=narrow)) == (False, "simhash")  # other rules, same page
    assert verdict(digest(page)) == (False, "digest")
    assert verdict(digest(page.replace("12.50", "12.60"))) == (True, "digest")  # same rules
    # A record written by CONTENT_VERSION 3: a plain 64-bit hash of the text, no tag.
    import hashlib

    old = hashlib.blake2b(content_text(page).encode("utf-8"), digest_size=8).digest()
    stored.content_hash = int.from_bytes(old, "big")
    assert digest_scheme(stored.content_hash) != DEFAULT_RULES.scheme
    assert verdict(before) == (False, "simhash")
    stored.content_hash = before.exact  # written again by this visit: exact from now on
    assert verdict(digest(page.replace("12.50", "12.60"))) == (True, "digest")


def test_the_scheme_tag_names_the_version_and_every_rule() -> None:
    tags = {
        DEFAULT_RULES.scheme,
        ContentRules.build(include=["main"]).scheme,
        ContentRules.build(exclude=["aside"]).scheme,
        ContentRules.build(ignore=[r"\d+ in stock"]).scheme,
        ContentRules.build(noise=["dates"]).scheme,
        ContentRules.build(links=True).scheme,
    }
    assert len(tags) == 6
    assert (
        ContentRules.build(exclude=["aside"]).scheme
        == ContentRules.build(exclude=["aside"]).scheme
    )
    assert all(0 <= tag < 1 << 16 for tag in tags)


# -- link targets (FRESH_CONTENT_LINKS) -----------------------------------------------

LINKS = ContentRules.build(links=True)
_REPORT = (
    "<p>The annual report: <a href='/files/report-2025.pdf'>download</a>.</p>"
    "<p><img src='/charts/sales-2025.png' alt='Sales'></p>"
)


def test_link_targets_are_not_content_by_default() -> None:
    page = _page(_REPORT)
    moved = page.replace("2025", "2026")
    assert digest(page) == digest(moved)
    assert "report-2025" not in content_text(page)


def test_with_links_a_link_or_image_that_points_elsewhere_is_an_edit() -> None:
    page = _page(_REPORT)
    text = content_text(page, rules=LINKS)
    assert "download </files/report-2025.pdf>" in text
    assert "Sales </charts/sales-2025.png>" in text
    assert "</>" not in text  # the nav's link to "/" is furniture
    assert "Home" not in text
    for old, new in (("report-2025", "report-2026"), ("sales-2025", "sales-2026")):
        assert digest(page, rules=LINKS).exact != digest(page.replace(old, new), rules=LINKS).exact
    assert digest(page, rules=LINKS) == digest(page, rules=LINKS)


def test_with_links_the_noise_rules_and_exclusions_still_apply() -> None:
    def page(href: str) -> str:
        return _page(f"<p>Read <a href='{href}'>the guide</a>.</p>")

    for one, other in (
        ("/guide?v=12", "/guide?v=13"),  # a cache buster
        ("/guide;jsessionid=A1B2C3D4", "/guide;jsessionid=Z9Y8X7W6"),  # a session id
        ("/guide", "  /guide  "),  # blanks around the target
    ):
        assert digest(page(one), rules=LINKS) == digest(page(other), rules=LINKS), one
    excluded = ContentRules.build(links=True, exclude=["p.related"])
    related = "<p class='related'>See <a href='/a'>more</a></p>"
    assert digest(_page(related), rules=excluded) == digest(
        _page(related.replace("/a", "/b")), rules=excluded
    )


def test_links_keep_the_scheme_tags_rules_had_before_the_setting() -> None:
    """Turning links on names a new scheme; leaving them off keeps every tag stored
    before the setting existed (no store's digests become unknown by an upgrade)."""
    import hashlib

    from scrapy_fresh.fingerprint.content import CONTENT_VERSION

    rules = ContentRules.build(ignore=["x"])
    named = repr((CONTENT_VERSION, rules.include, rules.exclude, rules.ignore, rules.noise))
    before = int.from_bytes(hashlib.blake2b(named.encode(), digest_size=2).digest(), "big")
    assert rules.scheme == before
    assert rules.replace(links=True).scheme != before


def test_links_are_read_from_settings_spiders_and_meta() -> None:
    assert (
        FreshConfig.from_settings(Settings({"FRESH_CONTENT_LINKS": "true"})).content_rules == LINKS
    )
    assert FreshConfig.from_settings(Settings({"FRESH_CONTENT_LINKS": False})).content_rules == (
        DEFAULT_RULES
    )

    class Spider:
        fresh_content_links = True

    assert DEFAULT_RULES.for_spider(Spider()).links
    assert not LINKS.for_request({"fresh_content_links": False}).links
    with pytest.raises(ConfigError, match=r"^meta\['fresh_content_links'\] \('no way'\)"):
        DEFAULT_RULES.for_request({"fresh_content_links": "no way"})


def test_the_documented_pattern_for_signed_urls_keeps_their_links_quiet() -> None:
    """docs/reference/settings.rst, FRESH_CONTENT_LINKS: the FRESH_CONTENT_IGNORE example."""
    rules = ContentRules.build(
        links=True, ignore=[r"[?&](?:X-Amz-[\w-]+|Signature|Expires|Key-Pair-Id)=[^&>\s]*"]
    )

    def page(date: str, signature: str, name: str = "report") -> str:
        href = (
            f"https://files.example/{name}.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            f"&X-Amz-Date={date}&X-Amz-Expires=300&X-Amz-Signature={signature}"
        )
        return _page(f"<p>The <a href='{href}'>report</a>.</p>")

    first = page("20261127T101500Z", "9f8e7d6c5b4a")
    assert digest(first, rules=rules) == digest(
        page("20261128T090000Z", "0a1b2c3d4e5f"), rules=rules
    )
    assert digest(first, rules=rules) != digest(
        page("20261127T101500Z", "9f8e7d6c5b4a", "report-v2"), rules=rules
    )


def test_with_links_excluded_links_stay_out_and_dates_in_targets_are_content() -> None:
    """Review findings: an excluded link's or image's target was still written (an ad's
    click id made every visit "changed"), and the dates rule made a report moved from
    ``/reports/2023-05-01.pdf`` to ``/reports/2024-05-01.pdf`` no edit."""
    rules = ContentRules.build(links=True, exclude=["a.ad", "img.pixel"])

    def page(report: str, click: str) -> str:
        return _page(
            f"<p>The <a href='/reports/{report}.pdf'>report</a>. "
            f"<a class='ad' href='/click?id={click}'>Sponsor</a>"
            f"<img class='pixel' src='/px?id={click}'></p>"
        )

    first = page("2023-05-01", "8c1f")
    assert "/click" not in content_text(first, rules=rules)
    assert "/px" not in content_text(first, rules=rules)
    assert digest(first, rules=rules) == digest(page("2023-05-01", "77aa"), rules=rules)
    assert digest(first, rules=rules) != digest(page("2024-05-01", "8c1f"), rules=rules)
