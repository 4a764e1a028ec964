"""Progress lines: the counts, the pace and the time left (pure parts)."""

from __future__ import annotations

from scrapy_fresh.crawl.progress import Progress


def test_progress_line_counts_pace_and_time_left() -> None:
    progress = Progress(
        left=30, outcomes={"not_modified": 40, "changed": 20, "errors": 10}, elapsed=35.0
    )
    assert progress.total == 100
    assert progress.rate == 2.0
    assert progress.eta_secs == 15.0
    line = progress.line()
    assert "30 of 100 pages left; 70 visited" in line
    assert "not modified 40, changed 20, unchanged 0, new 0, other 10" in line
    assert line.endswith("done in about 15s")
    assert progress.bar(10) == "[#######...]  70% 70/100 ETA 15s"


def test_progress_before_any_visit_has_no_eta() -> None:
    progress = Progress(left=5, outcomes={}, elapsed=3.0)
    assert progress.eta_secs is None
    assert progress.line().endswith("no visit yet")
    assert progress.bar(4) == "[....]   0% 0/5"
