"""The schedule rules bound when a page is fetched, not only its due time: an early take
within the lookahead and a budget's fill (fetching pages not yet due) leave a page alone
while its rule says no (``min``, windows), in the crawler and in the simulator."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import HARNESS_NOW as NOW

HOUR = 3600.0
MIN_RULE = [{"match": "/held", "min": "1d"}]


def records(known: Any) -> list[Any]:
    return [
        # min 1d after its last visit: allowed from NOW + 0.5 h
        known("http://a.example/held", last_crawl=NOW - 23.5 * HOUR, next_due=NOW + 0.5 * HOUR),
        known("http://a.example/free", last_crawl=NOW - 23.5 * HOUR, next_due=NOW + 0.5 * HOUR),
    ]


@pytest.mark.parametrize("budget", [None, 10])
def test_early_takes_and_the_fill_keep_the_rules(
    harness: Any, known: Any, budget: int | None
) -> None:
    settings: dict[str, Any] = {
        "FRESH_SCHEDULE_RULES": MIN_RULE,
        "FRESH_CYCLE_LOOKAHEAD_SECS": 2 * HOUR,  # both are due within the lookahead
    }
    if budget is not None:
        settings["FRESH_CYCLE_BUDGET"] = budget  # with budget left: the fill
    h = harness(settings, records=records(known))
    assert [r.url for r in h.drain()] == ["http://a.example/free"]


def test_without_rules_both_go_early(harness: Any, known: Any) -> None:
    h = harness({"FRESH_CYCLE_LOOKAHEAD_SECS": 2 * HOUR}, records=records(known))
    assert sorted(r.url for r in h.drain()) == ["http://a.example/free", "http://a.example/held"]


def test_a_window_holds_the_fill_back() -> None:
    """The planner refuses a fill outside a rule's window (the simulator's and the
    crawler's plan_cycle)."""
    from scrapy_fresh.frontier.planner import plan_cycle
    from scrapy_fresh.frontier.scoring import ScoreParams
    from scrapy_fresh.keys import url_key
    from scrapy_fresh.policy.schedule import ScheduleRules
    from scrapy_fresh.store.base import PageState, Status

    rules = ScheduleRules.parse(
        [{"host": "night.test", "window": "22:00-23:00", "tz": "UTC"}], "r"
    )
    noon = 1_700_006_400.0  # 2023-11-15 00:00 UTC
    noon += 12 * HOUR

    def page(host: str) -> PageState:
        url = f"http://{host}/p"
        return PageState(
            key=url_key(url), url=url, host=host, status=Status.IDLE, visits=3,
            last_crawl=noon - 2 * HOUR, next_due=noon + 5 * HOUR, p_c=0.5,
        )  # fmt: skip

    params = ScoreParams(fill=True)
    allowed = lambda s, t: rules.allows(s.url, s.host, s.last_crawl, t)  # noqa: E731
    plan = plan_cycle([page("night.test"), page("day.test")], noon, 5, params, allowed=allowed)
    assert [s.host for _, s in plan.taken + plan.spare] == ["day.test"]
    plan = plan_cycle([page("night.test"), page("day.test")], noon, 5, params)
    assert sorted(s.host for _, s in plan.taken + plan.spare) == ["day.test", "night.test"]
