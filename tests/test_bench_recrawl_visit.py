"""``bench/recrawl_visit.py`` runs what a re-crawl runs: every due page handed out once,
checked conditionally and recorded as not modified, each with its visit log lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.recrawl_visit import Round, timed


def test_every_page_is_handed_out_checked_and_recorded_once(tmp_path: Path) -> None:
    bench = Round(40, tmp_path)
    assert bench.run() == 40
    stats = bench.crawler.stats
    assert stats.get_value("fresh/conditional_requests") == 40
    assert stats.get_value("fresh/not_modified") == 40
    bench.close()
    lines = [json.loads(line) for line in (tmp_path / "visits.jsonl").read_text().splitlines()]
    assert sorted(e["e"] for e in lines).count("visit") == 40
    assert {e["outcome"] for e in lines if e["e"] == "visit"} == {"not_modified"}
    assert sorted(e["e"] for e in lines).count("fetch") == 40


def test_a_round_is_timed_per_page() -> None:
    assert timed(20) > 0


def test_a_part_switched_off_is_left_out_of_the_round(tmp_path: Path) -> None:
    """``--without``: the pages are handed out and recorded all the same, with no visit
    log written and no provider signals taken."""
    bench = Round(30, tmp_path, ("visit-log", "provider-signals"))
    assert (bench.log, bench.providers) == (None, None)
    assert bench.run() == 30
    assert bench.crawler.stats.get_value("fresh/not_modified") == 30
    bench.close()
    assert not (tmp_path / "visits.jsonl").exists()


def test_a_counted_run_hands_out_the_pages_asked_and_no_more() -> None:
    """``--callgrind``'s runs: ``pages`` of a bigger store, else it says so."""
    from bench.recrawl_visit import counted_pages

    counted_pages(20, 10, ())
    counted_pages(20, 20, ("visit-log",))
    with pytest.raises(RuntimeError, match="fewer than 21 pages"):
        counted_pages(20, 21, ())
