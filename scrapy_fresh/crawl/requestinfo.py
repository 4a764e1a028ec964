"""Requests as JSON data, and back: what a record keeps to fetch its page again.

A record (:class:`~scrapy_fresh.store.base.PageState`) stores ``request``, a JSON dict
made by :func:`request_info`; the scheduler rebuilds the request of a due record with
:func:`rebuild_request`, so that a spider need not yield it again. Callbacks and
errbacks are kept by name and must be methods of the spider; only the JSON-safe part of
``meta`` is kept, without the keys Scrapy and scrapy_fresh set for one download.

.. warning:: The layout of the dict is internal and may change between versions.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request

if TYPE_CHECKING:
    from scrapy import Spider

__all__ = ["TRANSIENT_META_KEYS", "rebuild_request", "request_info"]

logger = logging.getLogger(__name__)

#: Meta keys that describe one download, not the page: never stored.
TRANSIENT_META_KEYS = frozenset(
    {
        "depth",
        "download_slot",
        "download_latency",
        "redirect_times",
        "redirect_ttl",
        "redirect_urls",
        "redirect_reasons",
        "retry_times",
        "fresh_key",
        "fresh_stream",
        "fresh_outcome",
        "fresh_probe",
        "fresh_probed",
    }
)


def _json_safe(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def _method_name(func: Any, spider: Spider | None) -> str | None:
    if func is None:
        return None
    name = getattr(func, "__name__", None)
    if (
        spider is not None
        and isinstance(name, str)
        and getattr(func, "__self__", None) is spider
        and getattr(spider, name, None) == func
    ):
        return name
    logger.debug(
        "Callback %(func)r is not a method of the spider; a rebuilt request will use parse().",
        {"func": func},
    )
    return None


def request_info(
    request: Request, spider: Spider | None, record_url: str | None = None
) -> dict[str, Any]:
    """Return the JSON-safe data :func:`rebuild_request` needs to fetch ``request`` again.

    The URL is left out when it is ``record_url``, the URL the record keeps anyway.
    """
    info: dict[str, Any] = {} if request.url == record_url else {"url": request.url}
    if request.method != "GET":
        info["method"] = request.method
    callback = _method_name(request.callback, spider)
    if callback is not None:
        info["callback"] = callback
    errback = _method_name(request.errback, spider)
    if errback is not None:
        info["errback"] = errback
    meta = {
        k: v
        for k, v in request.meta.items()
        if isinstance(k, str)
        and k not in TRANSIENT_META_KEYS
        and not k.startswith("_")
        and _json_safe(v)
    }
    if meta:
        info["meta"] = meta
    if request.priority:
        info["priority"] = request.priority
    if request.cb_kwargs and _json_safe(request.cb_kwargs):
        info["cb_kwargs"] = dict(request.cb_kwargs)
    if request.body:
        info["body"] = base64.b64encode(request.body).decode("ascii")
    headers = {
        k.decode("latin-1"): [v.decode("latin-1") for v in vs] for k, vs in request.headers.items()
    }
    if headers:
        info["headers"] = headers
    return info


def _resolve(spider: Spider, name: Any, what: str, url: str) -> Any:
    if not isinstance(name, str):
        return None
    method = getattr(spider, name, None)
    if not callable(method):
        logger.warning(
            "The spider has no %(what)s %(name)r any more; %(url)s is fetched with the default.",
            {"what": what, "name": name, "url": url},
            extra={"spider": spider},
        )
        return None
    return method


def rebuild_request(info: dict[str, Any], url: str, spider: Spider) -> Request:
    """Build the request of a record from its :func:`request_info` dict (``url`` if empty)."""
    target = str(info.get("url") or url)
    body = base64.b64decode(info["body"]) if info.get("body") else b""
    return Request(
        target,
        method=str(info.get("method", "GET")),
        callback=_resolve(spider, info.get("callback"), "callback", target),
        errback=_resolve(spider, info.get("errback"), "errback", target),
        meta=dict(info.get("meta") or {}),
        priority=int(info.get("priority", 0) or 0),
        cb_kwargs=dict(info.get("cb_kwargs") or {}),
        headers=info.get("headers") or None,
        body=body,
    )


def is_robots_request(request: Request) -> bool:
    """Whether ``request`` is the robots.txt request of Scrapy's RobotsTxtMiddleware."""
    if not request.meta.get("dont_obey_robotstxt"):
        return False
    try:
        return urlsplit(request.url).path == "/robots.txt"
    except ValueError:
        return False


def fetches_robots(request: Request) -> bool:
    """Whether ``request`` fetches a robots.txt: Scrapy's own (ROBOTSTXT_OBEY) or the
    one provider discovery asks for (``meta["fresh_robots"]``)."""
    return bool(request.meta.get("fresh_robots")) or is_robots_request(request)
