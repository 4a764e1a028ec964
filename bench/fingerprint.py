"""Benchmark of scrapy_fresh.fingerprint.shingles against the ``simhash`` package, same run.

Generates ``--pages`` realistic HTML pages of 40-60 kB locally and deterministically
(seeded): head with meta tags, a large inline stylesheet, JSON-LD and inline scripts,
a header with a nav menu, an article of 10-22 paragraphs of pseudo-English with
inline links and emphasis, figures, comments, a related-stories aside and a footer
with links, icons, an ad and a timestamp. Then measures pages per second for:

(a) features -> fingerprint, on prebuilt word 4-shingles (one list per page, the same
    list given to every variant): ``simhash.Simhash(features).value`` against
    ``simhash_features(features)`` (package-identical MD5) and
    ``simhash_features(features, mode="fast")``;
(b) raw HTML -> fingerprint: the package's pipeline -- our :func:`html_to_text`,
    :func:`words`, :func:`shingles` with ``k = DEFAULT_K``, then
    ``simhash.Simhash(shingles).value`` -- against ``fingerprint_html(html)`` (the
    default, fast hash) and ``fingerprint_html(html, mode="md5")``. Both sides extract
    the same text and hash the same shingles; only the hashing pipeline differs.

The fast mode is timed twice: as installed (the C extension ``scrapy_fresh._speedups``
when it was built, the default; else NumPy) and with NumPy only (the extension hidden,
as on a machine without a C compiler). The goals are computed on the default path.

Every variant runs once per round over all pages, variants interleaved, and the table
gives the median over rounds (the machine may be shared). Before timing, the MD5
results are checked to equal the package's on every page, and the C results to equal
the NumPy ones.

Usage::

    python bench/fingerprint.py              # 60 pages, 7 rounds, well under a minute
    python bench/fingerprint.py --pages 200 --rounds 11

Prints a markdown table and one PASS/MISS line per goal on stdout.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import itertools
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import lxml.etree
import numpy as np
import simhash

from scrapy_fresh.fingerprint import shingles as fp
from scrapy_fresh.fingerprint.shingles import (
    BOILERPLATE_TAGS,
    DEFAULT_K,
    fingerprint_html,
    fingerprint_text,
    hamming,
    html_to_text,
    shingles,
    simhash_features,
    words,
)


def _split(words: str) -> tuple[str, ...]:
    return tuple(words.split())


_FUNCTION = _split(
    "the of and to a in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there one all we their has been would more will "
    "if no when so can who its said about into than them some could only other new also over "
    "time after two may first these like any most where then our many such"
)
_ONSETS = _split(
    "b bl br c ch cl cr d dr f fl fr g gl gr h j k l m n p pl pr qu r s sc sh sl sm sn sp st "
    "str t th tr v w wh z"
)
_VOWELS = _split("a e i o u a e i o ai ea ou io")
_CODAS = ("", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "rk", "ct", "ss")


class Vocabulary:
    """Pseudo-English: 45% function words, the rest Zipf-distributed over ``size`` words."""

    def __init__(self, seed: int = 0, size: int = 8000) -> None:
        rng = random.Random(seed)
        seen = set(_FUNCTION)
        self.words: list[str] = []
        while len(self.words) < size:
            word = "".join(
                rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                for _ in range(rng.choice((1, 1, 1, 2, 2, 2, 3)))
            )
            if word not in seen:
                seen.add(word)
                self.words.append(word)
        self._cum = list(itertools.accumulate(1.0 / (rank + 8) for rank in range(size)))

    def draw(self, rng: random.Random, n: int) -> list[str]:
        content = rng.choices(self.words, cum_weights=self._cum, k=n)
        return [rng.choice(_FUNCTION) if rng.random() < 0.45 else w for w in content]

    def sentence(self, rng: random.Random, n: int | None = None, end: str = ".") -> str:
        drawn = self.draw(rng, n if n is not None else rng.randint(6, 24))
        if rng.random() < 0.3:  # a name or a number somewhere
            i = rng.randrange(len(drawn))
            drawn[i] = drawn[i].title() if rng.random() < 0.7 else str(rng.randint(2, 2000))
        if len(drawn) > 8 and rng.random() < 0.4:
            drawn[rng.randrange(2, len(drawn) - 2)] += ","
        text = " ".join(drawn)
        return text[0].upper() + text[1:] + end

    def title(self, rng: random.Random, n: int) -> str:
        return " ".join(w.title() for w in self.draw(rng, n))


def _inline_markup(voc: Vocabulary, rng: random.Random, sentence: str) -> str:
    """Wrap a few words of a sentence in links or emphasis, like article markup."""
    parts = sentence.split(" ")
    for _ in range(rng.choice((0, 0, 1, 1, 2))):
        i = rng.randrange(len(parts))
        j = min(len(parts), i + rng.randint(1, 4))
        tag = rng.choice(("a", "a", "em", "strong"))
        if tag == "a":
            slug = parts[i].strip(",.").lower()
            href = f"/{voc.words[rng.randrange(500)]}/{rng.randrange(10**6)}-{slug}"
            parts[i] = f'<a href="{href}" class="inline-link" data-track="body">{parts[i]}'
        else:
            parts[i] = f"<{tag}>{parts[i]}"
        parts[j - 1] += f"</{tag}>"
    return " ".join(parts)


def _css(rng: random.Random, voc: Vocabulary, n: int) -> str:
    props = _split(
        "margin padding color background font-size line-height display border max-width "
        "grid-template-columns letter-spacing transition"
    )
    rules = []
    for _ in range(n):
        selector = ", ".join(
            f".{rng.choice(voc.words[:300])}-{rng.choice(voc.words[:300])}"
            for _ in range(rng.randint(1, 3))
        )
        decls = ";".join(
            f"{rng.choice(props)}:{rng.randint(0, 64)}px"
            if rng.random() < 0.6
            else f"{rng.choice(props)}:#{rng.randrange(16**6):06x}"
            for _ in range(rng.randint(2, 7))
        )
        rules.append(f"{selector}{{{decls}}}")
    return "\n".join(rules)


def _js(rng: random.Random, voc: Vocabulary, n: int) -> str:
    lines = ["(function(w,d){'use strict';var cfg=w.__CFG__||{};"]
    for _ in range(n):
        a, b, c = (rng.choice(voc.words[:400]) for _ in range(3))
        lines.append(
            f"function {a}_{b}(e,t){{if(!e||!e.{c})return null;var n=d.querySelectorAll("
            f"'.{a}-{b}');for(var i=0;i<n.length;i++){{n[i].setAttribute('data-{c}',"
            f"t+i*{rng.randint(1, 99)});}}return cfg.{b}&&cfg.{b}(e)}}"
        )
    lines.append("})(window,document);")
    return "\n".join(lines)


def _paragraph(voc: Vocabulary, rng: random.Random) -> str:
    sentences = [_inline_markup(voc, rng, voc.sentence(rng)) for _ in range(rng.randint(2, 6))]
    return "<p>" + " ".join(sentences) + "</p>"


def make_page(seed: int, voc: Vocabulary, low: int = 40_000, high: int = 60_000) -> str:
    """Return one realistic news-article page of ``low`` to ``high`` bytes (UTF-8)."""
    rng = random.Random(seed)
    target = rng.randint(low + 2_000, high - 2_000)
    site = voc.title(rng, 2)
    headline = voc.sentence(rng, rng.randint(7, 14), end="")
    nav = "\n".join(
        f'<li class="nav-item"><a class="nav-link" href="/{s.lower().replace(" ", "-")}/" '
        f'data-section="{i}">{s}</a></li>'
        for i, s in enumerate(voc.title(rng, rng.randint(1, 2)) for _ in range(14))
    )
    body = [_paragraph(voc, rng) for _ in range(8)]
    for _ in range(rng.randint(1, 2)):
        body.insert(
            rng.randrange(1, len(body)),
            f'<figure class="article-figure"><img src="/img/{rng.randrange(10**8):08d}.jpg" '
            f'alt="{voc.sentence(rng, 6, end="")}" width="1200" height="675" loading="lazy" '
            f'srcset="/img/{rng.randrange(10**8)}-480.jpg 480w, '
            f'/img/{rng.randrange(10**8)}-960.jpg 960w">'
            f"<figcaption>{voc.sentence(rng, rng.randint(6, 14))}</figcaption></figure>",
        )
    body.insert(
        rng.randrange(1, len(body)), f"<blockquote><p>{voc.sentence(rng)}</p></blockquote>"
    )
    related = "\n".join(
        f'<li class="related-item"><a href="/story/{rng.randrange(10**7)}">'
        f'<img src="/thumb/{rng.randrange(10**8)}.jpg" alt="" width="120" height="80">'
        f'<span class="related-title">{voc.sentence(rng, rng.randint(5, 10), end="")}</span>'
        "</a></li>"
        for _ in range(rng.randint(5, 9))
    )
    comments = "\n".join(
        f'<div class="comment" id="c{rng.randrange(10**6)}"><span class="comment-author">'
        f"{voc.title(rng, 2)}</span> <time>{rng.randint(1, 23)} hours ago</time>"
        f"<p>{voc.sentence(rng)} {voc.sentence(rng)}</p></div>"
        for _ in range(rng.randint(2, 6))
    )
    footer_links = " ".join(
        f'<a href="/about/{i}" class="footer-link">{voc.title(rng, rng.randint(1, 3))}</a>'
        for i in range(rng.randint(10, 18))
    )
    ld = json.dumps(
        {
            "@context": "https://schema.org",
            "@type": "NewsArticle",
            "headline": headline,
            "author": {"@type": "Person", "name": voc.title(rng, 2)},
            "keywords": [voc.words[rng.randrange(2000)] for _ in range(8)],
        }
    )
    icons = "".join(
        '<svg class="icon" viewBox="0 0 24 24" aria-hidden="true"><path d="M1 1 '
        + " ".join(f"L{rng.randint(0, 24)} {rng.randint(0, 24)}" for _ in range(12))
        + 'Z"/></svg>'
        for _ in range(5)
    )

    def render(paragraphs: Sequence[str], css_rules: int) -> str:
        return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{headline} | {site}</title>
<meta name="description" content="{voc.sentence(random.Random(seed), 20)}">
<meta property="og:title" content="{headline}">
<link rel="canonical" href="https://www.example.com/story/{seed}">
<link rel="stylesheet" href="/static/main.{seed:08x}.css">
<style>{_css(random.Random(seed), voc, css_rules)}</style>
<script type="application/ld+json">{ld}</script>
<script>{_js(random.Random(seed + 1), voc, 40)}</script>
</head>
<body class="article-page">
<!-- header -->
<header class="site-header"><a class="logo" href="/">{site}</a>
<nav class="main-nav" aria-label="Sections"><ul class="nav-list">
{nav}
</ul></nav>
<form class="search" action="/search"><input type="search" name="q"></form>
</header>
<main id="content">
<article class="story">
<h1 class="headline">{headline}</h1>
<p class="byline">By <a href="/author/{seed % 997}">{site} staff</a>,
<time datetime="2025-05-14T12:30:00Z">14 May 2025, 12:30</time></p>
{chr(10).join(paragraphs)}
</article>
<section class="comments"><h2>Comments</h2>
{comments}
</section>
<aside class="related"><h2>Related stories</h2><ul>
{related}
</ul></aside>
</main>
<footer class="site-footer"><div class="footer-links">{footer_links}</div>
<div class="social">{icons}</div>
<div class="ad-slot" data-ad-unit="footer">Advertisement: {voc.sentence(rng, 9)}</div>
<p class="copyright">&copy; 2025 {site}. Page generated 14 May 2025 12:31:07 UTC.</p>
</footer>
<script src="/static/app.{seed:08x}.js" defer></script>
<script>{_js(random.Random(seed + 2), voc, 10)}</script>
</body>
</html>
"""

    # Article text first (10-22 paragraphs), then stylesheet rules fill up to the target.
    body.extend(_paragraph(voc, rng) for _ in range(rng.randint(2, 14)))
    css_rules = 60
    page = render(body, css_rules)
    while len(page.encode()) < target and css_rules < 600:
        css_rules += 10
        page = render(body, css_rules)
    while len(page.encode()) > high and len(body) > 8:
        body.pop()
        page = render(body, css_rules)
    return page


# ---------------------------------------------------------------------------------------
# Separation study (--separation): which edits count as changes, for k and threshold
# ---------------------------------------------------------------------------------------

EDITS = ("word", "ts_body", "footer", "para")
EDIT_LABELS = {
    "word": "one word changed",
    "ts_body": "new time in the byline",
    "footer": "new footer time + ad",
    "para": "paragraph rewritten",
}


class ArticlePage:
    """An article page of ``article_bytes`` of text that can be edited and re-rendered."""

    def __init__(self, seed: int, voc: Vocabulary, article_bytes: int) -> None:
        self.voc = voc
        rng = random.Random(seed)
        self.site = voc.title(rng, 2)
        self.nav = [voc.title(rng, rng.randint(1, 2)) for _ in range(12)]
        self.headline = voc.sentence(rng, rng.randint(6, 12), end="")
        self.paragraphs: list[str] = []
        size = 0
        while size < article_bytes:
            n = rng.randint(40, 120)
            self.paragraphs.append(self.paragraph(rng, n))
            size += len(self.paragraphs[-1]) + 1
        self.related = [voc.sentence(rng, rng.randint(5, 10)) for _ in range(5)]
        self.footer_links = [voc.title(rng, rng.randint(1, 3)) for _ in range(10)]
        self.updated = 1_700_000_000 + rng.randrange(10**7)
        self.generated = self.updated + rng.randrange(10**5)
        self.ad = voc.sentence(rng, rng.randint(6, 12))

    def paragraph(self, rng: random.Random, n: int) -> str:
        sentences, total = [], 0
        while total < n:
            sentences.append(self.voc.sentence(rng, min(rng.randint(8, 22), max(3, n - total))))
            total += len(sentences[-1].split())
        return " ".join(sentences)

    def copy(self) -> ArticlePage:
        new = object.__new__(ArticlePage)
        new.__dict__.update(self.__dict__, paragraphs=list(self.paragraphs))
        return new

    def edited(self, edit: str, rng: random.Random) -> ArticlePage:
        new = self.copy()
        if edit == "word":
            i = rng.randrange(len(new.paragraphs))
            tokens = new.paragraphs[i].split(" ")
            j = rng.randrange(len(tokens))
            replacement = tokens[j]
            while replacement == tokens[j]:
                replacement = rng.choice(self.voc.words[:3000])
            tokens[j] = replacement
            new.paragraphs[i] = " ".join(tokens)
        elif edit == "ts_body":
            new.updated += rng.randrange(60, 3 * 86_400)
        elif edit == "footer":
            new.generated += rng.randrange(1, 3 * 86_400)
            new.ad = self.voc.sentence(rng, rng.randint(6, 12))
        elif edit == "para":
            i = rng.randrange(len(new.paragraphs))
            new.paragraphs[i] = new.paragraph(rng, len(new.paragraphs[i].split()))
        return new

    def render(self) -> str:
        stamp = time.strftime
        nav = "".join(f'<li><a href="/s/{i}">{x}</a></li>' for i, x in enumerate(self.nav))
        paragraphs = "\n".join(f"<p>{p}</p>" for p in self.paragraphs)
        related = "".join(f'<li><a href="/a/{i}">{x}</a></li>' for i, x in enumerate(self.related))
        links = " | ".join(f'<a href="/f/{i}">{x}</a>' for i, x in enumerate(self.footer_links))
        updated = stamp("%d %B %Y %H:%M", time.gmtime(self.updated))
        generated = stamp("%A, %d %B %Y at %H:%M:%S", time.gmtime(self.generated))
        return f"""<!DOCTYPE html><html><head><title>{self.headline} - {self.site}</title>
<style>body {{font: 16px serif}} .ad {{color: #999}}</style>
<script>window.dataLayer = []; var started = {self.generated};</script></head>
<body><header><a class="logo" href="/">{self.site}</a><nav><ul>{nav}</ul></nav></header>
<main><article><h1>{self.headline}</h1>
<p class="byline">By {self.site} staff. Updated {updated}</p>
{paragraphs}
</article><aside><h2>Related</h2><ul>{related}</ul></aside></main>
<footer><p>{links}</p><p>&copy; 2025 {self.site}. All rights reserved.</p>
<p class="generated">Page generated {generated} UTC</p>
<div class="ad">Advertisement: {self.ad}</div></footer>
<!-- served by cache node {self.generated % 97} --></body></html>"""


def separation(pages_per_size: int, seed: int) -> None:
    """Print how often each edit counts as a change, by k and threshold."""
    voc = Vocabulary(seed)
    sizes = (2_000, 4_000, 6_000, 8_000, 10_000)
    ks = (1, 2, 3, 4, 5)
    configs = {  # name: (boilerplate tags, normalize digits)
        "defaults (drop nav/footer/aside, digits as 0)": (BOILERPLATE_TAGS, True),
        "plain (all text, digits kept)": ((), False),
    }
    distances: dict[tuple[str, int, int, str], list[int]] = {}
    for size in sizes:
        for i in range(pages_per_size):
            rng = random.Random(seed * 1_000_003 + size * 1_009 + i)
            page = ArticlePage(rng.randrange(2**32), voc, size)
            versions = {edit: page.edited(edit, rng).render() for edit in EDITS}
            original = page.render()
            for name, (tags, digits) in configs.items():
                base_text = html_to_text(original, boilerplate_tags=tags)
                texts = {e: html_to_text(v, boilerplate_tags=tags) for e, v in versions.items()}
                for k in ks:
                    base = fingerprint_text(base_text, k=k, normalize_digits=digits)
                    for edit, text in texts.items():
                        new = fingerprint_text(text, k=k, normalize_digits=digits)
                        distances.setdefault((name, k, size, edit), []).append(hamming(base, new))
    print(
        f"## Which edits count as changes ({pages_per_size} pages per article size, "
        f"article text {sizes[0] // 1000}-{sizes[-1] // 1000} kB)"
    )
    print()
    print(
        "Share of page pairs that `changed()` calls changed. Cosmetic edits should be near "
        "0%, the rewritten paragraph near 100%; *long* = 8-10 kB of article text."
    )
    for name in configs:
        print()
        print(f"### {name}")
        print()
        print(
            "| k | threshold | word, long | word, all | byline time | footer time+ad "
            "| paragraph, all | paragraph, long |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for k in ks:
            for threshold in range(1, 7):
                row = [
                    _share(distances, name, k, sizes, edit, threshold, long_only)
                    for edit, long_only in (
                        ("word", True),
                        ("word", False),
                        ("ts_body", False),
                        ("footer", False),
                        ("para", False),
                        ("para", True),
                    )
                ]
                print(f"| {k} | {threshold} | " + " | ".join(f"{x:.1f}%" for x in row) + " |")


def _share(
    distances: dict[tuple[str, int, int, str], list[int]],
    name: str,
    k: int,
    sizes: Sequence[int],
    edit: str,
    threshold: int,
    long_only: bool,
) -> float:
    found = [
        d > threshold
        for size in sizes
        if size >= 8_000 or not long_only
        for d in distances[(name, k, size, edit)]
    ]
    return 100.0 * sum(found) / len(found)


def _numpy_only(func: Callable[[Any], int]) -> Callable[[Any], int]:
    """``func`` run as if the C extension were not built (fingerprint.py's fallback)."""

    namespace = vars(fp)  # fingerprint.py reads its global _speedups at every call

    def run(item: Any) -> int:
        saved = namespace["_speedups"]
        namespace["_speedups"] = None
        try:
            return func(item)
        finally:
            namespace["_speedups"] = saved

    return run


def _time_pass(func: Callable[[Any], int], inputs: Sequence[Any]) -> float:
    start = time.perf_counter()
    for item in inputs:
        func(item)
    return time.perf_counter() - start


def _describe(values: Sequence[float]) -> str:
    return f"{min(values):,.0f} / {statistics.mean(values):,.0f} / {max(values):,.0f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=60, help="pages to generate (60)")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds (7)")
    parser.add_argument("--seed", type=int, default=20260101, help="page seed")
    parser.add_argument(
        "--separation",
        type=int,
        metavar="N",
        default=0,
        help="instead of timing, print which edits count as changes, N pages per size",
    )
    args = parser.parse_args(argv)
    if args.separation:
        separation(args.separation, args.seed)
        return 0

    voc = Vocabulary(args.seed)
    pages = [make_page(args.seed + i, voc) for i in range(args.pages)]
    page_bytes = [p.encode("utf-8") for p in pages]
    texts = [html_to_text(b) for b in page_bytes]
    full_words = [words(html_to_text(b, boilerplate_tags=())) for b in page_bytes]
    features4 = [shingles(w, 4) for w in full_words]  # (a): every word of the page
    featuresk = [shingles(words(t), DEFAULT_K) for t in texts]

    # Correctness first: MD5 results equal the package's, and fingerprint_html equals
    # the simhash of the shingles it is documented to hash.
    for feats in features4:
        assert simhash_features(feats) == simhash.Simhash(feats).value
    for html, feats in zip(page_bytes, featuresk, strict=True):
        assert fingerprint_html(html, mode="md5") == simhash.Simhash(feats).value
        assert fingerprint_html(html) == simhash_features(feats, mode="fast")

    def fast_features(features: list[str]) -> int:
        return simhash_features(features, mode="fast")

    def fast_html(html: bytes) -> int:
        return fingerprint_html(html)

    built = vars(fp)["_speedups"] is not None
    if built:  # the C extension gives the NumPy code's answers
        for feats, html in zip(features4, page_bytes, strict=True):
            assert fast_features(feats) == _numpy_only(fast_features)(feats)
            assert fast_html(html) == _numpy_only(fast_html)(html)

    def package_features(features: list[str]) -> int:
        return int(simhash.Simhash(features).value)

    def md5_features(features: list[str]) -> int:
        return simhash_features(features)

    def package_pipeline(html: bytes) -> int:
        return int(simhash.Simhash(shingles(words(html_to_text(html)), DEFAULT_K)).value)

    def md5_html(html: bytes) -> int:
        return fingerprint_html(html, mode="md5")

    variants: dict[str, tuple[Callable[[Any], int], Sequence[Any]]] = {
        "a/package": (package_features, features4),
        "a/md5": (md5_features, features4),
        "a/fast": (fast_features, features4),
        "a/fast-numpy": (_numpy_only(fast_features), features4),
        "b/package": (package_pipeline, page_bytes),
        "b/md5": (md5_html, page_bytes),
        "b/fast": (fast_html, page_bytes),
        "b/fast-numpy": (_numpy_only(fast_html), page_bytes),
    }
    if not built:  # the default path is NumPy already
        del variants["a/fast-numpy"], variants["b/fast-numpy"]
    timings: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for name in names:  # warm up caches and the page cache
        _time_pass(*variants[name])
    for round_ in range(args.rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            timings[name].append(len(pages) / _time_pass(*variants[name]))
    rate = {name: statistics.median(values) for name, values in timings.items()}

    sizes = [len(b) / 1000 for b in page_bytes]
    print(
        f"## scrapy_fresh.fingerprint.shingles vs simhash {importlib.metadata.version('simhash')}"
    )
    print()
    print(
        f"{len(pages)} pages, {args.rounds} rounds (median); "
        f"page size min/mean/max {_describe(sizes)} kB; "
        f"(a) word 4-shingles per page {_describe([len(f) for f in features4])}; "
        f"(b) {DEFAULT_K}-shingles of the text without nav/footer/aside "
        f"{_describe([len(f) for f in featuresk])}."
    )
    print(
        f"Machine: {os.cpu_count()} CPUs, {platform.machine()}, {platform.system()}; "
        f"Python {platform.python_version()}, NumPy {np.__version__}, "
        f"lxml {'.'.join(map(str, lxml.etree.LXML_VERSION[:3]))}."
    )
    print(
        "Fast mode by default: "
        + (
            "the C extension scrapy_fresh._speedups (built)."
            if built
            else "NumPy (scrapy_fresh._speedups is not built: no C compiler at install)."
        )
    )
    print()
    print("| variant | pages/s | vs package |")
    print("|---|---:|---:|")
    default = "C extension, default" if built else "NumPy, default: no C extension"
    labels = {
        "a/package": "(a) features: `simhash.Simhash(features).value`",
        "a/md5": "(a) features: `simhash_features(features)` (MD5, identical)",
        "a/fast": f'(a) features: `simhash_features(features, mode="fast")` ({default})',
        "a/fast-numpy": '(a) features: `simhash_features(features, mode="fast")` (NumPy only)',
        "b/package": f"(b) HTML: html_to_text, words, {DEFAULT_K}-shingles, `simhash.Simhash`",
        "b/md5": '(b) HTML: `fingerprint_html(html, mode="md5")` (identical)',
        "b/fast": f"(b) HTML: `fingerprint_html(html)` (fast, {default})",
        "b/fast-numpy": "(b) HTML: `fingerprint_html(html)` (fast, NumPy only)",
    }
    for name in names:
        base = rate[name.split("/")[0] + "/package"]
        print(f"| {labels[name]} | {rate[name]:,.0f} | {rate[name] / base:.2f}x |")
    print()
    goals = [
        (
            "(a) fast hash (default path) >= 10x the package on prebuilt features",
            rate["a/fast"] / rate["a/package"],
            10.0,
        ),
        ("(a) MD5 (package-identical) >= 2x the package", rate["a/md5"] / rate["a/package"], 2.0),
        (
            "(b) raw HTML -> fingerprint (default path) >= 3x the package's pipeline",
            rate["b/fast"] / rate["b/package"],
            3.0,
        ),
    ]
    for label, ratio, goal in goals:
        print(f"{'PASS' if ratio >= goal else 'MISS'}: {label}: {ratio:.2f}x")
    if built:
        print(
            "NumPy only (without the C extension): "
            f"(a) fast {rate['a/fast-numpy'] / rate['a/package']:.2f}x, "
            f"(b) {rate['b/fast-numpy'] / rate['b/package']:.2f}x; "
            f"C over NumPy: (a) {rate['a/fast'] / rate['a/fast-numpy']:.2f}x, "
            f"(b) {rate['b/fast'] / rate['b/fast-numpy']:.2f}x."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
