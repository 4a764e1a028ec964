"""Provider documents from strangers: sitemaps, feeds and headers parse safely, with every
skipped value counted and nothing else lost."""

from __future__ import annotations

import gzip
import time
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_fresh.dates import parse_rfc822, parse_w3c
from scrapy_fresh.providers import (
    Limits,
    header_signals,
    looks_like_document,
    parse_document,
    robots_sitemaps,
)
from scrapy_fresh.providers.feed import SCHEDULE_ANNOUNCEMENTS, SCHEDULE_PROBABILITY
from scrapy_fresh.providers.safexml import TooLarge, gunzip_capped
from scrapy_fresh.providers.sitemap import CHANGEFREQ_PROBABILITY

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z
SITE = "https://example.com"
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*entries: str) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><urlset {NS}>{"".join(entries)}</urlset>'.encode()
    )


def url(loc: str, lastmod: str | None = None, changefreq: str | None = None) -> str:
    parts = [f"<loc>{loc}</loc>"]
    if lastmod is not None:
        parts.append(f"<lastmod>{lastmod}</lastmod>")
    if changefreq is not None:
        parts.append(f"<changefreq>{changefreq}</changefreq>")
    return f"<url>{''.join(parts)}</url>"


# -- sitemaps ---------------------------------------------------------------------------


def test_sitemap_lastmod_and_changefreq_become_signals() -> None:
    body = urlset(
        url(f"{SITE}/a", "2023-11-01T10:00:00+02:00", "daily"),
        url(f"{SITE}/b", "2023-10-01"),
        url(f"{SITE}/c", changefreq="weekly"),
    )
    signals = parse_document(body, f"{SITE}/sitemap.xml", NOW)
    report = signals.report
    assert (report.kind, report.outcome, report.entries) == ("sitemap", "ok", 3)
    past = {(p.url, p.when, p.signal) for p in signals.past}
    assert past == {
        (f"{SITE}/a", parse_w3c("2023-11-01T08:00:00Z"), "sitemap"),
        (f"{SITE}/b", parse_w3c("2023-10-01"), "sitemap"),
    }
    announced = {a.url: a for a in signals.announced}
    assert set(announced) == {f"{SITE}/a", f"{SITE}/c"}
    # daily from the last modification: the first multiple of a day after now
    a = announced[f"{SITE}/a"]
    assert NOW < a.when <= NOW + 86400
    assert (a.when - parse_w3c("2023-11-01T08:00:00Z")) % 86400 == 0  # type: ignore[operator]
    assert a.probability == CHANGEFREQ_PROBABILITY
    assert announced[f"{SITE}/c"].when == NOW + 7 * 86400
    assert not report.skipped


def test_bad_values_are_skipped_one_by_one_and_counted() -> None:
    body = urlset(
        url(f"{SITE}/ok1", "2023-11-01"),
        url(f"{SITE}/baddate", "2023-02-30"),
        url(f"{SITE}/badzone", "2023-11-01T10:00:00+25:00"),
        url(f"{SITE}/future", "2031-01-01"),
        url(f"{SITE}/freq", "2023-11-02", "sometimes"),
        url("ftp://example.com/x", "2023-11-01"),
        url("https://evil.test/x", "2023-11-01"),
        url("", "2023-11-01"),
        url(f"{SITE}/ok2", "2023-11-03T01:02:03.5Z"),
    )
    signals = parse_document(body, f"{SITE}/sitemap.xml", NOW)
    report = signals.report
    assert report.outcome == "ok"
    assert report.entries == 9
    assert dict(report.skipped) == {
        "bad_date": 2,
        "future_date": 1,
        "bad_changefreq": 1,
        "bad_url": 2,
        "other_host": 1,
    }
    assert sorted(p.url for p in signals.past) == [f"{SITE}/freq", f"{SITE}/ok1", f"{SITE}/ok2"]
    ok2 = next(p for p in signals.past if p.url.endswith("ok2"))
    assert ok2.when == parse_w3c("2023-11-03T01:02:03Z") + 0.5  # type: ignore[operator]


def test_sitemap_index_lists_children_with_their_lastmod() -> None:
    body = (
        f"<sitemapindex {NS}><sitemap><loc>{SITE}/s1.xml.gz</loc>"
        f"<lastmod>2023-11-10</lastmod></sitemap><sitemap><loc>{SITE}/s2.xml</loc>"
        "</sitemap></sitemapindex>"
    ).encode()
    signals = parse_document(body, f"{SITE}/index.xml", NOW)
    assert signals.report.kind == "sitemapindex"
    assert signals.sitemaps == [f"{SITE}/s1.xml.gz", f"{SITE}/s2.xml"]
    assert [(p.url, p.when) for p in signals.past] == [
        (f"{SITE}/s1.xml.gz", parse_w3c("2023-11-10"))
    ]


def test_gzip_sitemap_is_read_like_the_plain_one() -> None:
    body = urlset(*(url(f"{SITE}/p{i}", "2023-11-01") for i in range(100)))
    plain = parse_document(body, f"{SITE}/s.xml", NOW)
    packed = parse_document(gzip.compress(body), f"{SITE}/s.xml.gz", NOW)
    assert packed.past == plain.past
    assert len(packed.past) == 100
    assert packed.report.compressed_bytes < packed.report.decompressed_bytes == len(body)


def test_sitemap_with_60k_urls_keeps_the_protocol_limit_and_counts_the_rest() -> None:
    body = urlset(*(url(f"{SITE}/p{i}", "2023-11-01") for i in range(60_000)))
    signals = parse_document(gzip.compress(body), f"{SITE}/big.xml.gz", NOW)
    report = signals.report
    assert report.outcome == "truncated"
    assert report.entries == 60_000
    assert report.skipped["over_limit"] == 10_000
    assert len(signals.past) == 50_000
    assert signals.past[-1].url == f"{SITE}/p49999"
    # a crawler that accepts bigger sitemaps says so
    bigger = parse_document(body, f"{SITE}/big.xml", NOW, Limits(max_entries=60_000))
    assert (bigger.report.outcome, len(bigger.past)) == ("ok", 60_000)


# -- hostile input ------------------------------------------------------------------------


def _billion_laughs(root: str = "urlset") -> bytes:
    entities = '<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{i} "{(f"&lol{i - 1};" if i > 1 else "&lol;") * 10}">' for i in range(1, 10)
    )
    return (
        f'<?xml version="1.0"?><!DOCTYPE {root} [{entities}]><{root} {NS}>'
        f"<url><loc>&lol9;</loc><lastmod>2023-11-01</lastmod></url></{root}>"
    ).encode()


def test_billion_laughs_is_refused_without_expanding_anything() -> None:
    started = time.process_time()
    signals = parse_document(_billion_laughs(), f"{SITE}/s.xml", NOW)
    assert time.process_time() - started < 5  # generous: an expansion would take minutes
    assert signals.report.outcome == "entities_refused"
    assert "entities" in signals.report.error
    assert len(signals) == 0


@pytest.mark.parametrize(
    "doctype",
    [
        '<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>',
        '<!DOCTYPE urlset [<!ENTITY % p SYSTEM "http://127.0.0.1:9/x.dtd"> %p;]>',
    ],
)
def test_external_entities_are_refused(doctype: str) -> None:
    body = (
        f'<?xml version="1.0"?>{doctype}<urlset {NS}><url><loc>{SITE}/&xxe;</loc></url></urlset>'
    )
    signals = parse_document(body.encode(), f"{SITE}/s.xml", NOW)
    assert signals.report.outcome == "entities_refused"
    assert len(signals) == 0


def test_entity_reference_without_declaration_breaks_off_but_keeps_what_came_before() -> None:
    body = urlset(url(f"{SITE}/a", "2023-11-01"), url(f"{SITE}/&unknown;", "2023-11-01"))
    signals = parse_document(body, f"{SITE}/s.xml", NOW)
    assert signals.report.outcome == "malformed"
    assert [p.url for p in signals.past] == [f"{SITE}/a"]


def test_external_dtd_is_not_fetched() -> None:
    body = (
        b'<?xml version="1.0"?><!DOCTYPE rss SYSTEM "http://127.0.0.1:9/rss-0.91.dtd">'
        b"<rss><channel><ttl>60</ttl></channel></rss>"
    )
    signals = parse_document(body, f"{SITE}/feed", NOW)
    assert signals.report.outcome == "ok"
    assert [n.when for n in signals.not_before] == [NOW + 3600]


def _gzip_bomb(inflated: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    head = urlset(url(f"{SITE}/a", "2023-11-01"))[: -len(b"</urlset>")]
    parts = [packer.compress(head)]
    zeros = b" " * (1 << 20)
    parts.extend(packer.compress(zeros) for _ in range(inflated >> 20))
    parts.append(packer.flush())
    return b"".join(parts)


def test_gzip_bomb_stops_at_the_decompressed_cap_and_keeps_nothing() -> None:
    bomb = _gzip_bomb(200 << 20)  # 200 MiB of spaces after one real entry
    assert len(bomb) < 1 << 20
    limits = Limits(max_decompressed_bytes=8 << 20)
    signals = parse_document(bomb, f"{SITE}/s.xml.gz", NOW, limits)
    report = signals.report
    assert report.outcome == "too_large"
    assert "8388608" in report.error
    assert report.decompressed_bytes <= limits.max_decompressed_bytes
    assert len(signals) == 0


def test_compressed_size_limit_refuses_before_reading() -> None:
    body = urlset(*(url(f"{SITE}/p{i}", "2023-11-01") for i in range(50)))
    signals = parse_document(body, f"{SITE}/s.xml", NOW, Limits(max_compressed_bytes=100))
    assert signals.report.outcome == "too_large"
    assert signals.report.decompressed_bytes == 0
    assert len(signals) == 0


def test_gunzip_capped_handles_members_and_refuses_truncation() -> None:
    two = gzip.compress(b"abc") + gzip.compress(b"def")
    assert b"".join(gunzip_capped(two, 10)) == b"abcdef"
    with pytest.raises(TooLarge):
        b"".join(gunzip_capped(two, 5))
    with pytest.raises(zlib.error):
        b"".join(gunzip_capped(gzip.compress(b"x" * 1000)[:20], 10_000))


@pytest.mark.parametrize(
    ("body", "outcome"),
    [
        (b"", "not_xml"),
        (b"\x00\xff\xfe garbage \x01\x02", "not_xml"),
        (b"<html><body>hello</body></html>", "unknown_document"),
        (b"\x1f\x8b\x08\x00garbage", "not_xml"),
        (b"<urlset><url><loc>https://example.com/a</loc></url><url><loc>https://ex", "malformed"),
    ],
)
def test_garbage_gives_a_clear_outcome(body: bytes, outcome: str) -> None:
    signals = parse_document(body, f"{SITE}/s.xml", NOW)
    assert signals.report.outcome == outcome
    assert signals.report.error


def test_mis_encoded_bytes_are_replaced_and_counted_without_losing_entries() -> None:
    body = urlset(
        url(f"{SITE}/a", "2023-11-01"),
        url(f"{SITE}/caf\u00e9", "2023-11-02"),
        url(f"{SITE}/b", "2023-11-03"),
    )
    body = body.replace("caf\u00e9".encode(), b"caf\xe9")  # a latin-1 byte in UTF-8
    assert b"caf\xe9" in body
    signals = parse_document(body, f"{SITE}/s.xml", NOW)
    assert signals.report.outcome == "ok"
    assert signals.report.skipped["bad_bytes"] == 1
    assert len(signals.past) == 3


def test_latin1_declared_documents_are_decoded_as_declared() -> None:
    body = (
        '<?xml version="1.0" encoding="ISO-8859-1"?>'
        f"<urlset {NS}><url><loc>{SITE}/caf\xe9</loc><lastmod>2023-11-01</lastmod></url></urlset>"
    ).encode("latin-1")
    signals = parse_document(body, f"{SITE}/s.xml", NOW)
    # "é" read as declared, then UTF-8 percent-encoded as Scrapy will fetch it
    assert [p.url for p in signals.past] == [f"{SITE}/caf%C3%A9"]
    assert not signals.report.skipped


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes_give_a_report_never_an_exception(body: bytes) -> None:
    signals = parse_document(body, f"{SITE}/s.xml", NOW)
    assert signals.report.outcome in {
        "ok",
        "malformed",
        "not_xml",
        "unknown_document",
        "truncated",
        "too_large",
        "entities_refused",
    }


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_date_parsers_never_raise(text: str) -> None:
    for parse in (parse_w3c, parse_rfc822):
        value = parse(text)
        assert value is None or value >= 0


# -- feeds --------------------------------------------------------------------------------

RSS = f"""<?xml version="1.0"?>
<rss version="2.0" xmlns:sy="http://purl.org/rss/1.0/modules/syndication/">
<channel><title>t</title><link>{SITE}/</link>
<lastBuildDate>Tue, 14 Nov 2023 20:00:00 GMT</lastBuildDate>
<ttl>30</ttl>
<skipHours><hour>0</hour><hour>1</hour><hour>banana</hour></skipHours>
<skipDays><day>Sunday</day><day>Caturday</day></skipDays>
<sy:updatePeriod>hourly</sy:updatePeriod><sy:updateFrequency>2</sy:updateFrequency>
<sy:updateBase>2000-01-01T00:00+00:00</sy:updateBase>
<item><link>{SITE}/n1</link><pubDate>Tue, 14 Nov 2023 19:00:00 +0100</pubDate></item>
<item><link>{SITE}/n2</link><pubDate>not a date</pubDate></item>
<item><guid>{SITE}/n3</guid><pubDate>Mon, 13 Nov 2023 10:00:00 EST</pubDate></item>
<item><link>https://other.test/x</link><pubDate>Mon, 13 Nov 2023 10:00:00 GMT</pubDate></item>
</channel></rss>"""


def test_rss_dates_schedule_ttl_and_skip_windows() -> None:
    signals = parse_document(RSS.encode(), f"{SITE}/feed.xml", NOW)
    report = signals.report
    assert (report.kind, report.outcome, report.entries) == ("rss", "ok", 4)
    assert dict(report.skipped) == {"bad_date": 1, "bad_number": 1, "bad_day": 1, "other_host": 1}
    past = {p.url: p.when for p in signals.past}
    assert past[f"{SITE}/n1"] == parse_rfc822("Tue, 14 Nov 2023 18:00:00 GMT")
    assert past[f"{SITE}/n3"] == parse_rfc822("Mon, 13 Nov 2023 15:00:00 GMT")
    assert past[f"{SITE}/feed.xml"] == parse_rfc822("Tue, 14 Nov 2023 20:00:00 GMT")
    assert [n.when for n in signals.not_before] == [NOW + 1800]
    (window,) = signals.quiet
    assert (window.hours, window.days) == (frozenset({0, 1}), frozenset({6}))
    # every half hour from 2000-01-01T00:00Z, the next ones after now
    times = [a.when for a in signals.announced]
    assert len(times) == SCHEDULE_ANNOUNCEMENTS
    assert all(t > NOW and t % 1800 == 0 for t in times)
    assert times[0] - NOW <= 1800
    assert {a.probability for a in signals.announced} == {SCHEDULE_PROBABILITY}


def test_atom_entries_use_updated_then_published() -> None:
    body = f"""<feed xmlns="http://www.w3.org/2005/Atom"><updated>2023-11-14T12:00:00Z</updated>
    <entry><link rel="alternate" href="/e1"/><link rel="edit" href="/edit/e1"/>
      <updated>2023-11-14T11:00:00Z</updated><published>2023-11-01T00:00:00Z</published></entry>
    <entry><link href="{SITE}/e2"/><published>2023-11-13T00:00:00-05:00</published></entry>
    <entry><link href="{SITE}/e3"/><updated>garbage</updated></entry>
    </feed>""".encode()
    signals = parse_document(body, f"{SITE}/atom.xml", NOW)
    assert signals.report.kind == "atom"
    past = {p.url: p.when for p in signals.past}
    assert past == {
        f"{SITE}/e1": parse_w3c("2023-11-14T11:00:00Z"),
        f"{SITE}/e2": parse_w3c("2023-11-13T05:00:00Z"),
        f"{SITE}/atom.xml": parse_w3c("2023-11-14T12:00:00Z"),
    }
    assert signals.report.skipped["bad_date"] == 1


def test_rss1_rdf_with_syndication_module() -> None:
    body = f"""<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
      xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/"
      xmlns:sy="http://purl.org/rss/1.0/modules/syndication/">
    <channel><title>t</title><sy:updatePeriod>daily</sy:updatePeriod></channel>
    <item><link>{SITE}/r1</link><dc:date>2023-11-14T00:00:00Z</dc:date></item>
    </rdf:RDF>""".encode()
    signals = parse_document(body, f"{SITE}/index.rdf", NOW)
    assert signals.report.kind == "rdf"
    assert {p.url for p in signals.past} == {f"{SITE}/r1", f"{SITE}/index.rdf"}
    times = [a.when for a in signals.announced]
    assert times[0] == (NOW // 86400 + 1) * 86400
    assert times[1] - times[0] == 86400


def test_bad_schedule_values_fall_back_or_are_skipped() -> None:
    body = b"<rss><channel><sy:updatePeriod xmlns:sy='x'>fortnightly</sy:updatePeriod></channel></rss>"
    signals = parse_document(body, f"{SITE}/f", NOW)
    assert signals.announced == []
    assert signals.report.skipped["bad_update_period"] == 1
    body = (
        b"<rss><channel><sy:updateFrequency xmlns:sy='x'>-3</sy:updateFrequency></channel></rss>"
    )
    signals = parse_document(body, f"{SITE}/f", NOW)
    assert signals.report.skipped["bad_number"] == 1
    assert [a.when for a in signals.announced][1] - signals.announced[0].when == 86400


# -- headers, sniffing, robots ------------------------------------------------------------


def test_header_signals_count_bad_values() -> None:
    signals = header_signals(
        {"last-modified": "yesterday", "cache-control": "max-age=ten"}, f"{SITE}/", NOW
    )
    assert len(signals) == 0
    assert dict(signals.report.skipped) == {"bad_date": 1, "bad_number": 1}
    expires = header_signals(
        {"expires": "Tue, 14 Nov 2023 23:13:20 GMT", "date": "Tue, 14 Nov 2023 22:13:20 GMT"},
        f"{SITE}/",
        NOW + 5,  # our clock is 5 s ahead of the server's: the lifetime is what counts
    )
    assert [n.when for n in expires.not_before] == [NOW + 5 + 3600]
    assert header_signals({"expires": "0"}, f"{SITE}/", NOW).report.skipped["bad_date"] == 1
    assert header_signals({"cache-control": "no-store, max-age=60"}, SITE, NOW).not_before == []
    future = header_signals({"last-modified": "Tue, 14 Nov 2030 23:13:20 GMT"}, SITE, NOW)
    assert future.past == []
    assert future.report.skipped["future_date"] == 1


def test_sniffing() -> None:
    assert looks_like_document(urlset())
    assert looks_like_document(RSS.encode(), "application/rss+xml")
    assert looks_like_document(gzip.compress(urlset()), "application/x-gzip")
    assert not looks_like_document(gzip.compress(b"x"), "image/png")
    assert not looks_like_document(b"<html><p>rss feed</p></html>", "text/html")


def test_robots_sitemap_lines() -> None:
    text = "User-agent: *\nDisallow: /x\nSITEMAP: https://cdn.test/s.xml # cross-submitted\n"
    assert robots_sitemaps(text, f"{SITE}/robots.txt") == ["https://cdn.test/s.xml"]
