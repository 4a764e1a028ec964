"""Every ``FRESH_*`` setting refuses wrong types and out-of-range values at start-up, with a
:class:`~scrapy_fresh.exceptions.ConfigError` naming the setting (issue 18, item 4).

(None is not walked: Scrapy's settings read None as "not set", the default.) The walk reads the settings from :mod:`scrapy_fresh.default_settings`, so a setting added
there is walked too; one whose default has a type not listed here fails the walk.
"""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_fresh import default_settings
from scrapy_fresh.config import FreshConfig
from scrapy_fresh.exceptions import ConfigError

SETTINGS = sorted(name for name in vars(default_settings) if name.startswith("FRESH_"))
#: Values of the wrong type, by the type of the default.
WRONG_TYPES: dict[type, list[Any]] = {
    bool: ["maybe", 2, [True], "yes"],
    int: ["many", [1], True, float("nan"), float("inf"), {"a": 1}],
    float: ["many", [1.0], False, float("nan"), float("-inf"), {"a": 1}],
    str: [5, ["x"], {"a": 1}, b"x"],
    dict: ["example.com", [1], 5],
    list: [5, {"a": 1}, b"x", [3]],
    type(None): [True, {"a": 1}, [5]],
}
#: Values of the right type outside the setting's range.
OUT_OF_RANGE: dict[str, list[Any]] = {
    "FRESH_CHECK": ["sometimes", ""],
    "FRESH_CONTENT_EXCLUDE": ["div[[", ["p", "xpath://p["]],
    "FRESH_CONTENT_IGNORE": ["(", ["ok", "["]],
    "FRESH_CONTENT_INCLUDE": ["main >", "/html/body["],
    "FRESH_CONTENT_NOISE_RULES": [["dates", "weather"]],
    "FRESH_CYCLE_LOOKAHEAD_SECS": [-1, "-1"],
    "FRESH_FINGERPRINT_FIELDS": [[], "", ["a", 3]],
    "FRESH_FINGERPRINT_THRESHOLD_BITS": [64, 99, 2.5],
    "FRESH_GONE_CONFIRMATIONS": [0],
    "FRESH_MIN_CHECK_COST_RATIO": [0, 1.5],
    "FRESH_MODE": ["forever"],
    "FRESH_NEW_URL_SHARE": [1.01],
    "FRESH_PC_LOWER": [0, 1.5],
    "FRESH_PC_UPPER": [0, 2],
    "FRESH_PRIORITY_ALPHA": [1.5],
    "FRESH_PRIORITY_BETA": [1.5],
    "FRESH_PRIORITY_SCORE": ["best"],
    "FRESH_PRIORITY_WINDOW_CYCLES": [1],
    "FRESH_PROMETHEUS_ADDRESS": ["", "local host"],
    "FRESH_PROMETHEUS_PORT": [70000, 9100],  # 9100: cycle mode has no endpoint
    "FRESH_PROVIDERS": [{"example.com": "mega"}, {"": "smart"}, {5: "smart"}],
    "FRESH_PROVIDER_MAX_BYTES": [0],
    "FRESH_PROVIDER_MAX_ENTRIES": [0],
    "FRESH_PROVIDER_MAX_INFLATED_BYTES": [0],
    "FRESH_PROVIDER_MAX_SITEMAPS": [0],
    "FRESH_REDIS_KEY": ["%(project)s:fresh", "", "%d"],
    "FRESH_SCHEDULE_RULES": [
        "[{",
        [{"host": "a.test"}],
        [{"host": "a.test", "window": "25:00-26:00"}],
        [{"match": "(", "max": 1}],
        [{"host": "a.test", "max": "soon"}],
    ],
    "FRESH_SQLITE_PATH": ["", "fresh/%(name)s.sqlite", "100%"],
    "FRESH_STORE": ["postgres", "os.system", "collections.OrderedDict", "nowhere.Store", ""],
    "FRESH_TRUST_RECOVER": [1.5],
    "FRESH_TRUST_THRESHOLD": [-0.1, 1.5],
}


def bad_values() -> list[tuple[str, Any]]:
    cases: list[tuple[str, Any]] = []
    for name in SETTINGS:
        default = getattr(default_settings, name)
        assert type(default) in WRONG_TYPES, f"{name}: add wrong values for {type(default)}"
        cases.extend((name, value) for value in WRONG_TYPES[type(default)])
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            cases.append((name, -1e18))  # every number has a lower bound
        cases.extend((name, value) for value in OUT_OF_RANGE.get(name, []))
    return cases


@pytest.mark.parametrize(("name", "value"), bad_values())
def test_a_bad_value_is_refused_naming_the_setting(name: str, value: Any) -> None:
    with pytest.raises(ConfigError) as refused:
        FreshConfig.from_settings(Settings({name: value}))
    assert str(refused.value).startswith(name)


def test_the_defaults_and_their_string_forms_are_accepted() -> None:
    FreshConfig.from_settings(Settings({}))
    as_text = {
        name: str(getattr(default_settings, name))
        for name in SETTINGS
        if isinstance(getattr(default_settings, name), (bool, int, float))
    }
    FreshConfig.from_settings(Settings(as_text))  # the form `scrapy crawl -s` gives
