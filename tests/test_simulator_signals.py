"""Simulated publishers read through the crawl's SignalTracker (issue 5, "Measured")."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from scrapy_fresh.commands import main
from scrapy_fresh.frontier.scoring import ScoreParams
from scrapy_fresh.providers.ledger import iter_trust
from scrapy_fresh.providers.signals import Signals
from scrapy_fresh.providers.tracker import SignalTracker
from scrapy_fresh.simulator import ProviderMix, SimConfig, Trace, run, write_trace
from scrapy_fresh.simulator.engine import Context
from scrapy_fresh.simulator.policies import Fresh, page_host
from scrapy_fresh.simulator.providers import Level
from scrapy_fresh.simulator.publishers import (
    LIE_ANNOUNCED,
    LIE_PROBABILITY,
    LIE_QUIET_PERIOD_SECS,
    LIE_QUIET_SECS,
    Publishers,
    liar_hosts,
)
from scrapy_fresh.simulator.replay import POLICIES
from scrapy_fresh.simulator.signalled import SignalledFresh
from scrapy_fresh.simulator.trace import DAY
from scrapy_fresh.store.base import Provider

EVERY = {"smart_share": 0.5, "super_share": 0.5}


def hosts_trace(hosts: int = 20, per_host: int = 2, days: float = 20, seed: int = 3) -> Trace:
    """Pages ``http://h<k>.example/p<j>`` changing as Poisson processes of mixed rates."""
    rng = random.Random(seed)
    changes: dict[str, list[float]] = {}
    for h in range(hosts):
        for j in range(per_host):
            rate = rng.choice([0.25, 0.5, 1.0, 2.0, 4.0]) / DAY
            times: list[float] = []
            t = rng.expovariate(rate)
            while t < days * DAY:
                times.append(t)
                t += rng.expovariate(rate)
            changes[f"http://h{h}.example/p{j}"] = times
    return Trace.from_changes(changes, 0.0, days * DAY, source="hosts")


def two_hosts() -> Trace:
    return Trace.from_changes(
        {
            "http://a.example/1": [100.0, 5000.0, 9000.0],
            "http://a.example/2": [200.0],
            "http://b.example/1": [300.0, 7000.0],
        },
        0.0,
        20000.0,
    )


def test_honest_publishers_tell_each_change_once_with_its_true_time() -> None:
    trace = two_hosts()
    levels = [Level.SMART, Level.NORMAL, Level.SUPER]
    hosts = [page_host(p) for p in trace.pages]
    mix = ProviderMix(signals="honest", precision=1.0, horizon_secs=3000.0)
    pubs = Publishers(trace, levels, hosts, mix, seed=0)
    assert pubs.liars == set()
    first = pubs.publish("a.example", 1000.0)
    assert [(s.url, s.when, s.signal) for s in first.past] == [
        ("http://a.example/1", 100.0, "sitemap")
    ]  # the normal page publishes nothing
    assert first.announced == []  # a smart page announces nothing
    assert len(pubs.publish("a.example", 1000.0)) == 0  # nothing new
    later = pubs.publish("a.example", 9500.0)
    assert [s.when for s in later.past] == [5000.0, 9000.0]
    b = pubs.publish("b.example", 4500.0)
    assert [s.when for s in b.past] == [300.0]
    # the change at 7000 is announced 3000 s ahead, with the true probability
    assert [(a.when, a.probability, a.signal) for a in b.announced] == [(7000.0, 1.0, "schedule")]
    assert pubs.publish("nowhere.example", 1.0).past == []


def test_lying_publishers_stamp_now_and_announce_an_hourly_schedule() -> None:
    trace = two_hosts()
    levels = [Level.SMART, Level.NORMAL, Level.SUPER]
    hosts = [page_host(p) for p in trace.pages]
    pubs = Publishers(trace, levels, hosts, ProviderMix(signals="lying", liar_share=1.0), 0)
    assert pubs.liars == {"a.example", "b.example"}
    assert pubs.lying_pages() == 2
    said = pubs.publish("b.example", 5000.0)
    assert [(s.when, s.signal) for s in said.past] == [(5000.0, "sitemap")]
    assert [(a.when, a.probability) for a in said.announced] == [
        (3600.0 * k, LIE_PROBABILITY) for k in range(2, 2 + LIE_ANNOUNCED)
    ]
    assert [s.when for s in pubs.publish("b.example", 6000.0).past] == [6000.0]  # every read


def test_a_lying_sitemap_may_stamp_todays_date_instead() -> None:
    trace = two_hosts()
    levels = [Level.SMART, Level.NORMAL, Level.SUPER]
    hosts = [page_host(p) for p in trace.pages]
    mix = ProviderMix(signals="lying", liar_share=1.0)
    pubs = Publishers(trace, levels, hosts, mix, 0, lie_stamp="day")
    said = pubs.publish("a.example", 3 * DAY + 5000.0)
    assert [(s.when, s.signal) for s in said.past] == [(3 * DAY, "sitemap")]  # midnight
    with pytest.raises(ValueError, match="lie_stamp"):
        Publishers(trace, levels, hosts, mix, 0, lie_stamp="tomorrow")


def test_liars_are_a_seeded_share_of_the_hosts() -> None:
    hosts = [f"h{i}" for i in range(20)]
    first = liar_hosts(hosts, 0.3, random.Random("liars-1"))
    assert len(first) == 6
    assert first == liar_hosts(hosts, 0.3, random.Random("liars-1"))
    assert first != liar_hosts(hosts, 0.3, random.Random("liars-2"))
    assert liar_hosts(hosts, 0.0, random.Random(0)) == set()


def test_the_fresh_policy_uses_the_crawls_tracker_only_with_publishers() -> None:
    trace = hosts_trace(hosts=4, days=3)
    seen: list[object] = []

    def factory(ctx: Context) -> object:
        policy = POLICIES["fresh"](ctx)
        seen.append(policy)
        return policy

    run(trace, "fresh", SimConfig(), factories={"fresh": factory})  # type: ignore[dict-item]
    mix = ProviderMix(**EVERY, signals="honest")
    run(trace, "fresh", SimConfig(providers=mix), factories={"fresh": factory})  # type: ignore[dict-item]
    plain, signalled = seen
    assert type(plain) is Fresh
    assert isinstance(signalled, SignalledFresh)
    assert isinstance(signalled.tracker, SignalTracker)
    # levels fixed by hand: every page publishes, so none is normal
    assert {s.provider for s in signalled.states} <= {Provider.SMART, Provider.SUPER}
    assert signalled.counts["fresh/providers/claims/sitemap"] > 0


def test_autodetect_matches_hand_and_trust_holds_off_liars() -> None:
    trace = hosts_trace()
    base = SimConfig(budget=1.0, seed=1, measure="trace")
    policies: dict[str, SignalledFresh] = {}

    def replay(name: str, **mix: object) -> float:
        def factory(ctx: Context) -> SignalledFresh:
            policy = POLICIES["fresh"](ctx)
            assert isinstance(policy, SignalledFresh)
            policies[name] = policy
            return policy

        config = replace(base, providers=ProviderMix(**EVERY, **mix))  # type: ignore[arg-type]
        return run(trace, "fresh", config, factories={"fresh": factory}).metrics.freshness  # type: ignore[dict-item]

    normal = run(trace, "fresh", base).metrics.freshness
    hand = replay("hand", signals="honest")
    auto = replay("auto", signals="honest", autodetect=True)
    untrusted = replay("untrusted", signals="lying", autodetect=True, trust=False)
    trusted = replay("trusted", signals="lying", autodetect=True)
    assert hand > normal + 0.05  # honest signals are worth having
    assert auto >= hand - 0.005
    assert untrusted < auto - 0.03  # lies cost freshness
    assert trusted > untrusted  # and trust wins some of it back
    liars = policies["trusted"].publishers.liars
    assert len(liars) == 6
    demoted_liars, demoted_honest = policies["trusted"].demoted_hosts()
    assert len(demoted_liars) >= len(liars) // 2
    assert demoted_honest == set()
    assert policies["untrusted"].demoted_hosts() == (set(), set())
    assert not any(k.startswith("fresh/trust/") for k in policies["untrusted"].counts)


def test_publisher_options_are_validated() -> None:
    with pytest.raises(ValueError, match="signals"):
        ProviderMix(signals="maybe")
    with pytest.raises(ValueError, match="need publishers"):
        ProviderMix(autodetect=True)
    with pytest.raises(ValueError, match="liar_share"):
        ProviderMix(signals="lying", liar_share=1.5)


@pytest.fixture
def trace_file(tmp_path):
    trace = hosts_trace(hosts=6, days=4)
    return str(
        write_trace(tmp_path / "t.csv.gz", dict(zip(trace.pages, trace.changes, strict=True)))
    )


def test_simulate_command_signals_options(trace_file, capsys) -> None:
    args = ["simulate", "--trace", trace_file, "--smart-share", "0.5", "--super-share", "0.5"]
    assert (
        main([*args, "--signals", "lying", "--liar-share", "0.5", "--autodetect", "--json"]) == 0
    )
    row = json.loads(capsys.readouterr().out)
    assert row["providers"]["signals"] == "lying"
    assert row["providers"]["liar_share"] == 0.5
    assert row["providers"]["autodetect"] is True
    assert row["providers"]["trust"] is True
    assert main([*args, "--signals", "honest", "--no-trust", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["providers"]["trust"] is False
    assert row["providers"]["liar_share"] == 0.0
    assert main([*args, "--autodetect"]) == 2
    assert "--autodetect and --no-trust need --signals" in capsys.readouterr().err
    assert main([*args, "--signals", "lying", "--liar-share", "2"]) == 2
    assert "liar_share" in capsys.readouterr().err


def test_quiet_liars_say_a_week_of_quiet_and_honest_super_pages_their_next_change() -> None:
    trace = two_hosts()
    levels = [Level.SUPER, Level.NORMAL, Level.SUPER]
    hosts = [page_host(p) for p in trace.pages]
    mix = ProviderMix(signals="lying", liar_share=0.5, horizon_secs=3000.0)
    pubs = Publishers(trace, levels, hosts, mix, 0, lie="quiet")
    (liar,) = pubs.liars
    honest = ({"a.example", "b.example"} - pubs.liars).pop()
    liar_page = next(p for p in trace.pages if page_host(p) == liar)
    said = pubs.own(liar_page, 1000.0)
    assert [(n.when, n.signal) for n in said.not_before] == [(1000.0 + LIE_QUIET_SECS, "cache")]
    far = pubs.publish(liar, 1000.0)  # no sitemap; a yearly schedule for its super page
    assert far.past == []
    assert [a.when for a in far.announced] == [LIE_QUIET_PERIOD_SECS]
    honest_page = next(p for p in trace.pages if page_host(p) == honest)
    changes = trace.changes[trace.pages.index(honest_page)]
    until = pubs.own(honest_page, 150.0).not_before[0].when
    nxt = min(t for t in changes if t > 150.0)
    assert until == min(nxt - 1.0, 150.0 + 3000.0)  # quiet until just before its change
    assert len(pubs.own("http://a.example/2", 150.0)) == 0  # a normal page says nothing
    assert len(Publishers(trace, levels, hosts, mix, 0).own(liar_page, 1000.0)) == 0
    with pytest.raises(ValueError, match="lie"):
        Publishers(trace, levels, hosts, mix, 0, lie="everything")


def test_quiet_liars_are_demoted_and_their_pages_fetched_at_their_own_rate() -> None:
    """Liars whose pages say "no change for a week" while changing by the day: without
    trust their pages wait a week each time; with it their claims are judged at visits
    made at the pages' own due times, the liars demoted (kind ``cache``), and freshness
    comes back near what perfect detection (the liars saying nothing) gives. Due pages
    only (no cycle fill): the due times decide, as in a crawl without a budget."""
    trace = hosts_trace(days=30)
    base = SimConfig(budget=2.0, seed=1, measure="trace", score=ScoreParams(fill=False))
    policies: dict[str, SignalledFresh] = {}

    class Quiet(SignalledFresh):
        lie = "quiet"

    class Ignored(Quiet):
        def own_signals(self, url: str, now: float) -> Signals:
            if self.publishers.host_of.get(url) in self.publishers.liars:
                return Signals()
            return super().own_signals(url, now)

        def signals(self, prev: float, now: float) -> None:
            self.readers = [h for h in self.readers if h not in self.publishers.liars]
            super().signals(prev, now)

    def replay(name: str, cls: type[SignalledFresh] = Quiet, **mix: object) -> float:
        def factory(ctx: Context) -> SignalledFresh:
            policies[name] = cls(ctx)
            return policies[name]

        config = replace(base, providers=ProviderMix(**EVERY, autodetect=True, **mix))  # type: ignore[arg-type]
        return run(trace, "fresh", config, factories={"fresh": factory}).metrics.freshness  # type: ignore[dict-item]

    untrusted = replay("untrusted", signals="lying", trust=False)
    trusted = replay("trusted", signals="lying")
    ignored = replay("ignored", Ignored, signals="lying")
    assert trusted > untrusted + 0.05
    assert trusted > 0.95 * ignored
    policy = policies["trusted"]
    demoted = {
        t.host for t in iter_trust(policy.trust_store) if t.kind == "cache" and t.record.demoted
    }
    assert demoted == policy.publishers.liars
    assert policy.counts["fresh/trust/quiet/demoted"] == len(policy.publishers.liars)
    assert policy.counts["fresh/trust/quiet/kept"] > 0  # honest quiet claims judged too
