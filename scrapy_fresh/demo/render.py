"""Markup of the demo site: HTML pages, RSS 2.0, Atom, sitemap.xml and robots.txt.

Content is a pure function of (seed, path, version): a change rewrites one paragraph
(the next one, round robin) and, for news and blog, the "updated" date. Every page
carries the same navigation and sidebar boilerplate, so that pages weigh what real
ones do (about 10 KiB) and a ``304`` costs a few hundred bytes against them.
"""

from __future__ import annotations

import random
from datetime import datetime, timezone
from email.utils import formatdate
from html import escape
from typing import TYPE_CHECKING

from scrapy_fresh.demo.model import NEWS_SLOT_BASE, NEWS_SLOT_SECS
from scrapy_fresh.demo.words import WORDS

if TYPE_CHECKING:
    from scrapy_fresh.demo.model import DemoSite, PageSpec

__all__ = ["http_date", "iso_date", "render"]

ADS = ("Buy copper kettles", "Visit the harbor", "Try velvet pillows", "Rent a lantern")
PARAGRAPHS = 6
WORDS_PER_PARAGRAPH = 60


def http_date(t: float) -> str:
    """An HTTP date (RFC 9110 IMF-fixdate) for Unix time ``t``."""
    return formatdate(t, usegmt=True)


def iso_date(t: float) -> str:
    """An ISO 8601 / W3C date-time in UTC, as sitemaps and Atom use."""
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def _paragraph(seed: int, path: str, i: int, touched: int) -> str:
    rng = random.Random(f"{seed}:{path}:{i}:{touched}")
    return " ".join(rng.choice(WORDS) for _ in range(WORDS_PER_PARAGRAPH)).capitalize() + "."


def paragraphs(seed: int, path: str, version: int) -> list[str]:
    """The article text of ``path`` at ``version``: change k rewrites paragraph (k-1) mod 6.

    >>> a, b = paragraphs(1, "/x", 0), paragraphs(1, "/x", 1)
    >>> [i for i in range(6) if a[i] != b[i]]
    [0]
    """
    out = []
    for i in range(PARAGRAPHS):
        touched = (version - i - 1) // PARAGRAPHS + 1 if version >= i + 1 else 0
        out.append(_paragraph(seed, path, i, touched))
    return out


def _boilerplate(seed: int, section: str) -> str:
    rng = random.Random(f"{seed}:{section}:sidebar")
    links = "".join(
        f'<li><a href="/{section}/">{" ".join(rng.choice(WORDS) for _ in range(5))}</a>'
        f"<p>{' '.join(rng.choice(WORDS) for _ in range(18))}</p></li>"
        for _ in range(40)
    )
    return f'<aside class="sidebar"><h2>More from {section}</h2><ul>{links}</ul></aside>'


_STYLE = (
    "<style>body{font-family:sans-serif;margin:0 auto;max-width:60em}nav a{margin:0 1em}"
    "aside{font-size:small;color:#555}footer{border-top:1px solid #ccc}</style>"
)
_NAV = (
    '<nav><a href="/">Home</a><a href="/news/">News</a><a href="/blog/">Blog</a>'
    '<a href="/docs/">Docs</a></nav>'
)


def _html(title: str, main: str, aside: str, footer: str) -> bytes:
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"{_STYLE}</head><body>{_NAV}<main>{main}</main>{aside}"
        f"<footer>{footer}</footer></body></html>"
    ).encode()


def _article(site: DemoSite, spec: PageSpec, at: float) -> bytes:
    version = site.version(spec.path, at)
    paras = "".join(f"<p>{p}</p>" for p in paragraphs(site.seed, spec.path, version))
    dated = spec.section in ("news", "blog")
    date = ""
    if dated:
        when = site.modified(spec.path, at)
        date = f'<time class="updated" datetime="{iso_date(when)}">{http_date(when)}</time>'
    main = (
        f'<article><h1 class="title">{escape(spec.title)}</h1>{date}'
        f'<div class="body">{paras}</div></article>'
    )
    footer = "Demo site for scrapy_fresh."
    if spec.cosmetic:
        rng = random.Random()
        footer += f" Rendered {datetime.now(timezone.utc).isoformat()}. Ad: {rng.choice(ADS)}"
    return _html(spec.title, main, _boilerplate(site.seed, spec.section), footer)


def _listing(site: DemoSite, spec: PageSpec, at: float) -> bytes:
    items = []
    for path in spec.members:
        member = site.pages[path]
        date = ""
        if spec.section != "docs":
            date = f" <time>{iso_date(site.modified(path, at))}</time>"
        items.append(f'<li><a href="{path}">{escape(member.title)}</a>{date}</li>')
    extra = '<p><a href="/private/admin">Admin</a></p>' if spec.section == "docs" else ""
    main = f'<h1 class="title">{escape(spec.title)}</h1><ul class="index">{"".join(items)}</ul>{extra}'
    return _html(spec.title, main, _boilerplate(site.seed, spec.section), "Demo site.")


def _rss(site: DemoSite, spec: PageSpec, at: float, base: str) -> bytes:
    items = []
    for path in spec.members:
        member = site.pages[path]
        items.append(
            f"<item><title>{escape(member.title)}</title><link>{base}{path}</link>"
            f"<guid>{base}{path}</guid><pubDate>{http_date(site.modified(path, at))}</pubDate>"
            f"<description>{escape(paragraphs(site.seed, path, site.version(path, at))[0][:200])}"
            "</description></item>"
        )
    per_hour = round(3600 / NEWS_SLOT_SECS)
    return (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<rss version="2.0" xmlns:sy="http://purl.org/rss/1.0/modules/syndication/">'
        f"<channel><title>{escape(spec.title)}</title><link>{base}/news/</link>"
        "<description>Demo news</description>"
        f"<lastBuildDate>{http_date(site.modified(spec.path, at))}</lastBuildDate>"
        f"<ttl>{round(NEWS_SLOT_SECS / 60)}</ttl>"
        f"<sy:updatePeriod>hourly</sy:updatePeriod><sy:updateFrequency>{per_hour}"
        f"</sy:updateFrequency><sy:updateBase>{iso_date(NEWS_SLOT_BASE)}</sy:updateBase>"
        f"{''.join(items)}</channel></rss>"
    ).encode()


def _atom(site: DemoSite, spec: PageSpec, at: float, base: str) -> bytes:
    entries = []
    for path in spec.members:
        member = site.pages[path]
        entries.append(
            f'<entry><title>{escape(member.title)}</title><link href="{base}{path}"/>'
            f"<id>{base}{path}</id><updated>{iso_date(site.modified(path, at))}</updated></entry>"
        )
    return (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        f"<title>{escape(spec.title)}</title><id>{base}/blog/</id>"
        f"<updated>{iso_date(site.modified(spec.path, at))}</updated>{''.join(entries)}</feed>"
    ).encode()


def _sitemap(site: DemoSite, spec: PageSpec, at: float, base: str) -> bytes:
    urls = "".join(
        f"<url><loc>{base}{path}</loc><lastmod>{iso_date(site.modified(path, at))}</lastmod></url>"
        for path in spec.members
    )
    return (
        '<?xml version="1.0" encoding="utf-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    ).encode()


def robots(site: DemoSite, base: str) -> bytes:
    lines = ["User-agent: *", "Disallow: /private/"]
    if site.crawl_delay is not None:
        lines.append(f"Crawl-delay: {site.crawl_delay:g}")
    lines.append(f"Sitemap: {base}/sitemap.xml")
    return ("\n".join(lines) + "\n").encode()


def home(site: DemoSite) -> bytes:
    main = (
        '<h1 class="title">scrapy_fresh demo site</h1><ul>'
        '<li><a href="/news/">News</a> (RSS: <a href="/news/feed.rss">feed.rss</a>)</li>'
        '<li><a href="/blog/">Blog</a> (Atom: <a href="/blog/atom.xml">atom.xml</a>)</li>'
        '<li><a href="/docs/">Docs</a></li></ul>'
    )
    return _html("scrapy_fresh demo", main, "", "Demo site.")


def render(site: DemoSite, spec: PageSpec, at: float, base: str) -> tuple[bytes, str]:
    """The body and content type of ``spec`` as of ``at``; ``base`` is the site URL."""
    if spec.kind == "feed" and spec.section == "news":
        return _rss(site, spec, at, base), "application/rss+xml; charset=utf-8"
    if spec.kind == "feed":
        return _atom(site, spec, at, base), "application/atom+xml; charset=utf-8"
    if spec.kind == "sitemap":
        return _sitemap(site, spec, at, base), "application/xml; charset=utf-8"
    if spec.kind == "index":
        return _listing(site, spec, at), "text/html; charset=utf-8"
    return _article(site, spec, at), "text/html; charset=utf-8"
