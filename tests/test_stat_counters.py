"""The add-on's counters reach Scrapy's stats as ``inc_value`` would put them, whatever
the collector (:func:`scrapy_fresh.crawl.runtime.incrementer`)."""

from __future__ import annotations

from typing import Any

from scrapy.statscollectors import DummyStatsCollector, MemoryStatsCollector, StatsCollector
from scrapy.utils.test import get_crawler

from scrapy_fresh.crawl.runtime import incrementer


class CountingCollector(MemoryStatsCollector):
    """A user's collector (one that sends each increment on, say)."""

    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        self.sent: list[tuple[str, int]] = []

    def inc_value(self, key: str, count: int = 1, start: int = 0, spider: Any = None) -> None:
        self.sent.append((key, count))
        super().inc_value(key, count, start)


class SlottedCollector:
    """A collector of the user's own, with ``__slots__`` (no instance dict)."""

    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1, start: int = 0, spider: Any = None) -> None:
        self.values[key] = self.values.get(key, start) + count


def test_a_collector_without_an_instance_dict_gets_its_own_inc_value() -> None:
    slotted = SlottedCollector()
    incrementer(slotted)("fresh/a", 3)
    assert slotted.values == {"fresh/a": 3}


def test_scrapys_collectors_count_as_inc_value_does() -> None:
    for cls in (StatsCollector, MemoryStatsCollector):
        stats, expected = cls(get_crawler()), cls(get_crawler())
        inc = incrementer(stats)
        for name, count in [("fresh/a", 1), ("fresh/b", 5), ("fresh/a", 2)]:
            inc(name, count)
            expected.inc_value(name, count)
        assert stats.get_stats() == expected.get_stats() == {"fresh/a": 3, "fresh/b": 5}


def test_stats_replaced_by_set_stats_are_the_ones_counted() -> None:
    stats = MemoryStatsCollector(get_crawler())
    inc = incrementer(stats)
    inc("fresh/a", 1)
    stats.set_stats({"other": 1})
    inc("fresh/a", 1)
    assert stats.get_stats() == {"other": 1, "fresh/a": 1}


def test_other_collectors_get_their_own_inc_value() -> None:
    counting = CountingCollector(get_crawler())
    incrementer(counting)("fresh/a", 2)
    assert counting.sent == [("fresh/a", 2)]
    assert counting.get_value("fresh/a") == 2
    dummy = DummyStatsCollector(get_crawler())
    incrementer(dummy)("fresh/a", 2)
    assert dummy.get_value("fresh/a") is None
