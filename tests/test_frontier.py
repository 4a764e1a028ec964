"""Frontier ordering: politeness per host, best page first, no starvation, stream mix."""

from __future__ import annotations

import itertools
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_fresh.frontier import Frontier, Politeness, Stream


def drain(frontier: Frontier, start: float = 0.0, step: float = 0.1, limit: int = 100000):
    """Pop everything, advancing a fake clock by ``step`` whenever nothing is ready."""
    now, out = start, []
    for _ in range(limit):
        if not len(frontier):
            break
        popped = frontier.pop(now)
        if popped is None:
            ready = frontier.next_ready_time()
            assert ready is not None
            assert ready > now
            now = ready
            continue
        out.append((now, popped))
    return out


def test_highest_score_first_within_a_host():
    f = Frontier()
    for key, score in [("a", 1.0), ("b", 5.0), ("c", 3.0)]:
        f.push(key, "h", score, Stream.REFRESH, now=0)
    assert [p.key for _, p in drain(f)] == ["b", "c", "a"]


def test_delay_between_two_requests_to_one_host():
    f = Frontier(Politeness(default_delay=2.0))
    for i in range(5):
        f.push(f"k{i}", "h", 1.0, Stream.REFRESH, now=0)
    times = [t for t, _ in drain(f)]
    assert times == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_crawl_delay_of_one_host_does_not_hold_back_the_others():
    pol = Politeness(default_delay=0.0)
    pol.set_delay("slow", 10.0)
    f = Frontier(pol)
    for i in range(5):
        f.push(f"s{i}", "slow", 9.0, Stream.REFRESH, now=0)
        f.push(f"f{i}", "fast", 1.0, Stream.REFRESH, now=0)
    out = drain(f)
    fast_done = max(t for t, p in out if p.host == "fast")
    assert fast_done == 0.0  # all fast pages went while slow waited
    slow_times = [t for t, p in out if p.host == "slow"]
    assert slow_times == [0.0, 10.0, 20.0, 30.0, 40.0]


def test_big_host_does_not_starve_small_ones():
    f = Frontier(Politeness(default_delay=1.0))
    for i in range(1000):
        f.push(f"big{i}", "big", 100.0, Stream.REFRESH, now=0)
    for h in range(10):
        f.push(f"small{h}", f"small{h}", 1.0, Stream.REFRESH, now=0)
    first = [p.host for _, p in drain(f, limit=12)][:11]
    assert sorted(first) == sorted(["big"] + [f"small{h}" for h in range(10)])


def test_new_share_mixes_streams():
    f = Frontier(new_share=0.25)
    for i in range(100):
        f.push(f"n{i}", f"h{i}", 1.0, Stream.NEW, now=0)
        f.push(f"r{i}", f"g{i}", 1.0, Stream.REFRESH, now=0)
    first = [p.stream for _, p in drain(f)][:80]
    assert first.count(Stream.NEW) == 20


def test_one_stream_alone_is_served_fully():
    f = Frontier(new_share=0.0)
    for i in range(5):
        f.push(f"n{i}", "h", 1.0, Stream.NEW, now=0)
    assert len(drain(f)) == 5


def test_push_twice_and_discard():
    f = Frontier()
    assert f.push("a", "h", 1.0, Stream.NEW, now=0)
    assert not f.push("a", "h", 2.0, Stream.REFRESH, now=0)
    assert "a" in f
    assert f.discard("a")
    assert f.pop(0) is None
    assert f.next_ready_time() is None or len(f) == 0


def test_back_off_holds_a_host_until_its_time():
    pol = Politeness()
    f = Frontier(pol)
    f.push("a", "h", 1.0, Stream.REFRESH, now=0)
    pol.back_off("h", 30.0)
    assert f.pop(10.0) is None
    assert f.next_ready_time() == 30.0
    assert f.pop(30.0).key == "a"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.floats(0, 100)), min_size=1, max_size=60),
    st.floats(0.0, 3.0),
    st.floats(0.0, 1.0),
)
def test_every_page_once_and_politeness_always_holds(pages, delay, share):
    f = Frontier(Politeness(default_delay=delay), new_share=share)
    for i, (host, score) in enumerate(pages):
        f.push(f"k{i}", f"h{host}", score, Stream.NEW if i % 3 else Stream.REFRESH, now=0)
    out = drain(f)
    assert sorted(p.key for _, p in out) == sorted(f"k{i}" for i in range(len(pages)))
    by_host = defaultdict(list)
    for t, p in out:
        by_host[p.host].append((t, p))
    for visits in by_host.values():
        times = [t for t, _ in visits]
        assert all(b - a >= delay - 1e-9 for a, b in itertools.pairwise(times))
        for stream in Stream:  # within a host and stream, scores never go up
            scores = [p.score for _, p in visits if p.stream is stream]
            assert scores == sorted(scores, reverse=True)


def test_bad_share_is_rejected():
    with pytest.raises(ValueError, match="new_share"):
        Frontier(new_share=1.5)


def test_a_page_queued_again_after_discard_is_popped_once_with_its_new_score():
    frontier = Frontier()
    frontier.push("a", "h", 1.0, Stream.REFRESH, 0.0)
    frontier.push("b", "h", 5.0, Stream.REFRESH, 0.0)
    assert frontier.discard("a")
    assert frontier.push("a", "h", 9.0, Stream.REFRESH, 0.0)
    popped = []
    while (p := frontier.pop(0.0)) is not None:
        popped.append((p.key, p.score))
    assert popped == [("a", 9.0), ("b", 5.0)]
    assert len(frontier) == 0
