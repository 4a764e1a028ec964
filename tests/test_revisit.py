"""record_visit: one visit's outcome applied to a record, and the priority score."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_fresh.frontier.revisit import RevisitPolicy, record_visit
from scrapy_fresh.frontier.scoring import ScoreParams, priority_score
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.base import PageState, Provider, SiteState, Status

POLICY = RevisitPolicy(
    decay=1.0, min_refresh_secs=1.0, max_refresh_secs=1e6, default_refresh_secs=100.0
)


def fetched(**kw) -> PageState:
    state = PageState("k" * 40, "http://a.example/", host="a.example", first_seen=0.0)
    record_visit(state, Outcome.NEW, 0.0, POLICY)
    for name, value in kw.items():
        setattr(state, name, value)
    return state


def test_first_fetch_starts_from_the_sites_refresh_time_and_pc():
    site = SiteState("a.example", visits=10, changes=6, p_c=0.6, refresh_secs=3600.0)
    state = PageState("k" * 40, "http://a.example/", host="a.example")
    record_visit(state, Outcome.NEW, 50.0, POLICY, site)
    assert (state.refresh_secs, state.p_c) == (3600.0, 0.6)
    assert state.next_due == 3650.0
    assert state.visits == 0
    assert state.status is Status.IDLE
    assert site.visits == 10  # a first fetch is no visit of the site


def test_first_fetch_without_site_history_uses_the_default():
    state = PageState("k" * 40, "http://a.example/")
    record_visit(state, Outcome.NEW, 0.0, POLICY, SiteState("a.example"))
    assert state.refresh_secs == 100.0


def test_paper_sequence_six_changes_in_ten_visits():
    state = fetched()
    for i, changed in enumerate([True] * 6 + [False] * 4):
        record_visit(state, Outcome.CHANGED if changed else Outcome.UNCHANGED, i + 1.0, POLICY)
    assert (state.visits, state.changes) == (10, 6)
    assert state.p_c == pytest.approx(0.6)


def test_changes_shorten_and_quiet_visits_lengthen_the_refresh_time():
    busy, quiet = fetched(), fetched()
    for i in range(5):
        record_visit(busy, Outcome.CHANGED, i + 1.0, POLICY)
        record_visit(quiet, Outcome.NOT_MODIFIED, i + 1.0, POLICY)
    assert busy.refresh_secs < 100.0 < quiet.refresh_secs
    assert busy.next_due == pytest.approx(5.0 + busy.refresh_secs)
    assert busy.change_rate > (quiet.change_rate or 0.0)
    assert busy.change_bucket > quiet.change_bucket


def test_site_aggregates_pages():
    site = SiteState("a.example")
    a, b = fetched(), fetched()
    record_visit(a, Outcome.CHANGED, 10.0, POLICY, site)
    record_visit(b, Outcome.UNCHANGED, 10.0, POLICY, site)
    assert (site.visits, site.changes, site.p_c) == (2, 1, 0.5)
    assert site.refresh_secs is not None


def test_errors_back_off_and_never_drop_the_url():
    state = fetched()
    dues = []
    for _i in range(4):
        record_visit(state, Outcome.ERROR, 1000.0, POLICY)
        dues.append(state.next_due - 1000.0)
    assert dues == [300.0, 600.0, 1200.0, 2400.0]
    assert state.status is Status.IDLE
    assert state.visits == 0
    record_visit(state, Outcome.UNCHANGED, 5000.0, POLICY)
    assert state.errors == 0


def test_gone_needs_confirmation():
    state = fetched()
    record_visit(state, Outcome.GONE, 10.0, POLICY)
    assert state.status is Status.IDLE
    record_visit(state, Outcome.GONE, 20.0, POLICY)
    assert state.status is Status.GONE


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(list(Outcome)), max_size=40), st.floats(0.01, 1.0))
def test_invariants_hold_for_any_history(outcomes, decay):
    policy = RevisitPolicy(decay=decay)
    state = PageState("k" * 40, "http://a.example/")
    site = SiteState("a.example")
    now = 0.0
    for outcome in outcomes:
        now += 100.0
        record_visit(state, outcome, now, policy, site)
        assert 0.0 <= state.p_c <= 1.0
        assert 0.0 <= site.p_c <= 1.0
        assert policy.min_refresh_secs <= state.refresh_secs <= policy.max_refresh_secs
        assert state.next_due > now
        assert state.changes <= state.visits
        assert 0 <= state.change_bucket <= 255


def test_score_grows_with_staleness_and_knows_providers():
    normal = fetched(last_crawl=0.0)
    assert priority_score(normal, 7200.0) > priority_score(normal, 3600.0) > 0
    smart_missed = fetched(last_crawl=0.0, provider=Provider.SMART, past_updates=[100.0])
    smart_fresh = fetched(last_crawl=0.0, provider=Provider.SMART, past_updates=[])
    assert priority_score(smart_missed, 7200.0) > priority_score(smart_fresh, 7200.0)
    # Xu et al.'s eq. 4 alone: a smart page with no update since its last visit scores 0.
    xu = ScoreParams(rule="xu")
    assert priority_score(smart_missed, 7200.0, xu) > priority_score(smart_fresh, 7200.0, xu)
    assert priority_score(smart_fresh, 7200.0, xu) == 0.0
    sup = fetched(
        last_crawl=0.0,
        provider=Provider.SUPER,
        past_updates=[100.0],
        future_updates=[(5000.0, 1.0)],
    )
    assert priority_score(sup, 7200.0) > 0
    new = PageState("n" * 40, "http://a.example/n", request={"priority": 7})
    assert priority_score(new, 10.0) == 7.0


# -- cost-aware refresh (check_cost) -------------------------------------------------


def test_check_cost_defaults_to_the_papers_rule():
    a, b = fetched(), fetched()
    for i, outcome in enumerate([Outcome.NOT_MODIFIED, Outcome.CHANGED, Outcome.UNCHANGED]):
        record_visit(a, outcome, i + 1.0, POLICY)
        record_visit(b, outcome, i + 1.0, POLICY, None, check_cost=1.0)
        assert a.refresh_secs == b.refresh_secs
        assert a.next_due == b.next_due


def test_check_cost_is_keyword_only():
    with pytest.raises(TypeError):
        record_visit(fetched(), Outcome.CHANGED, 1.0, POLICY, None, 0.5)  # type: ignore[misc]


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, float("nan")])
def test_bad_check_cost_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="check_cost"):
        record_visit(fetched(), Outcome.CHANGED, 1.0, POLICY, check_cost=bad)


def test_a_cheap_304_grows_the_refresh_time_by_its_share_of_a_download():
    paper, cheap = fetched(), fetched()
    record_visit(paper, Outcome.NOT_MODIFIED, 10.0, POLICY)
    record_visit(cheap, Outcome.NOT_MODIFIED, 10.0, POLICY, check_cost=0.05)
    assert paper.refresh_secs == 200.0  # p_c = 0: the paper doubles
    assert cheap.refresh_secs == pytest.approx(100.0 * 2**0.05)
    assert cheap.next_due == pytest.approx(10.0 + cheap.refresh_secs)
    assert cheap.p_c == paper.p_c == 0.0  # p_c stays the plain changes / visits
    assert cheap.visits == paper.visits == 1


def test_a_full_download_steps_in_full_even_on_a_cheap_page():
    paper, cheap = fetched(), fetched()
    record_visit(paper, Outcome.UNCHANGED, 10.0, POLICY)
    record_visit(cheap, Outcome.UNCHANGED, 10.0, POLICY, check_cost=0.05)
    assert cheap.refresh_secs == paper.refresh_secs == 200.0


def test_a_page_with_cheap_checks_is_checked_more_often():
    """One change every 8 visits: the paper lets the refresh time grow (p_c 1/8 < p_l);
    with 304s at 5% of a download it shrinks (1/8 of the bytes is not a waste)."""
    paper, cheap = fetched(), fetched()
    now = 0.0
    for i in range(1, 65):
        now += 100.0
        outcome = Outcome.CHANGED if i % 8 == 0 else Outcome.NOT_MODIFIED
        record_visit(paper, outcome, now, POLICY)
        record_visit(cheap, outcome, now, POLICY, check_cost=0.05)
    assert cheap.p_c == pytest.approx(paper.p_c)
    assert cheap.refresh_secs < 100.0 < paper.refresh_secs


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from([Outcome.CHANGED, Outcome.UNCHANGED, Outcome.NOT_MODIFIED]), max_size=40
    ),
    st.floats(0.001, 1.0),
)
def test_cost_aware_invariants(outcomes, check_cost):
    policy = RevisitPolicy()
    state, site = PageState("k" * 40, "http://a.example/"), SiteState("a.example")
    record_visit(state, Outcome.NEW, 0.0, policy, site, check_cost=check_cost)
    now = 0.0
    for outcome in outcomes:
        now += 100.0
        before = state.refresh_secs
        record_visit(state, outcome, now, policy, site, check_cost=check_cost)
        assert policy.min_refresh_secs <= state.refresh_secs <= policy.max_refresh_secs
        assert state.next_due == now + state.refresh_secs
        if outcome is Outcome.NOT_MODIFIED and state.p_c == 0.0:
            # quiet: it grows, by at most the paper's doubling
            assert before <= state.refresh_secs <= min(2 * before, policy.max_refresh_secs)
