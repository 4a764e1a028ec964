"""The crawl's side of the cost-aware refresh rule: what a cheap check costs is measured
per host and handed to record_visit; sitemaps and feeds listing something new changed."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.http import HtmlResponse, Response, XmlResponse

from scrapy_fresh.crawl.middlewares import (
    FreshDownloaderMiddleware,
    FreshSpiderMiddleware,
    NotModified,
)
from scrapy_fresh.crawl.provider_middleware import FreshProviderMiddleware
from scrapy_fresh.fingerprint.content import digest
from scrapy_fresh.fingerprint.shingles import fingerprint_html
from scrapy_fresh.validators import HostChecks

URL = "http://a.example/page"
HTML = "<html><body><article><p>%s</p></article></body></html>"
TEXT = "Ducks walk to the pond every morning and swim there until noon. " * 20
REFRESH = 3600.0
HARNESS_NOW = 1_000_000.0  # the harness clock (tests/conftest.py)


@pytest.fixture
def page(harness: Any, known: Any) -> Any:
    def make(settings: dict[str, Any] | None = None, url: str = URL, **fields: Any) -> Any:
        record = known(
            url,
            last_crawl=HARNESS_NOW - 2 * REFRESH,
            next_due=HARNESS_NOW - 10,
            refresh_secs=REFRESH,
            fingerprint=fields.pop("fingerprint", fingerprint_html(HTML % TEXT)),
            **fields,
        )
        h = harness(settings, records=[record])
        (request,) = h.drain()
        return h, request

    return make


def _callback_yields_nothing(spider_mw: FreshSpiderMiddleware, response: Response) -> None:
    """Run the spider middleware over a callback that yielded no item (judged from HTML)."""

    async def nothing() -> Any:
        return
        yield

    agen = spider_mw.process_spider_output(response, nothing())
    with pytest.raises(StopAsyncIteration):
        agen.__anext__().send(None)  # type: ignore[attr-defined]


def _304(request: Any, **headers: str) -> Response:
    return HtmlResponse(request.url, status=304, body=b"", headers=headers, request=request)


def test_a_304_measures_the_hosts_check_cost_and_grows_the_refresh_time_gently(page):
    h, request = page(etag='"abc"', content_length=10_000)
    mw = FreshDownloaderMiddleware.from_crawler(h.crawler)
    with pytest.raises(NotModified):
        mw.process_response(request, _304(request, ETag='"abc"'))
    checks = h.runtime.checks.host_checks("a.example")
    assert 0 < checks.check_bytes < 1_000
    assert checks.check_full_bytes == checks.check_bytes + 10_000
    state = h.state(URL)
    # measured ~1% of a download, floored at FRESH_MIN_CHECK_COST_RATIO (0.05)
    assert state.refresh_secs == pytest.approx(REFRESH * 2**0.05)
    assert h.runtime.checks.check_cost(state) == 0.05
    site = h.runtime.store.get_site("a.example")
    assert site is not None
    assert site.checks["check_full_bytes"] == checks.check_full_bytes  # kept for next run


def test_without_the_weighting_a_304_doubles_the_refresh_time(page):
    h, request = page({"FRESH_MIN_CHECK_COST_RATIO": 1.0}, etag='"abc"', content_length=10_000)
    mw = FreshDownloaderMiddleware.from_crawler(h.crawler)
    with pytest.raises(NotModified):
        mw.process_response(request, _304(request, ETag='"abc"'))
    assert h.state(URL).refresh_secs == 2 * REFRESH


def test_pages_that_must_be_downloaded_to_be_checked_keep_the_papers_rule(page):
    # no validators, and no length probes
    h, request = page({"FRESH_LENGTH_PROBE_FULL_EVERY": 0}, content_length=10_000)
    h.runtime.checks.hosts["a.example"] = HostChecks(check_bytes=150, check_full_bytes=10_150)
    spider_mw = FreshSpiderMiddleware.from_crawler(h.crawler)
    response = HtmlResponse(URL, body=(HTML % TEXT).encode(), request=request)
    _callback_yields_nothing(spider_mw, response)
    state = h.state(URL)
    assert request.meta["fresh_outcome"] == "unchanged"
    assert h.runtime.checks.check_cost(state) == 1.0
    assert state.refresh_secs == 2 * REFRESH  # a wasted download: the paper's doubling


def test_a_page_checked_by_its_length_costs_the_mean_of_probes_and_full_downloads(page):
    # no ETag, no Last-Modified: length probes, when opted into
    h, _ = page({"FRESH_LENGTH_PROBE": True}, content_length=10_000)
    h.runtime.checks.hosts["a.example"] = HostChecks(check_bytes=150, check_full_bytes=10_150)
    # three HEAD probes at the floor (0.05), then one full download, in every four visits
    assert h.runtime.checks.check_cost(h.state(URL)) == pytest.approx((3 * 0.05 + 1.0) / 4)
    h.runtime.checks.length_churn_pages.add(h.state(URL).key)  # its length moves on its own
    assert h.runtime.checks.check_cost(h.state(URL)) == 1.0


def test_without_length_probes_a_page_without_validators_costs_a_download(page):
    h, _ = page(content_length=10_000)  # the default: its length is no evidence
    h.runtime.checks.hosts["a.example"] = HostChecks(check_bytes=150, check_full_bytes=10_150)
    assert h.runtime.checks.check_cost(h.state(URL)) == 1.0


def test_a_host_that_never_answered_a_cheap_check_costs_a_download(page):
    h, _ = page(etag='"abc"')
    assert h.runtime.checks.check_cost(h.state(URL)) == 1.0


@pytest.mark.parametrize("bad", [0.0, 1.5, "cheap"])
def test_the_setting_is_validated_by_name(harness, bad):
    with pytest.raises(ValueError, match="FRESH_MIN_CHECK_COST_RATIO"):
        harness({"FRESH_MIN_CHECK_COST_RATIO": bad})


SITEMAP = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    "<url><loc>http://a.example/post-1</loc><lastmod>%s</lastmod></url></urlset>"
)


def _sitemap_visit(page: Any, lastmod: float) -> tuple[Any, Any]:
    from datetime import datetime, timezone

    url = "http://a.example/sitemap.xml"
    when = datetime.fromtimestamp(lastmod, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    body = (SITEMAP % when).encode()
    old = digest((SITEMAP % "2000-01-01T00:00:00+00:00").encode())  # as a visit stores it
    h, request = page(url=url, fingerprint=old.simhash, content_hash=old.exact)
    provider_mw = FreshProviderMiddleware.from_crawler(h.crawler)
    spider_mw = FreshSpiderMiddleware.from_crawler(h.crawler)
    provider_mw.process_request(request)
    response = XmlResponse(url, body=body, request=request)
    provider_mw.process_response(request, response)
    _callback_yields_nothing(spider_mw, response)
    return h, request


def test_a_sitemap_listing_an_update_since_its_last_visit_changed(page):
    h, request = _sitemap_visit(page, HARNESS_NOW - REFRESH)  # after the last crawl
    assert request.meta["fresh_outcome"] == "changed"
    assert h.stat("fresh/changed_by_listing") == 1
    assert not h.runtime.visits.listed_updates


def test_a_sitemap_listing_only_known_updates_is_unchanged(page):
    h, request = _sitemap_visit(page, HARNESS_NOW - 3 * REFRESH)  # before the last crawl
    assert request.meta["fresh_outcome"] == "unchanged"
    assert h.stat("fresh/changed_by_listing") == 0


def _html_visit(page: Any, updates: Any) -> Any:
    h, request = page()  # fingerprinted as HTML % TEXT at its last visit
    spider_mw = FreshSpiderMiddleware.from_crawler(h.crawler)
    response = HtmlResponse(URL, body=(HTML % TEXT).encode(), request=request)
    response.meta["fresh_updates"] = updates  # as a callback does before it is done
    _callback_yields_nothing(spider_mw, response)
    return h, request


def test_a_page_whose_spider_declares_an_update_since_its_last_visit_changed(page):
    # Same text (an index whose only change is a listed date): changed all the same.
    h, request = _html_visit(page, [HARNESS_NOW - REFRESH, "not a date"])
    assert request.meta["fresh_outcome"] == "changed"
    assert h.stat("fresh/changed_by_listing") == 1


def test_declared_updates_before_the_last_visit_change_nothing(page):
    h, request = _html_visit(page, [HARNESS_NOW - 3 * REFRESH])
    assert request.meta["fresh_outcome"] == "unchanged"
    assert h.stat("fresh/changed_by_listing") == 0
