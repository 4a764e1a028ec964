"""Labelled change-detection benchmark on real HTML: the new page digest against today's
fingerprint, same run.

Pages come from Debian documentation packages installed on this machine (nothing is
fetched from the web): the Python 3.11 documentation (``python3.11-doc``,
``/usr/share/doc/python3.11/html``) and, when installed, the Debian Reference
(``debian-reference-en``, ``/usr/share/debian-reference/*.en.html``), whose DocBook pages
have no ``<main>`` landmark. Each page is parsed with lxml and serialised once (the
*base*); every labelled pair is (base, base edited by one class):

real edits (should count as changed; recall)
    ``paragraph`` a paragraph's words replaced by as many words of another page;
    ``sentence`` one sentence of a paragraph replaced; ``word`` one word replaced by
    another of the same length; ``table_number`` one digit of a table cell changed;
    ``price`` / ``stock`` a product snippet in the content (``Price: 51.77 EUR``,
    ``19 available``): the price or the stock count changes, same number of digits;
    ``list_added`` / ``list_removed`` a list item added or removed.
noise (should count as unchanged; false-change rate)
    ``footer_date`` the footer's "Last updated on" date (the page's own, and one in an
    added ``<div class="footer">``); ``build_stamp`` "Page generated <date time> UTC" at
    the top of the content; ``relative_time`` "Updated 3 minutes ago" in a byline;
    ``counters`` "1,234 views - 17 comments"; ``ad_slot`` a rotating ad
    (``<div class="ad-slot">``) between paragraphs; ``csrf_token`` a form's hidden CSRF
    input and a ``<meta name="csrf-token">``; ``whitespace_attrs`` attributes in reverse
    order and whitespace re-flowed (not inside ``pre``); ``touched`` the same bytes (a
    touched file with new validators).

Verdicts: *current* is ``changed(fingerprint_html(a), fingerprint_html(b))`` (simhash of
2-shingles, digits as 0, 3 bits); *new* is ``digest(a).exact != digest(b).exact``
(:mod:`scrapy_fresh.fingerprint.content`). Speed: both run over the base pages, interleaved, for
``--rounds`` rounds; the table gives the median pages/s and the ratio, same run.

``--extractors`` also runs the labelled pairs through other main-content extractors
(trafilatura, readability-lxml, jusText, Resiliparse's own main-content heuristic),
each followed by the same normalisation and exact hash, when they are installed: the
measurement behind the choice of extractor.

Usage::

    python bench/change_detection.py                 # 150 pages, 5 rounds
    python bench/change_detection.py --pages 300 --extractors --extractor-pages 40
    python bench/change_detection.py --speed --pages 150 --rounds 7   # speed only

Prints markdown tables and one PASS/MISS line per goal on stdout.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import hashlib
import importlib.util
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import lxml.html
from lxml import etree

from scrapy_fresh.fingerprint.content import digest, normalize_text
from scrapy_fresh.fingerprint.shingles import changed, fingerprint_html

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")
DEBIAN_REFERENCE = Path("/usr/share/debian-reference")
REAL = (
    "paragraph",
    "sentence",
    "word",
    "table_number",
    "price",
    "stock",
    "list_added",
    "list_removed",
)
NOISE = (
    "footer_date",
    "build_stamp",
    "relative_time",
    "counters",
    "ad_slot",
    "csrf_token",
    "whitespace_attrs",
    "touched",
)
_WORD = re.compile(r"[A-Za-z]{4,}")
_SENTENCE = re.compile(r"[A-Z][^.!?]{30,}?[.!?](?=\s|$)")
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_ADS = (
    "Cloud hosting from 2 EUR a month: deploy in seconds.",
    "Learn Rust in 30 days with our online course.",
    "Noise-cancelling headphones, today only 40% off.",
    "Get the best VPN deal of the year.",
    "Fresh coffee beans delivered to your door.",
)


def _load(paths: Sequence[Path]) -> list[tuple[str, bytes]]:
    pages = []
    for path in paths:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        pages.append((str(path), data))
    return pages


def corpus(limit: int, seed: int) -> list[tuple[str, etree._Element]]:
    """Base pages: parsed once, with a main part holding at least 3 long paragraphs."""
    paths = sorted(PYTHON_DOCS.rglob("*.html")) if PYTHON_DOCS.is_dir() else []
    extra = sorted(DEBIAN_REFERENCE.glob("*.en.html*")) if DEBIAN_REFERENCE.is_dir() else []
    if not paths and not extra:
        raise SystemExit(f"no pages: install python3.11-doc ({PYTHON_DOCS}).")
    rng = random.Random(seed)
    rng.shuffle(paths)
    chosen = []
    for name, data in _load(extra) + _load(paths):
        if len(chosen) >= limit:
            break
        if len(data) < 5000 or "genindex" in name or name.endswith("search.html"):
            continue
        root = lxml.html.document_fromstring(data)
        if len(_paragraphs(root, 12)) >= 3:
            chosen.append((name, root))
    return chosen


def _main(root: etree._Element) -> etree._Element:
    found = root.xpath("//main | //*[@role='main']")
    return found[0] if found else root.body


def _paragraphs(root: etree._Element, words: int) -> list[etree._Element]:
    """Paragraphs of the content: at least ``words`` words, not in a pre or a nav (a
    table of contents: a heading changes there, never the entry alone)."""
    return [
        p
        for p in _main(root).iter("p")
        if len(p.text_content().split()) >= words and not p.xpath("ancestor::pre | ancestor::nav")
    ]


def _text_nodes(element: etree._Element) -> list[tuple[etree._Element, str]]:
    """(element, "text" or "tail") of each text node inside ``element``, not in pre/code."""
    nodes = []
    for el in element.iter():
        if el.tag in ("pre", "code", "script", "style") or not isinstance(el.tag, str):
            continue
        if el.text and el.text.strip():
            nodes.append((el, "text"))
        if el is not element and el.tail and el.tail.strip():
            nodes.append((el, "tail"))
    return nodes


def _lists(root: etree._Element) -> list[etree._Element]:
    """Lists of the content: 2 items or more, not a table of contents in a ``nav``."""
    return [
        ul for ul in _main(root).iter("ul", "ol") if len(ul) >= 2 and not ul.xpath("ancestor::nav")
    ]


def _date(rng: random.Random) -> str:
    return f"{rng.choice(_MONTHS)} {rng.randint(1, 28):02d}, {rng.randint(2015, 2025)}"


def _iso(rng: random.Random) -> str:
    return (
        f"{rng.randint(2015, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    )


def _first_block(root: etree._Element) -> etree._Element:
    return _main(root)


def _insert_top(root: etree._Element, html: str) -> None:
    _first_block(root).insert(0, lxml.html.fragment_fromstring(html))


def _insert_after_paragraph(root: etree._Element, html: str, rng: random.Random) -> None:
    p = rng.choice(_paragraphs(root, 12))
    p.addnext(lxml.html.fragment_fromstring(html))


class Editor:
    """Makes the labelled (old, new) pairs of one page."""

    def __init__(self, root: etree._Element, donor: etree._Element, seed: int) -> None:
        self.root = root
        self.donor = donor  # another page: words and sentences for rewrites
        self.seed = seed
        self.rng = random.Random(seed)
        words = _WORD.findall(_main(donor).text_content())
        self.donor_words = words or ["alpha", "beta", "gamma"]
        self.donor_sentences = _SENTENCE.findall(" ".join(_main(donor).text_content().split()))

    def pair(self, kind: str) -> tuple[bytes, bytes] | None:
        old = copy.deepcopy(self.root)
        new = copy.deepcopy(self.root)
        self.rng.seed(f"{self.seed}-{kind}")  # str seeds are the same in every process
        state = self.rng.getstate()
        setup = getattr(self, f"_setup_{kind}", None)
        if setup is not None:  # the same furniture in both versions, with their values
            self.rng.setstate(state)
            setup(old, "old")
            self.rng.setstate(state)
            setup(new, "new")
            return _html(old), _html(new)
        edit = getattr(self, f"_edit_{kind}")
        if edit(new) is False:
            return None
        if kind == "whitespace_attrs":
            return _html(old), _reflow(new)
        return _html(old), _html(new)

    # real edits --------------------------------------------------------------------

    def _edit_paragraph(self, root: etree._Element) -> bool:
        candidates = _paragraphs(root, 20)
        if not candidates:
            return False
        p = self.rng.choice(candidates)
        n = len(p.text_content().split())
        start = self.rng.randrange(max(1, len(self.donor_words) - n))
        words = (self.donor_words * (n // len(self.donor_words) + 2))[start : start + n]
        for child in list(p):
            p.remove(child)
        p.text = " ".join(words).capitalize() + "."
        return True

    def _edit_sentence(self, root: etree._Element) -> bool:
        nodes = [
            (el, attr)
            for p in _paragraphs(root, 12)
            for el, attr in _text_nodes(p)
            if _SENTENCE.search(getattr(el, attr))
        ]
        if not nodes or not self.donor_sentences:
            return False
        el, attr = self.rng.choice(nodes)
        text = getattr(el, attr)
        sentences = list(_SENTENCE.finditer(text))
        target = self.rng.choice(sentences)
        replacement = self.rng.choice(self.donor_sentences)
        if replacement == target.group():
            replacement = "This sentence was rewritten by the benchmark."
        setattr(el, attr, text[: target.start()] + replacement + text[target.end() :])
        return True

    def _edit_word(self, root: etree._Element) -> bool:
        nodes = [
            (el, attr)
            for p in _paragraphs(root, 8)
            for el, attr in _text_nodes(p)
            if _WORD.search(getattr(el, attr))
        ]
        if not nodes:
            return False
        el, attr = self.rng.choice(nodes)
        text = getattr(el, attr)
        target = self.rng.choice(list(_WORD.finditer(text)))
        old = target.group()
        same = [w for w in self.donor_words if len(w) == len(old) and w.lower() != old.lower()]
        word = self.rng.choice(same) if same else old[::-1] + "x"
        setattr(el, attr, text[: target.start()] + word + text[target.end() :])
        return True

    def _edit_table_number(self, root: etree._Element) -> bool:
        nodes = [
            (el, attr)
            for cell in _main(root).iter("td")
            for el, attr in [*_text_nodes(cell), (cell, "text")]
            if getattr(el, attr) and re.search(r"\d", getattr(el, attr))
        ]
        if not nodes:
            return False
        el, attr = self.rng.choice(nodes)
        text = getattr(el, attr)
        digits = [m.start() for m in re.finditer(r"\d", text)]
        i = self.rng.choice(digits)
        setattr(el, attr, text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :])
        return True

    def _product(self, root: etree._Element, price: str, stock: int) -> None:
        _insert_after_paragraph(
            root,
            f'<div class="product"><h3>Widget {self.rng.randint(1, 99)}</h3>'
            f'<p class="price">Price: {price} EUR</p>'
            f'<p class="stock">{stock} available</p></div>',
            self.rng,
        )

    def _setup_price(self, root: etree._Element, version: str) -> None:
        cents = self.rng.randint(1000, 8999)
        self.rng.random()
        if version == "new":
            cents += 100
        self._product(root, f"{cents // 100}.{cents % 100:02d}", 19)

    def _setup_stock(self, root: etree._Element, version: str) -> None:
        stock = self.rng.randint(11, 98)
        self._product(root, "51.77", stock - (version == "new"))

    def _edit_list_added(self, root: etree._Element) -> bool:
        lists = _lists(root)
        if not lists:
            return False
        target = self.rng.choice(lists)
        item = copy.deepcopy(target[self.rng.randrange(len(target))])
        for child in list(item):
            item.remove(child)
        item.text = (
            self.rng.choice(self.donor_sentences) if self.donor_sentences else "A new item."
        )
        target.insert(self.rng.randrange(len(target) + 1), item)
        return True

    def _edit_list_removed(self, root: etree._Element) -> bool:
        lists = _lists(root)
        if not lists:
            return False
        target = self.rng.choice(lists)
        target.remove(target[self.rng.randrange(len(target))])
        return True

    # noise -------------------------------------------------------------------------

    def _setup_footer_date(self, root: etree._Element, version: str) -> None:
        date = _date(self.rng)
        if version == "new":
            while (other := _date(self.rng)) == date:
                pass
            date = other
        for el, attr in _text_nodes(root.body):
            text = getattr(el, attr)
            if "Last updated on" in text:
                setattr(
                    el, attr, re.sub(r"Last updated on [^.]*", f"Last updated on {date}", text)
                )
        root.body.append(
            lxml.html.fragment_fromstring(
                f'<div class="footer">Last updated on {date} at '
                f"{self.rng.randint(0, 23):02d}:{self.rng.randint(0, 59):02d}.</div>"
            )
        )

    def _setup_build_stamp(self, root: etree._Element, version: str) -> None:
        stamp = _iso(self.rng)
        if version == "new":
            stamp = _iso(self.rng)
        _insert_top(root, f'<p class="build">Page generated {stamp} UTC</p>')

    def _setup_relative_time(self, root: etree._Element, version: str) -> None:
        ago = ["3 minutes ago", "an hour ago", "2 hours ago", "yesterday", "just now"]
        first = self.rng.choice(ago)
        value = self.rng.choice([a for a in ago if a != first]) if version == "new" else first
        _insert_top(root, f'<p class="byline">By the docs team, updated {value}</p>')

    def _setup_counters(self, root: etree._Element, version: str) -> None:
        views, comments = self.rng.randint(100, 99999), self.rng.randint(0, 300)
        if version == "new":
            views += self.rng.randint(1, 5000)
            comments += self.rng.randint(1, 30)
        _insert_top(
            root, f'<p class="meta"><span>{views:,} views</span> - {comments} comments</p>'
        )

    def _setup_ad_slot(self, root: etree._Element, version: str) -> None:
        first = self.rng.randrange(len(_ADS))
        index = (first + 1 + self.rng.randrange(len(_ADS) - 1)) % len(_ADS)
        ad = _ADS[index if version == "new" else first]
        _insert_after_paragraph(
            root,
            f'<div class="ad-slot" id="ad-slot-2"><a href="https://ads.example/c?id='
            f'{self.rng.randint(1, 10**6)}">{ad}</a></div>',
            self.rng,
        )

    def _setup_csrf_token(self, root: etree._Element, version: str) -> None:
        token = hashlib.sha1(f"{self.rng.random()}{version}".encode()).hexdigest()
        head = root.find("head")
        if head is not None:
            head.append(etree.Element("meta", name="csrf-token", content=token))
        _insert_after_paragraph(
            root,
            '<form method="post" action="/feedback"><input type="hidden" '
            f'name="csrfmiddlewaretoken" value="{token}"><input name="q">'
            "<button>Send</button></form>",
            self.rng,
        )

    def _edit_whitespace_attrs(self, root: etree._Element) -> bool:
        for el in root.iter():
            if not isinstance(el.tag, str):
                continue
            items = list(el.attrib.items())
            if len(items) > 1:
                el.attrib.clear()
                for key, value in reversed(items):
                    el.set(key, value)
        return True

    def _edit_touched(self, root: etree._Element) -> bool:
        return True


def _html(root: etree._Element) -> bytes:
    return lxml.html.tostring(root, encoding="utf-8", doctype="<!DOCTYPE html>")


_BETWEEN_TAGS = re.compile(rb">\s+<")
_BETWEEN_BLOCKS = re.compile(rb"(</(?:p|div|li|ul|ol|h[1-6]|section|table|tr|dl|dd)>)(?=<)")
_SPACES = re.compile(rb"(?<=\w) (?=\w)")


def _reflow(root: etree._Element) -> bytes:
    """Serialise with whitespace re-flowed, the way a re-indenting template engine
    changes a page: whitespace between tags re-indented, a newline after block ends,
    spaces doubled in text (never inside pre); no space added where there was none
    between inline elements (that would change the rendered text)."""
    for pre in root.iter("pre", "textarea", "script", "style"):
        pre.set("data-keep", "1")
    for el in root.iter():
        if not isinstance(el.tag, str) or el.xpath("ancestor-or-self::*[@data-keep]"):
            continue
        if el.text and el.text.strip():
            el.text = el.text.replace(" ", "  ")
        if el.tail and el.tail.strip() and not el.xpath("ancestor::*[@data-keep]"):
            el.tail = el.tail.replace(" ", "  ")
    for pre in root.iter("pre", "textarea", "script", "style"):
        del pre.attrib["data-keep"]
    data = _html(root)
    data = _BETWEEN_TAGS.sub(b">\n    <", data)  # whitespace between tags re-indented
    return _BETWEEN_BLOCKS.sub(rb"\1\n", data)  # and added after block ends


# ---------------------------------------------------------------------------------------


def _blake(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def verdicts() -> dict[str, Callable[[bytes, bytes], bool]]:
    return {
        "current": lambda a, b: changed(fingerprint_html(a), fingerprint_html(b)),
        "new": lambda a, b: digest(a).exact != digest(b).exact,
    }


def _extractor_verdicts() -> dict[str, Callable[[bytes, bytes], bool]]:
    """Other main-content extractors, each followed by the same rules and exact hash."""
    found: dict[str, Callable[[bytes], str]] = {}
    try:
        import trafilatura

        found["trafilatura"] = lambda b: trafilatura.extract(b, include_tables=True) or ""
    except ImportError:
        print("trafilatura not installed: skipped", file=sys.stderr)
    try:
        from readability import Document

        found["readability-lxml"] = lambda b: lxml.html.fromstring(
            Document(b).summary()
        ).text_content()
    except ImportError:
        print("readability-lxml not installed: skipped", file=sys.stderr)
    try:
        import justext

        stop = justext.get_stoplist("English")
        found["jusText"] = lambda b: "\n".join(
            p.text for p in justext.justext(b, stop) if not p.is_boilerplate
        )
    except ImportError:
        print("jusText not installed: skipped", file=sys.stderr)
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    found["resiliparse main_content=True"] = lambda b: extract_plain_text(
        HTMLTree.parse_from_bytes(b, "utf-8"), main_content=True
    )

    def judge(extract: Callable[[bytes], str]) -> Callable[[bytes, bytes], bool]:
        return lambda a, b: (
            _blake(normalize_text(extract(a))) != _blake(normalize_text(extract(b)))
        )

    return {name: judge(extract) for name, extract in found.items()}


def run_labels(
    pages: list[tuple[str, etree._Element]],
    judges: dict[str, Callable[[bytes, bytes], bool]],
    seed: int,
) -> tuple[dict[str, dict[str, int]], dict[str, int], list[str]]:
    hits: dict[str, dict[str, int]] = {name: dict.fromkeys(REAL + NOISE, 0) for name in judges}
    totals = dict.fromkeys(REAL + NOISE, 0)
    misses: list[str] = []
    for i, (name, root) in enumerate(pages):
        editor = Editor(root, pages[(i + 1) % len(pages)][1], seed + i)
        for kind in REAL + NOISE:
            pair = editor.pair(kind)
            if pair is None:
                continue
            totals[kind] += 1
            for judge_name, judge in judges.items():
                verdict = judge(*pair)
                hits[judge_name][kind] += verdict
                if judge_name == "new" and verdict != (kind in REAL):
                    misses.append(f"{kind}: {name}")
        if (i + 1) % 25 == 0:
            print(f"  {i + 1}/{len(pages)} pages judged", file=sys.stderr)
    return hits, totals, misses


def _reference_digest() -> Callable[[bytes], object]:
    """The digest as first written (``tests/content_reference.py``): the "before"."""
    path = Path(__file__).resolve().parent.parent / "tests" / "content_reference.py"
    spec = importlib.util.spec_from_file_location("content_reference", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function: Callable[[bytes], object] = module.digest
    return function


def speed(bodies: list[bytes], rounds: int, before: bool = False) -> dict[str, float]:
    runs: dict[str, list[float]] = {"current": [], "new": []}
    functions: dict[str, Callable[[bytes], object]] = {"current": fingerprint_html, "new": digest}
    if before:
        runs["before"] = []
        functions["before"] = _reference_digest()
    for _ in range(rounds):
        for name, function in functions.items():
            start = time.perf_counter()
            for body in bodies:
                function(body)
            runs[name].append(len(bodies) / (time.perf_counter() - start))
    return {name: statistics.median(values) for name, values in runs.items()}


def speed_only(bodies: list[bytes], rounds: int) -> int:
    """``--speed``: pages/s of the current fingerprint, the digest as first written
    (before) and the digest now (new), interleaved in the same run."""
    rates = speed(bodies, rounds, before=True)
    print(f"## Speed, median of {rounds} rounds over {len(bodies)} base pages\n")
    print("| function | pages/s | time / current |\n|---|---:|---:|")
    for name, label in (
        ("current", "current fingerprint (fingerprint_html)"),
        ("before", "digest, reference implementation (before)"),
        ("new", "digest (scrapy_fresh.fingerprint.content.digest)"),
    ):
        print(f"| {label} | {rates[name]:.0f} | {rates['current'] / rates[name]:.2f}x |")
    ratio = rates["current"] / rates["new"]
    print(
        f"\n{'PASS' if ratio <= 2.0 else 'MISS'}: new digest at most 2x slower than the "
        f"current fingerprint: {ratio:.2f}x"
    )
    return 0


def _rate(hits: int, total: int) -> str:
    return f"{100 * hits / total:.1f}%" if total else "-"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--extractors", action="store_true")
    parser.add_argument("--extractor-pages", type=int, default=40)
    parser.add_argument("--speed", action="store_true")
    args = parser.parse_args(argv)
    pages = corpus(args.pages, args.seed)
    if args.speed:
        return speed_only([_html(root) for _, root in pages], args.rounds)
    landmarks = sum(bool(root.xpath("//main | //*[@role='main']")) for _, root in pages)
    print("## Change verdicts on real pages: current fingerprint vs new digest\n")
    print(
        f"{len(pages)} pages ({landmarks} with a main landmark, {len(pages) - landmarks} "
        f"without), seed {args.seed}; current = simhash of 2-shingles, digits as 0, "
        "changed above 3 bits; new = exact hash of the normalised main content.\n"
    )
    judges = verdicts()
    hits, totals, misses = run_labels(pages, judges, args.seed)
    print("| class | kind | pairs | current | new |")
    print("|---|---|---:|---:|---:|")
    for kind in REAL + NOISE:
        label = "real edit (recall)" if kind in REAL else "noise (false changes)"
        print(
            f"| {kind} | {label} | {totals[kind]} | {_rate(hits['current'][kind], totals[kind])}"
            f" | {_rate(hits['new'][kind], totals[kind])} |"
        )
    bodies = [_html(root) for _, root in pages]
    rates = speed(bodies, args.rounds)
    ratio = rates["current"] / rates["new"]
    print(
        f"\nSpeed (median of {args.rounds} rounds over the {len(bodies)} base pages): "
        f"current {rates['current']:.0f} pages/s, new {rates['new']:.0f} pages/s; "
        f"new is {ratio:.2f}x slower.\n"
    )
    worst_recall = min(hits["new"][k] / totals[k] for k in REAL if totals[k])
    worst_noise = max(hits["new"][k] / totals[k] for k in NOISE if totals[k])
    for ok, text in (
        (worst_recall >= 0.99, f"recall >= 99% on every real-edit class: {worst_recall:.1%}"),
        (worst_noise <= 0.01, f"false changes <= 1% on every noise class: {worst_noise:.1%}"),
        (ratio <= 2.0, f"new digest at most 2x slower than the current fingerprint: {ratio:.2f}x"),
    ):
        print(f"{'PASS' if ok else 'MISS'}: {text}")
    for line in misses[:20]:
        print(f"  wrong verdict (new): {line}")
    if args.extractors:
        sample = pages[: args.extractor_pages]
        others = _extractor_verdicts()
        others["new (landmarks + Resiliparse)"] = judges["new"]
        ext_hits, ext_totals, _ = run_labels(sample, others, args.seed)
        names = list(others)
        print(f"\n## Main-content extractors, same rules and exact hash ({len(sample)} pages)\n")
        print("| class | pairs | " + " | ".join(names) + " |")
        print("|---|---:|" + "---:|" * len(names))
        for kind in REAL + NOISE:
            cells = " | ".join(_rate(ext_hits[n][kind], ext_totals[kind]) for n in names)
            print(f"| {kind} | {ext_totals[kind]} | {cells} |")
        sample_bodies = [_html(root) for _, root in sample[:20]]
        print("\n| extractor | pages/s (20 pages) |\n|---|---:|")
        for name, judge in others.items():
            start = time.perf_counter()
            for body in sample_bodies:
                judge(body, body)
            print(f"| {name} | {2 * len(sample_bodies) / (time.perf_counter() - start):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
