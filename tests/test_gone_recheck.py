"""Gone pages: checked again after the error back-off (they come due from the store),
and told downstream once per disappearance (the ``gone`` meta record), whatever
happened to their leases in between. On real servers: tests/realsite/test_realsite_changes.py."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from scrapy_fresh.changes.feed import GONE_NAMESPACE
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.base import Status
from tests.conftest import HARNESS_NOW

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.conftest import Harness

URL = "http://shop.test/p3.html"
SEEN = HARNESS_NOW - 10 * 86400  # the last good visit


def page(known: Callable[..., Any], next_due: float, status: Status, errors: int) -> Any:
    return replace(known(URL, last_crawl=SEEN, next_due=next_due), status=status, errors=errors)


def told(h: Harness) -> list[bool]:
    """``became_gone`` of every visit recorded from now on."""
    out: list[bool] = []
    h.runtime.outcome_listeners.append(lambda *args: out.append(h.runtime.visits.became_gone))
    return out


def visit_gone(h: Harness) -> Any:
    [request] = [r for r in h.drain() if r.url == URL]
    h.record(request, Outcome.GONE)
    return h.state(URL)


@pytest.mark.parametrize("status", [Status.GONE, Status.IDLE])
def test_a_page_told_gone_is_not_told_again(
    harness: Callable[..., Harness], known: Callable[..., Any], status: Status
) -> None:
    """Still gone at its re-check, a page is not told again, also when its record is
    idle because a run leased it and gave the lease back unvisited."""
    record = page(known, HARNESS_NOW - 1, status, 2)
    h = harness(records=[record], meta={(GONE_NAMESPACE, record.key): {"last_seen": SEEN}})
    seen = told(h)
    state = visit_gone(h)
    assert seen == [False]
    assert state.status is Status.GONE
    assert state.errors == 3
    assert state.next_due == pytest.approx(HARNESS_NOW + 300.0 * 2**2)  # the back-off doubles


def test_a_page_is_told_gone_once_per_disappearance(
    harness: Callable[..., Harness], known: Callable[..., Any]
) -> None:
    """The first confirmed 404 tells; a page that came back (a later good visit) and
    went again is told again."""
    record = page(known, HARNESS_NOW - 1, Status.IDLE, 1)
    before = {(GONE_NAMESPACE, record.key): {"last_seen": SEEN - 86400}}  # an earlier one
    h = harness(records=[record], meta=before)
    seen = told(h)
    state = visit_gone(h)
    assert seen == [True]
    assert state.status is Status.GONE
    assert h.runtime.store.get_meta(GONE_NAMESPACE, record.key) == {"last_seen": SEEN}


def test_a_gone_page_comes_due_from_the_store_after_its_back_off(
    harness: Callable[..., Harness], known: Callable[..., Any]
) -> None:
    """No link leads to it: the store's due records bring it back when its back-off
    has passed, not before."""
    later = page(known, HARNESS_NOW + 3600, Status.GONE, 2)
    h = harness(records=[later])
    assert [r.url for r in h.drain()] == []
    h = harness(records=[page(known, HARNESS_NOW - 1, Status.GONE, 2)])
    assert [r.url for r in h.drain()] == [URL]
