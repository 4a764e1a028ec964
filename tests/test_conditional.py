"""The downloader and spider middlewares driven directly (memory store, fake clock)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, Response

from scrapy_fresh.crawl.middlewares import (
    FreshDownloaderMiddleware,
    FreshSpiderMiddleware,
    NotModified,
)
from scrapy_fresh.crawl.pipelines import FreshItemPipeline
from scrapy_fresh.fingerprint.shingles import fingerprint_html
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.base import Status
from scrapy_fresh.validators import HostChecks, head_verdict

NOW = 1_000_000.0
URL = "http://a.example/page"
LM = "Sun, 06 Nov 1994 08:49:37 GMT"
HTML = "<html><body><article><p>%s</p></article><footer>%s</footer></body></html>"
TEXT = "Ducks walk to the pond every morning and swim there until noon. " * 20


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (no download)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the coroutine waited for something")


def _step(agen: AsyncIterator[Any]) -> tuple[bool, Any]:
    """Advance an async generator that never suspends: (True, element) or (False, None)."""
    try:
        agen.__anext__().send(None)  # type: ignore[attr-defined]
    except StopIteration as stop:
        return True, stop.value
    except StopAsyncIteration:
        return False, None
    raise AssertionError("the async generator waited for something")


def collect(agen: AsyncIterator[Any]) -> list[Any]:
    out = []
    while True:
        more, element = _step(agen)
        if not more:
            return out
        out.append(element)


async def _aiter(items: list[Any], error: Exception | None = None) -> AsyncIterator[Any]:
    for item in items:
        yield item
    if error is not None:
        raise error


@pytest.fixture
def setup(harness: Any, known: Any) -> Any:
    def make(settings: dict[str, Any] | None = None, **fields: Any) -> Any:
        record = known(
            URL,
            last_crawl=NOW - 90000,
            next_due=NOW - 10,
            fingerprint=fingerprint_html(HTML % (TEXT, "")),
            **fields,
        )
        h = harness(settings, records=[record])
        (request,) = h.drain()
        downloader = FreshDownloaderMiddleware.from_crawler(h.crawler)
        spider_mw = FreshSpiderMiddleware.from_crawler(h.crawler)
        return h, request, downloader, spider_mw

    return make


def _response(request: Request, status: int = 200, body: str = "", **headers: str) -> Response:
    return HtmlResponse(
        request.url, status=status, body=body.encode(), headers=headers, request=request
    )


def test_validators_are_sent_weak_etags_as_they_are(setup: Any) -> None:
    h, request, mw, _ = setup(etag='W/"abc"', last_modified=LM)
    assert run(mw.process_request(request)) is None
    assert request.headers[b"If-None-Match"] == b'W/"abc"'
    assert request.headers[b"If-Modified-Since"] == LM.encode()
    assert h.stat("fresh/conditional_requests") == 1


def test_malformed_validators_are_not_sent(setup: Any) -> None:
    h, request, mw, _ = setup(etag="no-quotes", last_modified="last tuesday")
    assert run(mw.process_request(request)) is None
    assert b"If-None-Match" not in request.headers
    assert b"If-Modified-Since" not in request.headers
    assert h.stat("fresh/bad_validator") == 2


def test_304_is_not_modified_and_reaches_no_callback(setup: Any) -> None:
    h, request, mw, _ = setup(etag='"abc"', content_length=1234)
    run(mw.process_request(request))
    with pytest.raises(NotModified):
        mw.process_response(request, _response(request, 304, ETag='"abc"'))
    state = h.state(URL)
    assert state.status is Status.IDLE
    assert state.visits == 1
    assert request.meta["fresh_outcome"] == "not_modified"
    assert h.stat("fresh/not_modified") == 1
    assert h.stat("fresh/bytes_saved") == 1234
    assert h.runtime.checks.host_checks("a.example").etag_not_modified == 1
    # A second outcome for the same visit changes nothing.
    mw.process_exception(request, TimeoutError())
    assert h.stat("fresh/errors") == 0


def test_gone_needs_confirmations_and_errors_back_off(setup: Any) -> None:
    h, request, mw, _ = setup({"FRESH_GONE_CONFIRMATIONS": 2, "FRESH_ERROR_BACKOFF_SECS": 60})
    mw.process_response(request, _response(request, 404))
    state = h.state(URL)
    assert state.status is Status.IDLE  # one 404 is not enough
    assert state.next_due == NOW + 60
    assert h.stat("fresh/gone") == 1


def test_download_errors_keep_the_page_scheduled(setup: Any) -> None:
    h, request, mw, _ = setup({"FRESH_ERROR_BACKOFF_SECS": 60})
    assert mw.process_exception(request, TimeoutError()) is None
    state = h.state(URL)
    assert state.status is Status.IDLE
    assert state.errors == 1
    assert state.next_due == NOW + 60
    assert h.stat("fresh/errors") == 1


def test_a_host_that_ignores_validators_gets_head_probes(setup: Any) -> None:
    h, request, mw, _ = setup(etag='"abc"', last_modified=LM)
    run(mw.process_request(request))
    mw.process_response(request, _response(request, 200, "<p>x</p>", ETag='"abc"'))
    checks = h.runtime.checks.host_checks("a.example")
    assert checks.ignored == 1
    assert h.runtime.checks.ignored_pages == {request.meta["fresh_key"]}
    checks.ignored = 2
    assert checks.plan("auto", has_validators=True, has_head_validators=True).value == "head"
    assert checks.plan("conditional", has_validators=True, has_head_validators=True).value == (
        "conditional"
    )


def test_head_verdicts() -> None:
    assert head_verdict('"a"', LM, 10, {"etag": '"a"', "last-modified": LM}) is False
    assert (
        head_verdict('"a"', LM, 10, {"etag": '"a"', "last-modified": LM, "content-length": "11"})
        is True
    )
    # An untrusted (per-response) ETag is not compared.
    assert (
        head_verdict('"a"', None, 10, {"etag": '"b"', "content-length": "10"}, trust_etag=False)
        is False
    )
    assert head_verdict(None, None, None, {}) is None


def test_per_response_etags_are_not_trusted_after_a_while() -> None:
    checks = HostChecks(etag_churn=3)
    assert checks.etag_untrusted
    checks.etag_not_modified = 1
    assert not checks.etag_untrusted


def test_spider_middleware_judges_the_items_once(setup: Any) -> None:
    h, request, _, spider_mw = setup({"FRESH_DROP_UNCHANGED_ITEMS": True})
    pipeline = FreshItemPipeline.from_crawler(h.crawler)
    item = {"title": "Ducks", "text": "A brand new story about geese. " * 30}
    follow = Request("http://a.example/next")
    response = _response(request, 200, HTML % (TEXT, ""))
    out = collect(spider_mw.process_spider_output(response, _aiter([item, follow])))
    assert out == [follow, item]  # requests pass at once, items after the judgement
    assert item["fresh_changed"] is True
    assert request.meta["fresh_outcome"] == "changed"
    assert h.stat("fresh/changed") == 1
    assert pipeline.process_item(item) is item


def test_with_no_item_to_drop_the_pipeline_is_not_built_nor_fed(setup: Any) -> None:
    """FRESH_DROP_UNCHANGED_ITEMS False (the default): Scrapy leaves the pipeline out,
    and the spider middleware keeps no verdict per item for it."""
    from scrapy.exceptions import NotConfigured

    h, request, _, spider_mw = setup()
    with pytest.raises(NotConfigured, match="FRESH_DROP_UNCHANGED_ITEMS"):
        FreshItemPipeline.from_crawler(h.crawler)
    item = {"title": "Ducks", "text": "A brand new story about geese. " * 30}
    response = _response(request, 200, HTML % (TEXT, ""))
    assert collect(spider_mw.process_spider_output(response, _aiter([item]))) == [item]
    assert item["fresh_changed"] is True
    assert h.runtime.item_outcomes == {}


def test_pages_without_items_are_judged_from_the_html(setup: Any) -> None:
    h, request, _, spider_mw = setup({"FRESH_DROP_UNCHANGED_ITEMS": True})
    # Same article, another footer: unchanged.
    response = _response(request, 200, HTML % (TEXT, "Rendered at 17:45"))
    assert collect(spider_mw.process_spider_output(response, _aiter([]))) == []
    assert request.meta["fresh_outcome"] == "unchanged"
    assert h.state(URL).changes == 0


def test_unchanged_items_are_dropped_when_asked(setup: Any) -> None:
    from scrapy.exceptions import DropItem

    h, request, _, spider_mw = setup({"FRESH_DROP_UNCHANGED_ITEMS": True})
    pipeline = FreshItemPipeline.from_crawler(h.crawler)
    h.runtime.store.put(_with_fingerprint(h.state(URL), "same text " * 50))
    item = {"text": "same text " * 50}
    response = _response(request, 200, "<p>x</p>")
    collect(spider_mw.process_spider_output(response, _aiter([item])))
    assert item["fresh_changed"] is False
    with pytest.raises(DropItem):
        pipeline.process_item(item)
    assert h.stat("fresh/items_dropped_unchanged") == 1


def _with_fingerprint(state: Any, text: str) -> Any:
    from scrapy_fresh.fingerprint.shingles import fingerprint_text

    state.fingerprint = fingerprint_text(text)
    state.status = Status.IN_FLIGHT
    return state


def test_a_failing_callback_still_records_the_visit(setup: Any) -> None:
    _, request, _, spider_mw = setup()
    response = _response(request, 200, HTML % (TEXT, ""))
    item = {"text": "partial"}
    agen = spider_mw.process_spider_output(response, _aiter([item], ValueError("boom")))
    assert _step(agen) == (True, item)  # the items so far go on, then the error
    with pytest.raises(ValueError, match="boom"):
        _step(agen)
    assert request.meta["fresh_outcome"] in ("changed", "unchanged")


def test_a_lying_host_is_fetched_in_full(setup: Any) -> None:
    h, request, _, spider_mw = setup(etag='"same"')
    response = _response(
        request, 200, HTML % ("Completely different words here. " * 30, ""), ETag='"same"'
    )
    collect(spider_mw.process_spider_output(response, _aiter([])))
    assert request.meta["fresh_outcome"] == Outcome.CHANGED.value
    checks = h.runtime.checks.host_checks("a.example")
    assert checks.lying
    assert checks.plan("auto", has_validators=True, has_head_validators=True).value == "none"
    assert h.stat("fresh/validators_lying") == 1


def test_what_a_run_learned_about_a_host_holds_in_the_next(setup: Any) -> None:
    h, request, _, spider_mw = setup(etag='"same"')
    response = _response(
        request, 200, HTML % ("Completely different words here. " * 30, ""), ETag='"same"'
    )
    collect(spider_mw.process_spider_output(response, _aiter([])))
    site = h.runtime.store.get_site("a.example")
    assert site is not None
    assert site.checks["lying"] == 1
    h.runtime.checks.hosts.clear()  # a new run: nothing learned in memory
    checks = h.runtime.checks.host_checks("a.example")
    assert checks.lying
    assert checks.plan("auto", has_validators=True, has_head_validators=True).value == "none"


def test_host_checks_counts_round_trip_and_ignore_bad_values() -> None:
    checks = HostChecks(not_modified=3, ignored=2, lying=True)
    counts = checks.counts()
    assert list(counts) == [f.name for f in dataclasses.fields(HostChecks)]  # every field
    assert counts["lying"] == 1
    assert type(counts["lying"]) is int  # JSON-safe, not True
    assert HostChecks.from_counts(counts) == checks
    counts["ignored"] = 7  # a copy: the counters are not the dict's
    assert checks.ignored == 2
    assert HostChecks.from_counts({"ignored": -1, "unknown": 5, "etag_churn": "x"}) == HostChecks()


@pytest.mark.parametrize("gone_items", [True, False])
def test_the_spider_middleware_sends_a_gone_pages_item_once(setup: Any, gone_items: bool) -> None:
    """The 404 that makes a visited page gone goes on to the spider middlewares (Scrapy's
    HttpErrorMiddleware swallows it: nothing of the spider's): FreshSpiderMiddleware
    yields the page's PageGone item after that output, once, unless FRESH_GONE_ITEMS is
    False."""
    h, request, mw, spider_mw = setup(
        {"FRESH_GONE_CONFIRMATIONS": 1, "FRESH_GONE_ITEMS": gone_items}
    )
    response = _response(request, 404)
    mw.process_response(request, response)
    assert h.state(URL).status is Status.GONE
    out = collect(spider_mw.process_spider_output(response, _aiter([])))
    if gone_items:
        assert [(i["url"], i["status"], i["reason"]) for i in out] == [(URL, 404, "gone")]
        assert h.stat("fresh/gone_items") == 1
    else:
        assert out == []
    assert collect(spider_mw.process_spider_output(response, _aiter([]))) == []  # once
