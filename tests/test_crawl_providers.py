"""Real crawls against a local news site that publishes update signals (tests/provider_server.py).

Each crawl runs in a subprocess (tests/crawl_runner.py) with the add-on; later cycles run
with a shifted clock, as cron would start them.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from scrapy_fresh.keys import url_key
from scrapy_fresh.policy.trust import TrustRecord, trust_score
from scrapy_fresh.providers.ledger import QUIET_NAMESPACE, QuietClaim, iter_trust
from scrapy_fresh.store.base import PageState, Provider
from scrapy_fresh.store.sqlite import SQLiteStore

pytestmark = pytest.mark.slow


def _server_module() -> ModuleType:
    name = "fresh_provider_server"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).with_name("provider_server.py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


news = _server_module()
ARTICLES = [f"/a/{n}" for n in range(5)]
BYPASS = {"fresh_enabled": False}


def settings(db: Path, **extra: Any) -> dict[str, Any]:
    return {
        "ADDONS": {"scrapy_fresh.Addon": 0},
        "FRESH_SQLITE_PATH": str(db),
        "FRESH_VISIT_LOG": "",
        "LOG_LEVEL": "INFO",
        **extra,
    }


def records(db: Path) -> dict[str, PageState]:
    store = SQLiteStore(str(db))
    try:
        return {"/" + s.url.split("/", 3)[3]: s for s in store.iterate()}
    finally:
        store.close()


def trust(db: Path) -> dict[tuple[str, str], Any]:
    store = SQLiteStore(str(db))
    try:
        return {(t.kind, t.host): t for t in iter_trust(store)}
    finally:
        store.close()


def start(
    server: Any, *paths: str, callback: str = "parse_item", meta: Any = None
) -> list[dict[str, Any]]:
    return [{"url": server.url(p), "callback": callback, "meta": meta or {}} for p in paths]


def test_honest_sitemap_makes_changed_pages_due_and_earns_trust(
    crawl: Any, tmp_path: Path
) -> None:
    db = tmp_path / "s.sqlite"
    site = news.NewsSite()
    with news.NewsServer(site) as server:
        first = crawl(
            {
                "settings": settings(db),
                "start": [
                    *start(server, "/sitemap.xml", callback="parse_noitem"),
                    *start(server, *ARTICLES),
                ],
            },
            tmp_path / "c1",
        )
        assert first.stat("fresh/new") == 6
        after1 = records(db)
        # Last-Modified and sitemap lastmod: every article is smart, without annotation
        assert {after1[p].provider for p in ARTICLES} == {Provider.SMART}
        assert all(after1[p].past_updates for p in ARTICLES)
        assert first.stat("fresh/providers/documents/sitemap") == 1
        time.sleep(1.1)
        site.change("/a/1")
        site.change("/a/3")
        # 60 s later (no article is due by the refresh rule: one day): the spider reads
        # its sitemap again (a sitemap it reads is checked every run, crawl/documents.py)
        second = crawl(
            {
                "settings": settings(db),
                "clock_offset": 60.0,
                "start": start(server, "/sitemap.xml", callback="parse_noitem"),
            },
            tmp_path / "c2",
        )
        assert second.stat("fresh/requests/refresh") == 1  # the sitemap, nothing else
        after2 = records(db)
        due = sorted(p for p in ARTICLES if after2[p].next_due <= time.time() + 60)
        assert due == ["/a/1", "/a/3"]
        assert second.stat("fresh/providers/due_now") == 2
        # the next cycle fetches exactly those two, finds them changed, trusts the sitemap
        before = {p: site.requests(p) for p in ARTICLES}
        third = crawl(
            {"settings": settings(db), "clock_offset": 120.0, "start": []}, tmp_path / "c3"
        )
        fetched = sorted(p for p in ARTICLES if site.requests(p) > before[p])
        assert fetched == ["/a/1", "/a/3"]
        assert third.stat("fresh/changed") == 2
        assert third.stat("fresh/trust/confirmed") >= 2
        assert third.stat("fresh/trust/refuted") == 0
    ledger = trust(db)
    host = f"127.0.0.1:{server.port}"
    assert not ledger[("sitemap", host)].record.demoted
    # one observation per read of the sitemap: each of the three runs checks it
    assert ledger[("sitemap", host)].record.observations == 3
    # trust earned: above the prior (a change the host's pages make anyway counts less)
    assert trust_score(ledger[("sitemap", host)].record) > trust_score(TrustRecord())


def test_lying_sitemap_is_demoted_and_stops_steering_the_crawl(crawl: Any, tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    site = news.NewsSite(lie=True)  # every lastmod is "now", nothing ever changes
    with news.NewsServer(site) as server:
        host = f"127.0.0.1:{server.port}"
        crawl({"settings": settings(db), "start": start(server, *ARTICLES)}, tmp_path / "c1")
        time.sleep(1.1)
        crawl(
            {
                "settings": settings(db),
                "clock_offset": 60.0,
                "start": start(server, "/sitemap.xml", callback="parse_noitem", meta=BYPASS),
            },
            tmp_path / "c2",
        )
        after2 = records(db)
        assert all(after2[p].next_due <= time.time() + 60 for p in ARTICLES)  # believed
        third = crawl(
            {"settings": settings(db), "clock_offset": 120.0, "start": []}, tmp_path / "c3"
        )
        assert third.stat("fresh/unchanged") == 5
        assert third.stat("fresh/trust/refuted") == 5
        assert third.stat("fresh/trust/demoted") == 1
        assert "sitemap signals of 127.0.0.1" in third.log
        assert trust(db)[("sitemap", host)].record.demoted
        # the lie goes on: it is recorded and checked, but no page is made due by it
        time.sleep(1.1)
        fourth = crawl(
            {
                "settings": settings(db),
                "clock_offset": 180.0,
                "start": start(server, "/sitemap.xml", callback="parse_noitem", meta=BYPASS),
            },
            tmp_path / "c4",
        )
        assert fourth.stat("fresh/providers/untrusted_claims") == 5
        assert fourth.stat("fresh/providers/due_now") == 0
        after4 = records(db)
        assert all(after4[p].next_due > time.time() + 3600 for p in ARTICLES)
        assert {after4[p].provider for p in ARTICLES} == {Provider.SMART}  # Last-Modified


def test_feed_schedule_makes_the_feed_super_and_due_after_the_announced_update(
    crawl: Any, tmp_path: Path
) -> None:
    db = tmp_path / "s.sqlite"
    site = news.NewsSite(sy_period="hourly", ttl_minutes=10)
    with news.NewsServer(site) as server:
        result = crawl(
            {
                "settings": settings(db),
                "start": [
                    *start(server, "/feed.xml", callback="parse_noitem"),
                    *start(server, *ARTICLES),
                ],
            },
            tmp_path / "c1",
        )
        now = time.time()
        assert result.stat("fresh/providers/documents/rss") == 1
        feed = records(db)["/feed.xml"]
        assert feed.provider is Provider.SUPER
        upcoming = [t for t, _ in feed.future_updates]
        assert len(upcoming) == 3
        assert upcoming[0] % 3600 == 0
        # due at the first slot after the next full hour, not in a day; never before the ttl
        assert feed.next_due == pytest.approx(max(upcoming[0] + 1, feed.last_crawl + 600))
        assert feed.next_due < now + 3602
        # the items' pubDates are past updates of the articles
        for path in ARTICLES:
            article = records(db)[path]
            assert int(site.articles[path].modified) in {int(t) for t in article.past_updates}


def test_spider_meta_schedule_and_updates_and_fixed_levels(crawl: Any, tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    site = news.NewsSite()
    now = time.time()
    with news.NewsServer(site) as server:
        schedule = {"fresh_schedule": [[now + 900, 0.9], [now - 5, 0.9], ["soon", 2]]}
        fixed = {"fresh_schedule": [[now + 900, 0.9]], "fresh_provider": "normal"}
        result = crawl(
            {
                "settings": settings(db, FRESH_PROVIDERS={"localhost": "smart"}),
                "start": [
                    *start(server, "/a/0", meta=schedule),
                    *start(server, "/a/1", meta=fixed),
                ],
            },
            tmp_path / "c1",
        )
        assert result.stat("fresh/providers/skipped/bad_meta") == 1
        got = records(db)
        assert got["/a/0"].provider is Provider.SUPER
        assert [t for t, _ in got["/a/0"].future_updates] == [pytest.approx(now + 900)]
        assert got["/a/0"].next_due == pytest.approx(now + 901)
        # fixed by the request: the level stays, and the slot rule (super only) is not used
        assert got["/a/1"].provider is Provider.NORMAL
        assert got["/a/1"].next_due > now + 3600


def test_autodetect_off_keeps_pages_normal(crawl: Any, tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    site = news.NewsSite(sy_period="hourly")
    with news.NewsServer(site) as server:
        crawl(
            {
                "settings": settings(db, FRESH_PROVIDER_AUTODETECT=False),
                "start": [
                    *start(server, "/feed.xml", callback="parse_noitem"),
                    *start(server, *ARTICLES),
                ],
            },
            tmp_path / "c1",
        )
    got = records(db)
    assert {s.provider for s in got.values()} == {Provider.NORMAL}
    assert got["/feed.xml"].future_updates  # the data is kept all the same


def test_hostile_documents_in_a_crawl_are_refused_and_counted(crawl: Any, tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    site = news.NewsSite(bomb_bytes=40 << 20)
    with news.NewsServer(site) as server:
        result = crawl(
            {
                "settings": settings(db, FRESH_PROVIDER_MAX_INFLATED_BYTES=4 << 20),
                "start": [
                    *start(
                        server,
                        "/bomb.xml.gz",
                        "/laughs.xml",
                        "/garbage.xml",
                        "/sitemap_index.xml",
                        "/sitemap.xml.gz",
                        callback="parse_noitem",
                    ),
                    *start(server, "/a/0"),
                ],
            },
            tmp_path / "c1",
        )
    assert result.stat("fresh/providers/outcome/too_large") == 1
    assert result.stat("fresh/providers/outcome/entities_refused") == 1
    assert result.stat("fresh/providers/documents/sitemapindex") == 1
    assert result.stat("fresh/providers/documents/sitemap") == 2  # the gzip one + the bomb
    assert "too_large provider document" in result.log
    assert result.stat("fresh/new") == 6  # every page is still judged and recorded
    got = records(db)
    # the gzip sitemap's lastmods reached the article fetched in the same run
    assert int(site.articles["/a/0"].modified) in {int(t) for t in got["/a/0"].past_updates}
    assert url_key(server.url("/a/0")) == got["/a/0"].key


def test_pushed_notification_gets_the_page_fetched_in_the_next_cycle(
    crawl: Any, tmp_path: Path
) -> None:
    from scrapy_fresh.notify.record import record_changes

    db = tmp_path / "s.sqlite"
    site = news.NewsSite()
    with news.NewsServer(site) as server:
        crawl({"settings": settings(db), "start": start(server, *ARTICLES)}, tmp_path / "c1")
        time.sleep(1.1)
        site.change("/a/2")
        store = SQLiteStore(str(db))
        try:
            result = record_changes(store, [server.url("/a/2")])
        finally:
            store.close()
        assert result.updated == [server.url("/a/2")]
        # a fetch in the second of the change would find its Last-Modified in the same
        # second as the answer (fresh/validators_same_second): no date to judge it by
        time.sleep(1.1)
        before = {p: site.requests(p) for p in ARTICLES}
        second = crawl(
            {"settings": settings(db), "clock_offset": 60.0, "start": []}, tmp_path / "c2"
        )
        assert sorted(p for p in ARTICLES if site.requests(p) > before[p]) == ["/a/2"]
        assert second.stat("fresh/changed") == 1
        # the push and Last-Modified (each kind's record shown if one is missing)
        assert second.stat("fresh/trust/confirmed") == 2, (
            {k: v for k, v in second.stats.items() if k.startswith("fresh/")},
            {k: v.record for k, v in trust(db).items()},
            records(db)["/a/2"],
        )
    ledger = trust(db)
    host = f"127.0.0.1:{server.port}"
    assert ledger[("push", host)].record.observations == 1
    assert ledger[("http-lastmod", host)].record.confirmed > 0


WEEK = 7 * 86400.0


def test_lying_max_age_is_judged_demoted_and_pages_fetched_at_their_own_rate(
    crawl: Any, tmp_path: Path
) -> None:
    """Every article says ``Cache-Control: max-age`` of a week, and changes within a day.
    Followed to the letter the claim would hide itself (the pages next seen a week
    later); a host whose quiet claims were never judged defers nothing, so the pages are
    fetched at their own due time, inside the claimed week, and the changes found break
    the claims: the host's quiet claims are demoted and the pages keep their own rate."""
    db = tmp_path / "s.sqlite"
    site = news.NewsSite(max_age=int(WEEK))
    with news.NewsServer(site) as server:
        host = f"127.0.0.1:{server.port}"
        first = crawl(
            {"settings": settings(db), "start": start(server, *ARTICLES)}, tmp_path / "c1"
        )
        assert first.stat("fresh/providers/quiet/claims") == 5
        assert first.stat("fresh/providers/quiet/deferred") == 0
        after1 = records(db)
        for path in ARTICLES:  # due at their own time (a day), not in a week
            state = after1[path]
            assert state.next_due == pytest.approx(state.last_crawl + state.refresh_secs)
            assert state.next_due < state.last_crawl + 2 * 86400
        time.sleep(1.1)
        for path in ARTICLES:
            site.change(path)  # inside the week the answers promised
        second = crawl(
            {"settings": settings(db), "clock_offset": 86400.0 + 60, "start": []},
            tmp_path / "c2",
        )
        assert second.stat("fresh/changed") == 5  # fetched at their own due time
        assert second.stat("fresh/trust/quiet/broken") == 5
        assert second.stat("fresh/trust/quiet/kept") == 0
        assert second.stat("fresh/trust/quiet/demoted") == 1
        assert f"quiet claims of {host}" in second.log
        assert trust(db)[("cache", host)].record.demoted
        after2 = records(db)
        for path in ARTICLES:  # the host still says "a week": its pages keep their own rate
            state = after2[path]
            assert state.next_due == pytest.approx(state.last_crawl + state.refresh_secs)
            assert state.next_due < state.last_crawl + 86400
        # the next cycle at their own due time fetches them again
        due_at = max(after2[path].next_due for path in ARTICLES)
        before = {path: site.requests(path) for path in ARTICLES}
        third = crawl(
            {"settings": settings(db), "clock_offset": due_at - time.time() + 60, "start": []},
            tmp_path / "c3",
        )
        assert all(site.requests(path) == before[path] + 1 for path in ARTICLES)
        assert third.stat("fresh/providers/quiet/deferred") == 0


def test_a_304_answer_brings_its_own_max_age(crawl: Any, tmp_path: Path) -> None:
    """A 304 carries the copy's new lifetime (RFC 9111, Section 4.3.4): the quiet claim
    kept for the next visit is the 304's ``max-age``, not the old answer's carried on."""
    db = tmp_path / "s.sqlite"
    site = news.NewsSite(max_age=int(WEEK), conditional=True)
    with news.NewsServer(site) as server:
        crawl({"settings": settings(db), "start": start(server, *ARTICLES)}, tmp_path / "c1")
        site.max_age = 2 * 86400
        second = crawl(
            {"settings": settings(db), "clock_offset": 86400.0 + 60, "start": []},
            tmp_path / "c2",
        )
        assert second.stat("fresh/not_modified") == 5
        assert second.stat("fresh/trust/quiet/kept") == 5
        store = SQLiteStore(str(db))
        try:
            for path in ARTICLES:
                value = store.get_meta(QUIET_NAMESPACE, url_key(server.url(path)))
                assert value is not None
                claim = QuietClaim.from_meta(value)
                assert claim.until is not None
                assert claim.until - claim.claimed_at == pytest.approx(2 * 86400, abs=5)
        finally:
            store.close()


def test_honest_max_age_earns_a_bounded_deferral(crawl: Any, tmp_path: Path) -> None:
    """The same week-long ``max-age`` on articles that keep still: the visits at their
    own due time find them unchanged, the claims are kept, and the next due times move
    into the claimed week by the share the host earned, never to its end."""
    db = tmp_path / "s.sqlite"
    site = news.NewsSite(max_age=int(WEEK))
    with news.NewsServer(site) as server:
        host = f"127.0.0.1:{server.port}"
        crawl({"settings": settings(db), "start": start(server, *ARTICLES)}, tmp_path / "c1")
        second = crawl(
            {"settings": settings(db), "clock_offset": 86400.0 + 60, "start": []},
            tmp_path / "c2",
        )
        assert second.stat("fresh/unchanged") == 5
        assert second.stat("fresh/trust/quiet/kept") == 5
        assert second.stat("fresh/trust/quiet/broken") == 0
        assert second.stat("fresh/providers/quiet/deferred") >= 4  # once the first was judged
        record = trust(db)[("cache", host)].record
        assert not record.demoted
        after = records(db)
        for path in ARTICLES[1:]:
            state = after[path]
            own = state.last_crawl + state.refresh_secs
            assert own < state.next_due < state.last_crawl + WEEK
