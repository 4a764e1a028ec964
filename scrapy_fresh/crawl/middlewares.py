"""The conditional check (downloader middleware) and the page judge (spider middleware).

Every visit of a page handed out by :class:`~scrapy_fresh.crawl.scheduler.FreshScheduler`
ends in exactly one recorded outcome:

* :class:`FreshDownloaderMiddleware` records the visits that end without a page to
  judge: ``not_modified`` (a 304, or a HEAD probe showing the same validators), ``gone``
  (404/410) and ``error`` (any other non-2xx final answer, a download exception).
* :class:`FreshSpiderMiddleware` records the visits whose page reached the spider:
  ``new`` (first fetch), ``changed`` or ``unchanged``, from the fields of the items the
  callback yielded, or from the page itself when it yielded none.

A per-request flag (``meta["fresh_outcome"]``) and the run's lease of the page make a
second recording of the same visit a no-op. See :doc:`/topics/conditional`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http.request import NO_CALLBACK

from scrapy_fresh.crawl.gone import GoneItems
from scrapy_fresh.crawl.item_changes import annotate, kept_items
from scrapy_fresh.crawl.reachability import UNREACHABLE_ERRORS
from scrapy_fresh.crawl.requestinfo import is_robots_request
from scrapy_fresh.crawl.runtime import FreshRuntime, Lease, header, header_items
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.fingerprint.content import (
    DEFAULT_RULES,
    ContentRules,
    digest,
    is_json,
    is_plain_text,
)
from scrapy_fresh.fingerprint.itemfields import (
    FieldRule,
    ItemRules,
    field_scheme_of,
    item_hashes,
    merge_rules,
    parse_field_rules,
    parse_fields,
)
from scrapy_fresh.fingerprint.shingles import fingerprint_text
from scrapy_fresh.fingerprint.verdict import Hashed, PageContent
from scrapy_fresh.keys import url_host
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.validators import (
    Check,
    head_verdict,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, MutableMapping

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from scrapy_fresh.crawl.schemes import ContentSchemes

__all__ = ["FreshDownloaderMiddleware", "FreshSpiderMiddleware", "NotModified"]

logger = logging.getLogger(__name__)

_HEADERS = ("etag", "last-modified", "content-length", "date")
#: A 304's headers handed on: the validators, and what it says of the copy's lifetime
#: (RFC 9111, Section 4.3.4: a 304 freshens the stored response).
_ANSWER_HEADERS = (*_HEADERS, "cache-control", "expires", "age")


class NotModified(IgnoreRequest):
    """The page did not change since the last visit; its body was not downloaded.

    Raised by :class:`FreshDownloaderMiddleware` after a 304 or a HEAD probe: the
    request's callback is not called, nor its errback (a page that did not change is
    no error), unless the request's meta has ``fresh_errback_not_modified=True``.
    """


def _not_modified(request: Request, message: str) -> NotModified:
    """The exception to raise for ``request``; its errback is skipped unless it opted in."""
    if not request.meta.get("fresh_errback_not_modified"):
        request.errback = None  # Scrapy reads it when the failure reaches the spider
    return NotModified(message)


def _headers(response: Response, names: tuple[str, ...] = _HEADERS) -> dict[str, str | None]:
    return {name: header(response.headers, name) for name in names}


def _answer_bytes(response: Response) -> int:
    """About what a body-less answer weighed on the wire: status line and headers."""
    size = len(b"HTTP/1.1 304 Not Modified\r\n\r\n")  # status line and the blank line
    for name, values in header_items(response.headers):
        for value in values:
            size += len(name) + len(value) + 4  # "name: value\r\n"
    return size


def _count_cheap_check(runtime: FreshRuntime, lease: Lease, response: Response) -> None:
    """Measure a check that found no change against a full download of the page."""
    if lease.content_length is None:
        return
    answer = _answer_bytes(response)
    runtime.checks.host_checks(lease.host).count_check(answer, answer + lease.content_length)


class _FreshComponent:
    """Built from the crawler's runtime; not built at all when scrapy_fresh is off."""

    def __init__(self, crawler: Crawler, runtime: FreshRuntime) -> None:
        self.crawler = crawler
        self.runtime = runtime

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = FreshRuntime.of(crawler)
        if not runtime.config.enabled:
            raise NotConfigured("FRESH_ENABLED is False.")
        return cls(crawler, runtime)


class FreshReachabilityMiddleware(_FreshComponent):
    """Watch every download attempt for a host that gives no answer
    (:mod:`scrapy_fresh.crawl.reachability`): a response of the host resets its count
    (a download listener of the runtime, not ``process_response``: one middleware call
    less per response),
    an attempt that could not connect, found no DNS answer or timed out adds one.

    Enable it above ``RetryMiddleware`` (550), so that it sees the attempts Scrapy
    retries too; the add-on uses 555. Off when :setting:`FRESH_UNREACHABLE_ATTEMPTS` is 0.

    Stats: ``fresh/hosts_unreachable`` (counted by the scheduler when it pauses a host).
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        component = super().from_crawler(crawler)
        if not component.runtime.config.unreachable_attempts:
            raise NotConfigured("FRESH_UNREACHABLE_ATTEMPTS is 0.")
        component.runtime.download_listeners.append(component._downloaded)
        return component

    def _downloaded(self, response: Response, request: Request) -> None:
        """A response of the host (Scrapy's ``response_downloaded``: every answer, a
        redirect's or a retried error's too, never a cached copy) resets its count."""
        if not is_robots_request(request):
            self.runtime.reachability.answered(url_host(request.url))

    def process_exception(self, request: Request, exception: Exception) -> None:
        if isinstance(exception, UNREACHABLE_ERRORS) and not is_robots_request(request):
            self.runtime.host_unanswered(url_host(request.url), exception)


class FreshDownloaderMiddleware(_FreshComponent):
    """Check known pages cheaply before downloading them, and record body-less visits.

    For a page with stored validators it sends ``If-None-Match`` (the stored ETag, weak
    ones as they are) and ``If-Modified-Since`` (the stored ``Last-Modified``, if it is a
    valid HTTP date), or first a HEAD request where the host ignores conditional
    requests (:setting:`FRESH_CHECK`). A 304 or an unchanged HEAD answer records
    ``not_modified`` and raises :class:`NotModified`: nothing reaches the callback.

    Enable it below ``RetryMiddleware`` (550) so it sees final answers only; the add-on
    uses 540.

    Stats: ``fresh/not_modified``, ``fresh/bytes_saved``, ``fresh/head_probes``,
    ``fresh/conditional_requests``, ``fresh/bad_validator``, ``fresh/gone``,
    ``fresh/errors``.
    """

    def __init__(self, crawler: Crawler, runtime: FreshRuntime) -> None:
        super().__init__(crawler, runtime)
        self.mode = runtime.config.check

    def _lease(self, request: Request) -> Lease | None:
        meta = request.meta
        key = meta.get("fresh_key")
        if not isinstance(key, str) or meta.get("fresh_probe") or "fresh_outcome" in meta:
            return None
        return self.runtime.leases.get(key)

    # -- requests ----------------------------------------------------------------------

    async def process_request(self, request: Request) -> Request | None:
        lease = self._lease(request)
        if lease is None:
            return None
        # A page scrapy_fresh checks is asked of the server, never of HTTPCACHE: a cached
        # copy would hide every change (other requests may still use the cache).
        request.meta["dont_cache"] = True
        if not lease.visited or request.meta.get("fresh_probed"):
            return None
        runtime = self.runtime
        plan, etag, last_modified = runtime.checks.check_plan(
            lease.key,
            lease.host,
            lease.etag,
            lease.last_modified,
            lease.content_length,
            lease.visits,
            count_bad=True,
        )
        if plan is Check.HEAD:
            lease.length_probe = not (etag or last_modified)
            if lease.length_probe:
                runtime.stat("fresh/length_probes")
            return await self._probe(request, lease, trust_etag=etag is not None)
        if plan is Check.CONDITIONAL:
            if etag:
                request.headers.setdefault(b"If-None-Match", etag)
                lease.sent_etag = header(request.headers, "If-None-Match")
            if last_modified:
                request.headers.setdefault(b"If-Modified-Since", last_modified)
                lease.sent_ims = header(request.headers, "If-Modified-Since")
            if lease.sent_etag or lease.sent_ims:
                runtime.stat("fresh/conditional_requests")
        return None

    async def _probe(self, request: Request, lease: Lease, *, trust_etag: bool) -> Request:
        """HEAD first; raise NotModified, or hand back the GET to be scheduled politely."""
        runtime = self.runtime
        runtime.stat("fresh/head_probes")
        checks = runtime.checks.host_checks(lease.host)
        probe = Request(
            request.url,
            method="HEAD",
            headers=request.headers.copy(),
            callback=NO_CALLBACK,
            meta={"fresh_probe": True, "handle_httpstatus_all": True, "dont_cache": True},
            dont_filter=True,
            priority=request.priority,
        )
        engine = self.crawler.engine
        assert engine is not None
        verdict: bool | None = None
        try:
            response = await engine.download_async(probe)
        except Exception as exc:  # noqa: BLE001  # any download failure: fetch in full
            logger.debug(
                "scrapy_fresh: HEAD probe of %(url)s failed: %(exc)s",
                {"url": request.url, "exc": exc},
                extra={"spider": self.crawler.spider},
            )
        else:
            if response.status == 200:
                verdict = head_verdict(
                    lease.etag,
                    lease.last_modified,
                    lease.content_length,
                    _headers(response),
                    trust_etag=trust_etag,
                    trust_length=runtime.config.length_probe,
                )
        if verdict is False:
            if lease.length_probe:
                checks.length_not_modified += 1
            _count_cheap_check(runtime, lease, response)
            self._not_modified(request.meta, lease, None)
            raise _not_modified(
                request, f"Not modified since the last visit (HEAD): {request.url}"
            )
        if verdict is None:
            checks.head_useless += 1
            lease.length_probe = False  # nothing compared: the GET says nothing of the length
        follow = request.copy()
        follow.meta["fresh_probed"] = True  # the GET goes back through the scheduler
        return follow

    def _not_modified(
        self,
        meta: MutableMapping[str, Any],
        lease: Lease,
        headers: Mapping[str, str | None] | None,
    ) -> None:
        if (
            self.runtime.visits.record_outcome(meta, Outcome.NOT_MODIFIED, headers=headers)
            is not None
        ):
            self.runtime.stat("fresh/bytes_saved", lease.content_length or 0)

    # -- responses ---------------------------------------------------------------------

    def process_response(self, request: Request, response: Response) -> Response:
        if not is_robots_request(request):
            self.runtime.host_answered(url_host(request.url))
        lease = self._lease(request)
        if lease is None:
            return response
        status = response.status
        checks = self.runtime.checks.host_checks(lease.host)
        sent_etag, sent_ims = lease.sent_etag, lease.sent_ims
        lease.sent_etag = lease.sent_ims = None
        if status == 304 and lease.visited:
            checks.not_modified += 1
            if sent_etag:
                checks.etag_not_modified += 1
            _count_cheap_check(self.runtime, lease, response)
            self._not_modified(request.meta, lease, _headers(response, _ANSWER_HEADERS))
            raise _not_modified(request, f"Not modified since the last visit (304): {request.url}")
        if status == 200 and (sent_etag or sent_ims):
            etag = header(response.headers, "ETag")
            last_modified = header(response.headers, "Last-Modified")
            if (sent_etag and etag and etag.strip() == sent_etag) or (
                sent_ims and last_modified and last_modified.strip() == sent_ims
            ):
                checks.ignored += 1  # the validator still matched, yet a full answer
                self.runtime.checks.ignored_pages.add(lease.key)
        if status in (404, 410):
            self.runtime.visits.record_outcome(request.meta, Outcome.GONE)
        elif not 200 <= status < 300:
            self.runtime.visits.record_outcome(request.meta, Outcome.ERROR)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        if isinstance(exception, NotModified):
            return
        if not is_robots_request(request):
            self.runtime.host_answered(url_host(request.url))
        lease = self._lease(request)
        if lease is None:
            return
        lease.sent_etag = lease.sent_ims = None
        if isinstance(exception, IgnoreRequest):  # robots.txt, offsite, another middleware
            self.runtime.visits.record_outcome(request.meta, Outcome.BLOCKED)
            logger.debug(
                "scrapy_fresh: %(url)s was not fetched (%(exc)s); looked at again in "
                "FRESH_MAX_REFRESH_SECS",
                {"url": request.url, "exc": exception},
                extra={"spider": self.crawler.spider},
            )
            return
        self.runtime.visits.record_outcome(request.meta, Outcome.ERROR)
        logger.debug(
            "scrapy_fresh: %(url)s failed (%(exc)r); it stays scheduled with back-off",
            {"url": request.url, "exc": exception},
            extra={"spider": self.crawler.spider},
        )


def item_text(item: Any, fields: tuple[str, ...] | None) -> str:
    """The text of an item whose simhash is stored: its string fields (or ``fields``).

    Fields whose name starts with ``fresh_`` are never included. The simhash measures how
    much the items changed; whether they changed is judged field by field
    (:mod:`scrapy_fresh.fingerprint.itemfields`).
    """
    parts: list[str] = []
    for name, value in ItemAdapter(item).items():
        if (fields is not None and name not in fields) or str(name).startswith("fresh_"):
            continue
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, (list, tuple)):
            parts.extend(v for v in value if isinstance(v, str))
    return "\n".join(parts)


def page_content(
    response: Response, rules: ContentRules = DEFAULT_RULES, schemes: ContentSchemes | None = None
) -> PageContent:
    """What a page that yielded no item (with a counted field) shows of its content: the
    exact digest of its main content normalised by ``rules``, which decides
    (:func:`~scrapy_fresh.fingerprint.verdict.judge`), and the simhash of the same text, which
    measures how much changed (:func:`~scrapy_fresh.fingerprint.content.digest`; binary and
    mis-encoded bodies are decoded as the fingerprint decodes them; a ``text/plain``
    answer is text, not markup: :func:`~scrapy_fresh.fingerprint.content.is_plain_text`;
    a JSON answer is its data: :func:`~scrapy_fresh.fingerprint.content.is_json`)."""
    encoding = getattr(response, "encoding", None)
    content_type = header(response.headers, "Content-Type")
    data = is_json(content_type)  # JSON: its data, whatever its layout and member order
    # text, not markup; None: the type does not say (a gzip file: by what it holds)
    plain = True if is_plain_text(content_type) else None
    found = digest(response.body, encoding, rules, plain=plain, data=data)
    if schemes is None:
        return PageContent(found.simhash, digest=found.exact)
    schemes.remember(rules)

    def redigest(tag: int) -> tuple[int, ...] | None:  # by the other rules of that tag
        others = [old for old in schemes.candidates(tag) if old != rules]
        return (
            tuple(
                digest(response.body, encoding, old, plain=plain, data=data).exact
                for old in others
            )
            or None
        )

    return PageContent(found.simhash, digest=found.exact, redigest=redigest)


def _set_field(item: Any, name: str, value: Any) -> None:
    with contextlib.suppress(KeyError, TypeError, AttributeError):
        ItemAdapter(item)[name] = value  # items that cannot take the field go without


class FreshSpiderMiddleware(_FreshComponent):
    """Judge each downloaded page once: new, changed or unchanged.

    The items a callback yields for a page are held back until the callback is done
    (requests pass at once). Each counted field of each item
    (:setting:`FRESH_FINGERPRINT_FIELDS`, :setting:`FRESH_FIELD_RULES`; the spider
    attributes and request meta keys ``fresh_fingerprint_fields`` and
    ``fresh_field_rules``) is hashed exactly after whitespace normalisation, digits kept,
    and compared with the page's previous visit (:mod:`scrapy_fresh.fingerprint.itemfields`): the page
    changed iff some counted field of some item changed, or items appeared or went away.
    A page whose callback yields no item (or none with a counted field) is judged by the
    page itself (:func:`page_content`). The outcome is recorded; each item gets
    ``fresh_changed`` (its own fields changed, or the page is new) and
    ``fresh_changed_fields`` (the names of its changed fields; every counted field on a
    new page) where the item type takes them, and its verdict is passed to
    :class:`~scrapy_fresh.crawl.pipelines.FreshItemPipeline`.

    After the output of a response whose visit made its page gone, it yields the page's
    :class:`~scrapy_fresh.crawl.items.PageGone` item (:setting:`FRESH_GONE_ITEMS`,
    :class:`~scrapy_fresh.crawl.gone.GoneItems`): at 40, below Scrapy's
    ``HttpErrorMiddleware`` (50), it sees that output whatever the spider does with errors.

    Stats: ``fresh/new``, ``fresh/changed``, ``fresh/unchanged``, ``fresh/items_changed``,
    ``fresh/field_changed/<field>``, ``fresh/bad_meta``, ``fresh/gone_items``.
    """

    def __init__(self, crawler: Crawler, runtime: FreshRuntime) -> None:
        super().__init__(crawler, runtime)
        config = runtime.config
        #: PageGone items waiting for their responses (None: FRESH_GONE_ITEMS is False).
        self.gone = GoneItems(runtime) if config.changes.gone_items else None
        if self.gone is not None:
            crawler.signals.connect(self.gone.closed, signal=signals.spider_closed)
        spider = getattr(crawler, "spider", None)
        fields = getattr(spider, "fresh_fingerprint_fields", None)
        #: Fields counted: the spider attribute, else the setting (None: every field).
        self.fields = (
            config.fingerprint_fields
            if fields is None
            else parse_fields(fields, f"{type(spider).__name__}.fresh_fingerprint_fields")
        )
        #: What is content on pages without items (FRESH_CONTENT_*, the spider's
        #: ``fresh_content_*`` attributes; checked now, at start-up).
        self.content_rules = config.content_rules.for_spider(spider)
        #: Field rules: the spider attribute's over the setting's, field by field.
        self.rules = merge_rules(
            config.field_rules,
            parse_field_rules(
                getattr(spider, "fresh_field_rules", None),
                f"{type(spider).__name__}.fresh_field_rules",
            ),
        )

    def _judged(self, response: Response) -> bool:
        request = response.request
        if request is None:
            return True
        meta = request.meta
        key = meta.get("fresh_key")
        return (
            not isinstance(key, str) or "fresh_outcome" in meta or key not in self.runtime.leases
        )

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        if self._judged(response):
            async for element in result:
                yield element
        else:
            items: list[Any] = []
            try:
                async for element in result:
                    if isinstance(element, Request) or not ItemAdapter.is_item(element):
                        yield element  # requests go on at once; non-items are Scrapy's
                    else:
                        items.append(element)
            except Exception:
                self._judge(response, items)
                for item in items:
                    yield item
                raise
            self._judge(response, items)
            for item in items:
                yield item
        gone = None if self.gone is None else self.gone.item_for(response)
        if gone is not None:
            yield gone

    def _meta_rules(
        self, meta: Mapping[str, Any]
    ) -> tuple[tuple[str, ...] | None, dict[str, FieldRule]]:
        """The fields and rules for one page: the request's meta keys over the spider's."""
        fields, rules = self.fields, self.rules
        for key in ("fresh_fingerprint_fields", "fresh_field_rules"):
            if meta.get(key) is None:
                continue
            try:
                if key == "fresh_fingerprint_fields":
                    fields = parse_fields(meta[key], f"meta[{key!r}]")
                else:
                    rules = merge_rules(rules, parse_field_rules(meta[key], f"meta[{key!r}]"))
            except ConfigError as exc:
                self.runtime.stat("fresh/bad_meta")
                logger.error(
                    "scrapy_fresh: %(exc)s The spider's rules are used instead.",
                    {"exc": exc},
                    extra={"spider": self.crawler.spider},
                )
        return fields, rules

    def _content_rules(self, meta: Mapping[str, Any]) -> ContentRules:
        """The content rules of one page: the request's ``fresh_content_*`` meta keys
        over the spider's; a bad value is logged and counted, the spider's used."""
        try:
            return self.content_rules.for_request(meta)
        except ConfigError as exc:
            self.runtime.stat("fresh/bad_meta")
            logger.error(
                "scrapy_fresh: %(exc)s The spider's content rules are used instead.",
                {"exc": exc},
                extra={"spider": self.crawler.spider},
            )
            return self.content_rules

    def _judge(self, response: Response, items: list[Any]) -> None:
        request = response.request
        assert request is not None
        fields, rules = self._meta_rules(request.meta)
        hashes = [item_hashes(ItemAdapter(item), fields, rules) for item in items]
        changes_config = self.runtime.config.changes
        item_rules = ItemRules.of(fields, rules)
        schemes = self.runtime.field_schemes

        def rehash(tag: int) -> list[Hashed]:  # by the other rules of that tag
            return [
                ([item_hashes(ItemAdapter(i), old.fields, old.as_dict()) for i in items],
                 old.fields, old.as_dict())
                for old in schemes.candidates(tag)
                if old != item_rules
            ]  # fmt: skip

        if any(hashes):
            text = "\n".join(item_text(item, fields) for item in items)
            kept = kept_items(items, hashes, changes_config, self.runtime.stat)
            values = tuple(ItemAdapter(i) for i in items) if changes_config.keep_items else ()
            schemes.remember(item_rules)
            content = PageContent(
                fingerprint_text(text), items=hashes, fields=fields, rules=rules,
                key_field=changes_config.item_key_field, kept=kept, values=values,
                field_scheme=field_scheme_of(item_rules), rehash=rehash,
            )  # fmt: skip
        else:
            content_rules = self._content_rules(request.meta)
            content = page_content(response, content_rules, self.runtime.schemes)
            # Items whose fields other rules counted (the rules were narrowed): judged
            # by those rules this once, not "gone" (verdict.judge).
            content = dataclasses.replace(
                content, rehash=rehash, field_scheme=field_scheme_of(item_rules)
            )
        result = self.runtime.visits.record_content(
            request.meta,
            content,
            headers=_headers(response),
            content_length=len(response.body),
        )
        if result is None:
            return
        outcome, verdict, told = result
        changes = verdict.item_changes
        items_changed = 0
        for i, item in enumerate(items):
            if content.items is None:
                fresh, names = outcome is not Outcome.UNCHANGED, []
            else:
                names = list(changes[i]) if i < len(changes) else []
                fresh = outcome is Outcome.NEW or bool(names)
                if names and not verdict.new:
                    items_changed += 1
                    for name in names:
                        self.runtime.stat(f"fresh/field_changed/{name}")
            _set_field(item, "fresh_changed", fresh)
            _set_field(item, "fresh_changed_fields", names)
            if self.runtime.pipeline_enabled:
                item_outcome = (
                    outcome
                    if content.items is None or outcome is Outcome.NEW
                    else (Outcome.CHANGED if fresh else Outcome.UNCHANGED)
                )
                self.runtime.item_outcomes[id(item)] = (item, item_outcome)
        self.runtime.stat("fresh/items_changed", items_changed)
        annotate(items, told, self.runtime.stat)
