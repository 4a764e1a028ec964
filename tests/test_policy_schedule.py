"""Schedule rules (FRESH_SCHEDULE_RULES): the pure maths, the settings' checks, and
record_visit applying them."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_fresh.config import FreshConfig
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.frontier.revisit import RevisitPolicy, record_visit
from scrapy_fresh.keys import url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.policy.schedule import ScheduleRules, parse_duration
from scrapy_fresh.store.base import PageState, Status


def utc(text: str) -> float:
    """Unix time of an ISO date-time in UTC."""
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc).timestamp()


def rules(*raw: dict[str, Any]) -> ScheduleRules:
    return ScheduleRules.parse(list(raw), "FRESH_SCHEDULE_RULES")


URL, HOST = "https://news.example/feed.xml", "news.example"


def test_min_max_and_every_bound_the_interval_since_the_last_visit() -> None:
    r = rules({"match": "/feed", "min": "1h", "max": "1d"})
    assert r.due(URL, HOST, last_visit=1000.0, proposed=1060.0) == 1000.0 + 3600
    assert r.due(URL, HOST, last_visit=1000.0, proposed=1000.0 + 5 * 86400) == 1000.0 + 86400
    assert r.due(URL, HOST, last_visit=1000.0, proposed=9000.0) == 9000.0  # within: kept
    fixed = rules({"host": HOST, "every": 600})
    assert fixed.due(URL, HOST, 50.0, 99999.0) == fixed.due(URL, HOST, 50.0, 60.0) == 650.0
    assert fixed.due(URL, HOST, None, 60.0) == 60.0  # never visited: nothing to count from


def test_windows_move_the_due_time_to_the_next_opening_to_the_second() -> None:
    r = rules({"host": HOST, "every": "10m", "window": "06:00-22:00", "tz": "UTC"})
    # visited 21:55: due 22:05, outside the window -> 06:00:00 the next day
    assert r.due(URL, HOST, utc("2030-01-07T21:55:00"), 0.0) == utc("2030-01-08T06:00:00")
    # visited 05:40 (an explicit early fetch): due 05:50 -> 06:00 the same day
    assert r.due(URL, HOST, utc("2030-01-07T05:40:00"), 0.0) == utc("2030-01-07T06:00:00")
    # in the window: as the rule says
    assert r.due(URL, HOST, utc("2030-01-07T12:00:00"), 0.0) == utc("2030-01-07T12:10:00")
    # the end is excluded: due at 22:00:00 exactly -> the next morning
    assert r.due(URL, HOST, utc("2030-01-07T21:50:00"), 0.0) == utc("2030-01-08T06:00:00")
    seconds = rules({"host": HOST, "window": "06:00:04-06:00:11", "tz": "UTC"})
    assert seconds.due(URL, HOST, None, utc("2030-01-07T06:00:01")) == utc("2030-01-07T06:00:04")


def test_windows_over_midnight_days_and_time_zones() -> None:
    night = rules({"host": HOST, "window": "22:00-06:00", "tz": "UTC"})
    assert night.due(URL, HOST, None, utc("2030-01-07T23:30:00")) == utc("2030-01-07T23:30:00")
    assert night.due(URL, HOST, None, utc("2030-01-07T03:00:00")) == utc("2030-01-07T03:00:00")
    assert night.due(URL, HOST, None, utc("2030-01-07T12:00:00")) == utc("2030-01-07T22:00:00")
    # 2030-01-11 is a Friday: Saturday's due time goes to Monday 00:00
    weekdays = rules({"host": HOST, "days": ["mon", "tue", "wed", "thu", "fri"], "tz": "UTC"})
    assert weekdays.due(URL, HOST, None, utc("2030-01-12T10:00:00")) == utc("2030-01-14T00:00:00")
    assert weekdays.due(URL, HOST, None, utc("2030-01-11T10:00:00")) == utc("2030-01-11T10:00:00")
    # Berlin is UTC+1 in January, UTC+2 in July (summer time): the window follows local time
    berlin = rules({"host": HOST, "window": "06:00-22:00", "tz": "Europe/Berlin"})
    assert berlin.due(URL, HOST, None, utc("2030-01-07T03:00:00")) == utc("2030-01-07T05:00:00")
    assert berlin.due(URL, HOST, None, utc("2030-07-08T03:00:00")) == utc("2030-07-08T04:00:00")


def test_the_first_matching_rule_applies_and_hosts_cover_subdomains() -> None:
    r = rules(
        {"match": r"/archive/", "min": "30d"},
        {"host": "example.com", "max": "1d"},
    )
    archive = "https://www.example.com/archive/2001"
    assert r.due(archive, "www.example.com", 0.0, 10.0) == 30 * 86400.0
    assert r.due("https://www.example.com/p", "www.example.com:8080", 0.0, 9e9) == 86400.0
    assert r.due("https://notexample.com/p", "notexample.com", 0.0, 9e9) == 9e9
    assert r.rule_for("https://other.test/", "other.test") is None


def test_durations() -> None:
    assert [parse_duration(v, "x") for v in (30, "90", "10m", "6h", "1d", "2w", "1.5h")] == [
        30.0, 90.0, 600.0, 21600.0, 86400.0, 1209600.0, 5400.0,
    ]  # fmt: skip
    for bad in ("", "10 minutes", "-5", 0, True, "1y", float("nan")):
        with pytest.raises(ConfigError, match="positive duration"):
            parse_duration(bad, "x")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"host": "a.test", "max": "1d"}, r"must be a list of rule dicts"),
        (["every 10m"], r"FRESH_SCHEDULE_RULES\[0\] \('every 10m'\) must be a dict"),
        ([{"max": "1d"}], r"FRESH_SCHEDULE_RULES\[0\] needs a 'host' or a 'match'"),
        ([{"host": "a.test"}], r"FRESH_SCHEDULE_RULES\[0\] says nothing about when"),
        (
            [{"host": "a.test", "max": "1d"}, {"host": "b.test", "window": "6-22"}],
            r"FRESH_SCHEDULE_RULES\[1\]\['window'\] \('6-22'\) must be a time window",
        ),
        ([{"match": "(", "max": 5}], r"FRESH_SCHEDULE_RULES\[0\]\['match'\] \('\('\) is not a"),
        ([{"host": "a", "min": "2d", "max": "1d"}], r"\[0\]: 'min' \('2d'\) exceeds 'max'"),
        ([{"host": "a", "every": 5, "max": 9}], r"\[0\] gives 'every' with 'min' or 'max'"),
        ([{"host": "a", "max": 5, "tz": "Mars/Olympus"}], r"\['tz'\] \('Mars/Olympus'\) is not"),
        ([{"host": "a", "days": ["someday"]}], r"\['days'\] \('someday'\) is not a weekday"),
        ([{"host": "a", "max": 5, "often": 1}], r"\[0\] has unknown keys often"),
        ([{"host": "a", "window": "10:00-10:00"}], r"is empty"),
        ([{"host": "a", "window": "10:00-25:00"}], r"must be a time window"),
        ("[{bad json", r"FRESH_SCHEDULE_RULES .* is not a JSON list of rules"),
    ],
)
def test_a_bad_rule_stops_the_crawl_naming_the_setting_and_the_rule(
    raw: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        FreshConfig.from_settings(Settings({"FRESH_SCHEDULE_RULES": raw}))


def test_rules_from_the_command_line_are_json() -> None:
    config = FreshConfig.from_settings(
        Settings({"FRESH_SCHEDULE_RULES": '[{"host": "a.test", "every": "10m"}]'})
    )
    (rule,) = config.schedule_rules.rules
    assert (rule.host, rule.min_secs, rule.max_secs) == ("a.test", 600.0, 600.0)
    assert rule.describe() == "host a.test every 10m"


def _page(url: str, **fields: Any) -> PageState:
    return PageState(url_key(url), url, host=url.split("/")[2], **fields)


@pytest.mark.parametrize("outcome", list(Outcome))
def test_record_visit_bounds_every_outcome(outcome: Outcome) -> None:
    """Whatever the visit found, the page's rule has the last word on its due time."""
    window = {"host": "news.example", "window": "06:00-22:00", "tz": "UTC", "min": "1h"}
    policy = RevisitPolicy(min_refresh_secs=60.0, rules=rules(window))
    now = utc("2030-01-07T21:30:00")
    state = _page(URL, status=Status.IN_FLIGHT, visits=3, last_crawl=now - 600, p_c=0.5,
                  refresh_secs=600.0, first_seen=now - 86400)  # fmt: skip
    plain = _page("https://other.example/x", status=Status.IN_FLIGHT, visits=3,
                  last_crawl=now - 600, p_c=0.5, refresh_secs=600.0, first_seen=now - 86400)  # fmt: skip
    record_visit(state, outcome, now, policy)
    record_visit(plain, outcome, now, policy)
    assert state.next_due == policy.rules.due(URL, "news.example", now, plain.next_due)
    assert state.next_due >= now + 3600  # min 1h
    assert dt.datetime.fromtimestamp(state.next_due, dt.timezone.utc).hour in range(6, 22)
    assert state.refresh_secs == plain.refresh_secs  # the learned time is kept as learned
