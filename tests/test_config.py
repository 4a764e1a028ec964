"""FreshConfig.from_settings: every FRESH_* setting validated once, errors name the setting."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from scrapy_fresh import default_settings
from scrapy_fresh.config import FreshConfig
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.store.base import Provider


def test_defaults_match_default_settings_module():
    config = FreshConfig.from_settings(Settings())
    assert config.store == default_settings.FRESH_STORE
    assert config.mode == default_settings.FRESH_MODE
    assert config.pc_lower == default_settings.FRESH_PC_LOWER
    assert config.pc_upper == default_settings.FRESH_PC_UPPER
    assert config.default_refresh_secs == default_settings.FRESH_DEFAULT_REFRESH_SECS
    assert config.check == "auto"
    assert config.providers == {}


def test_values_are_parsed():
    config = FreshConfig.from_settings(
        Settings(
            {
                "FRESH_MODE": "Continuous",
                "FRESH_CYCLE_BUDGET": "500",
                "FRESH_PROVIDERS": {"Example.com": "SUPER"},
                "FRESH_FINGERPRINT_FIELDS": "title, body",
                "FRESH_STORE": "memory",
            }
        )
    )
    assert config.mode == "continuous"
    assert config.cycle_budget == 500
    assert config.providers == {"example.com": Provider.SUPER}
    assert config.fingerprint_fields == ("title", "body")
    assert config.store == "memory"


@pytest.mark.parametrize(
    ("settings", "names"),
    [
        ({"FRESH_MODE": "sometimes"}, ["FRESH_MODE", "'sometimes'", "cycle, continuous"]),
        ({"FRESH_CHECK": "maybe"}, ["FRESH_CHECK", "auto, conditional, head, none"]),
        ({"FRESH_STORE": "postgres"}, ["FRESH_STORE", "'postgres'"]),
        ({"FRESH_CYCLE_BUDGET": -1}, ["FRESH_CYCLE_BUDGET", "at least 0"]),
        ({"FRESH_CYCLE_BUDGET": 2.5}, ["FRESH_CYCLE_BUDGET", "whole number"]),
        ({"FRESH_CYCLE_BUDGET": "ten"}, ["FRESH_CYCLE_BUDGET", "'ten'"]),
        ({"FRESH_MIN_REFRESH_SECS": 0}, ["FRESH_MIN_REFRESH_SECS", "higher than 0"]),
        ({"FRESH_MAX_REFRESH_SECS": float("inf")}, ["FRESH_MAX_REFRESH_SECS", "finite"]),
        ({"FRESH_PC_UPPER": 1.5}, ["FRESH_PC_UPPER", "at most 1"]),
        ({"FRESH_PC_LOWER": 0.7, "FRESH_PC_UPPER": 0.3}, ["FRESH_PC_LOWER", "FRESH_PC_UPPER"]),
        (
            {"FRESH_MIN_REFRESH_SECS": 100, "FRESH_MAX_REFRESH_SECS": 10},
            ["FRESH_MIN_REFRESH_SECS", "FRESH_MAX_REFRESH_SECS"],
        ),
        ({"FRESH_DEFAULT_REFRESH_SECS": 10}, ["FRESH_DEFAULT_REFRESH_SECS", "between"]),
        ({"FRESH_PROVIDERS": {"example.com": "mega"}}, ["FRESH_PROVIDERS", "'mega'", "smart"]),
        ({"FRESH_PROVIDERS": ["example.com"]}, ["FRESH_PROVIDERS", "dict"]),
        ({"FRESH_NEW_URL_SHARE": True}, ["FRESH_NEW_URL_SHARE", "boolean"]),
        ({"FRESH_FINGERPRINT_FIELDS": 3}, ["FRESH_FINGERPRINT_FIELDS"]),
        ({"FRESH_PRIORITY_WINDOW_CYCLES": 1}, ["FRESH_PRIORITY_WINDOW_CYCLES", "at least 2"]),
        ({"FRESH_TRUST_QUIET_EVIDENCE": -1}, ["FRESH_TRUST_QUIET_EVIDENCE", "at least 0"]),
        ({"FRESH_TRUST_QUIET_EVIDENCE": "many"}, ["FRESH_TRUST_QUIET_EVIDENCE", "'many'"]),
        (
            {"FRESH_STORE": "redis", "FRESH_CYCLE_BUDGET": 100},
            ["FRESH_CYCLE_BUDGET", "FRESH_STORE", "CLOSESPIDER_PAGECOUNT"],
        ),
    ],
)
def test_bad_values_name_the_setting(settings, names):
    with pytest.raises(ConfigError) as info:
        FreshConfig.from_settings(Settings(settings))
    for name in names:
        assert name in str(info.value)
    assert isinstance(info.value, ValueError)


def test_provider_for_host_prefers_the_longest_domain():
    config = FreshConfig.from_settings(
        Settings(
            {
                "FRESH_PROVIDERS": {"example.com": "smart", "news.example.com": "super"},
            }
        )
    )
    assert config.provider_for_host("news.example.com") is Provider.SUPER
    assert config.provider_for_host("www.example.com:8080") is Provider.SMART
    assert config.provider_for_host("example.org") is None


def test_every_setting_is_documented():
    from pathlib import Path

    doc = (Path(__file__).parent.parent / "docs" / "reference" / "settings.rst").read_text()
    names = [n for n in dir(default_settings) if n.startswith("FRESH_")]
    assert names, "default_settings defines no FRESH_ setting"
    missing = [n for n in names if f".. setting:: {n}\n" not in doc]
    assert missing == []
