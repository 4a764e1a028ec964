"""The add-on builds the same component stack as the documented manual settings, and bad
settings stop a crawl at start-up with an error that names them."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from scrapy import Spider
from scrapy.core.downloader.middleware import DownloaderMiddlewareManager
from scrapy.core.spidermw import SpiderMiddlewareManager
from scrapy.exceptions import NotConfigured
from scrapy.extension import ExtensionManager
from scrapy.pipelines import ItemPipelineManager
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

import scrapy_fresh
from scrapy_fresh.crawl.middlewares import FreshDownloaderMiddleware, FreshSpiderMiddleware
from scrapy_fresh.crawl.pipelines import FreshItemPipeline
from scrapy_fresh.crawl.progress import FreshProgress
from scrapy_fresh.crawl.runtime import FreshRuntime
from scrapy_fresh.crawl.scheduler import FreshScheduler
from scrapy_fresh.crawl.stores import resolve_sqlite_path
from scrapy_fresh.exceptions import ConfigError

DOCS = Path(__file__).resolve().parent.parent / "docs" / "topics" / "scheduler.rst"

#: The manual setup docs/topics/scheduler.rst shows.
MANUAL = {
    "SCHEDULER": "scrapy_fresh.crawl.scheduler.FreshScheduler",
    "DOWNLOADER_MIDDLEWARES": {
        "scrapy_fresh.crawl.middlewares.FreshDownloaderMiddleware": 540,
        "scrapy_fresh.crawl.provider_middleware.FreshProviderMiddleware": 535,
        "scrapy_fresh.crawl.middlewares.FreshReachabilityMiddleware": 555,
    },
    "SPIDER_MIDDLEWARES": {
        "scrapy_fresh.crawl.middlewares.FreshSpiderMiddleware": 40,
    },
    "ITEM_PIPELINES": {"scrapy_fresh.crawl.pipelines.FreshItemPipeline": 100},
    "EXTENSIONS": {
        "scrapy_fresh.crawl.visitlog.VisitLog": 0,
        "scrapy_fresh.crawl.progress.FreshProgress": 0,
        "scrapy_fresh.crawl.prometheus.FreshPrometheus": 0,
        "scrapy_fresh.crawl.webhook.WebhookDelivery": 0,
    },
}


class _Spider(Spider):
    name = "stack"


def _stack(settings: dict[str, Any]) -> tuple[Any, ...]:
    crawler = get_crawler(_Spider, {"FRESH_STORE": "memory", **settings})
    return (
        load_object(crawler.settings["SCHEDULER"]),
        [type(m) for m in DownloaderMiddlewareManager.from_crawler(crawler).middlewares],
        [type(m) for m in SpiderMiddlewareManager.from_crawler(crawler).middlewares],
        [type(m) for m in ItemPipelineManager.from_crawler(crawler).middlewares],
        [type(m) for m in ExtensionManager.from_crawler(crawler).middlewares],
    )


def test_addon_stack_equals_manual_stack() -> None:
    addon = _stack({"ADDONS": {"scrapy_fresh.Addon": 0}})
    manual = _stack(MANUAL)
    assert addon == manual
    scheduler, downloader, spider, pipelines, extensions = addon
    assert FreshProgress in extensions
    assert scheduler is FreshScheduler
    assert FreshDownloaderMiddleware in downloader
    assert FreshSpiderMiddleware in spider
    spider_names = [c.__name__ for c in spider]
    # Below HttpErrorMiddleware (50): sees the output of a 404 whatever became of it
    # (PageGone items), and nothing of the add-on's between them.
    assert (
        spider_names.index("FreshSpiderMiddleware")
        == spider_names.index("HttpErrorMiddleware") - 1
    )
    assert "PageGoneMiddleware" not in spider_names  # FreshSpiderMiddleware sends them
    assert pipelines == []  # nothing to drop (FRESH_DROP_UNCHANGED_ITEMS False): not built
    names = [c.__name__ for c in downloader]
    # Between UserAgentMiddleware (500) and RetryMiddleware (550): sees final answers only.
    assert names.index("FreshDownloaderMiddleware") == names.index("RetryMiddleware") - 1
    # Just above RetryMiddleware: sees every attempt, the retried ones too.
    assert names.index("FreshReachabilityMiddleware") == names.index("RetryMiddleware") + 1


def test_the_pipeline_is_built_when_unchanged_items_are_to_be_dropped() -> None:
    drop = {"FRESH_DROP_UNCHANGED_ITEMS": True}
    addon = _stack({"ADDONS": {"scrapy_fresh.Addon": 0}, **drop})
    assert addon == _stack({**MANUAL, **drop})
    assert addon[3] == [FreshItemPipeline]


def test_manual_setup_is_the_documented_one() -> None:
    text = DOCS.read_text()
    for name, value in MANUAL.items():
        if isinstance(value, str):
            assert f'{name} = "{value}"' in text
        else:
            for path, order in value.items():
                assert f'"{path}": {order}' in text


def test_addon_is_exported_and_respects_fresh_enabled() -> None:
    assert scrapy_fresh.Addon is load_object("scrapy_fresh.Addon")
    scheduler, downloader, _, pipelines, _ = _stack(
        {"ADDONS": {"scrapy_fresh.Addon": 0}, "FRESH_ENABLED": False}
    )
    assert scheduler is not FreshScheduler
    assert FreshDownloaderMiddleware not in downloader
    assert pipelines == []


def test_components_refuse_to_run_when_disabled() -> None:
    crawler = get_crawler(_Spider, {"FRESH_ENABLED": False, "FRESH_STORE": "memory"})
    for component in (FreshDownloaderMiddleware, FreshSpiderMiddleware, FreshItemPipeline):
        with pytest.raises(NotConfigured):
            component.from_crawler(crawler)


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"FRESH_MODE": "sometimes"}, ["FRESH_MODE", "'sometimes'"]),
        ({"FRESH_CHECK": "maybe"}, ["FRESH_CHECK", "'maybe'"]),
        ({"FRESH_REDIS_KEY": "%(project)s:fresh"}, ["FRESH_REDIS_KEY", "placeholder"]),
        ({"FRESH_STORE": "nowhere.Store"}, ["FRESH_STORE", "'nowhere.Store'", "imported"]),
        ({"FRESH_PROVIDERS": {"example.com": "mega"}}, ["FRESH_PROVIDERS", "'mega'"]),
        ({"FRESH_CYCLE_BUDGET": -3}, ["FRESH_CYCLE_BUDGET"]),
    ],
)
def test_bad_settings_fail_when_components_are_built(
    settings: dict[str, Any], words: list[str]
) -> None:
    with pytest.raises(ConfigError) as info:  # when the crawler builds its extensions
        get_crawler(_Spider, {"ADDONS": {"scrapy_fresh.Addon": 0}, **settings})
    for word in words:
        assert word in str(info.value)


def test_store_that_is_not_a_store_is_refused() -> None:
    crawler = get_crawler(_Spider, {"FRESH_STORE": "collections.OrderedDict"})
    with pytest.raises(ConfigError, match="StateStore protocol"):
        _ = FreshRuntime.of(crawler).store


def test_relative_sqlite_path_goes_under_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    resolved = Path(resolve_sqlite_path("fresh/state.sqlite"))
    assert resolved.name == "state.sqlite"
    assert resolved.parent.is_dir()
    assert ".scrapy" in resolved.parts
    assert resolve_sqlite_path(str(tmp_path / "x.sqlite")) == str(tmp_path / "x.sqlite")


@pytest.mark.slow
def test_bad_spider_provider_stops_the_crawl_at_start_up(crawl: Any, tmp_path: Path) -> None:
    result = crawl(
        {
            "settings": {
                "ADDONS": {"scrapy_fresh.Addon": 0},
                "FRESH_SQLITE_PATH": str(tmp_path / "s.sqlite"),
            },
            "provider": "mega",
            "start": [{"url": "http://127.0.0.1:9/never"}],
        },
        tmp_path,
        check=False,
    )
    assert result.returncode != 0
    assert "ConfigError" in result.log
    assert "FreshTestSpider.fresh_provider ('mega')" in result.log
    assert "Crawled (" not in result.log


@pytest.mark.slow
def test_bad_setting_stops_the_crawl_at_start_up(crawl: Any, tmp_path: Path) -> None:
    result = crawl(
        {
            "settings": {
                "ADDONS": {"scrapy_fresh.Addon": 0},
                "EXTENSIONS": {},
                "FRESH_MODE": "now and then",
            },
            "start": [{"url": "http://127.0.0.1:9/never"}],
        },
        tmp_path,
        check=False,
    )
    assert result.returncode != 0
    assert "FRESH_MODE ('now and then')" in result.log


def test_addon_warns_when_a_project_scheduler_wins(caplog: pytest.LogCaptureFixture) -> None:
    crawler = get_crawler(
        _Spider,
        {"ADDONS": {"scrapy_fresh.Addon": 0}, "SCHEDULER": "scrapy.core.scheduler.Scheduler"},
    )
    assert crawler.settings["SCHEDULER"] == "scrapy.core.scheduler.Scheduler"
    assert "needs scrapy_fresh.crawl.scheduler.FreshScheduler" in caplog.text


def test_each_spider_has_its_own_sqlite_store_by_default(tmp_path: Path) -> None:
    class Other(Spider):
        name = "other"

    paths = []
    for spidercls in (_Spider, Other):
        settings = {"FRESH_SQLITE_PATH": str(tmp_path / "%(spider)s.sqlite")}
        runtime = FreshRuntime.of(get_crawler(spidercls, settings))
        paths.append(runtime.store.path)  # type: ignore[attr-defined]
        runtime.close_store()
    assert paths == [str(tmp_path / f"{_Spider.name}.sqlite"), str(tmp_path / "other.sqlite")]
    assert all(Path(p).is_file() for p in paths)


@pytest.mark.parametrize("path", ["fresh/%(name)s.sqlite", "fresh/100%.sqlite"])
def test_sqlite_path_with_a_bad_placeholder_fails_at_start_up(path: str) -> None:
    with pytest.raises(ConfigError, match=r"FRESH_SQLITE_PATH .* %\(spider\)s"):
        FreshRuntime.of(get_crawler(_Spider, {"FRESH_SQLITE_PATH": path}))


@pytest.mark.parametrize("value", ["maybe", 2, [True]])
def test_a_bad_fresh_enabled_names_the_setting_when_the_addon_starts(value: object) -> None:
    """Not Scrapy's unnamed ValueError from getbool: the add-on reads the flag itself."""

    class S(Spider):
        name = "s"

    with pytest.raises(ConfigError, match="FRESH_ENABLED"):
        get_crawler(S, {"ADDONS": {"scrapy_fresh.Addon": 0}, "FRESH_ENABLED": value})


def test_the_old_page_gone_middleware_left_in_settings_warns_and_is_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A manual setup copied from older docs names PageGoneMiddleware (its items are now
    FreshSpiderMiddleware's): the crawl starts with the same stack, and says so."""
    old = {
        **MANUAL,
        "SPIDER_MIDDLEWARES": {
            **MANUAL["SPIDER_MIDDLEWARES"],
            "scrapy_fresh.crawl.gone.PageGoneMiddleware": 45,
        },
    }
    with caplog.at_level(logging.WARNING):
        assert _stack(old) == _stack(MANUAL)
    assert "PageGoneMiddleware is no longer needed" in caplog.text
