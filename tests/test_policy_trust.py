"""Trust in a host's signals (scrapy_fresh.policy.trust): properties over any history."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy.trust import (
    Evidence,
    TrustParams,
    TrustRecord,
    observe,
    trust_score,
    weighted_probability,
)

evidence = st.sampled_from(list(Evidence))
weights = st.floats(min_value=0.0, max_value=1.0)
histories = st.lists(st.tuples(evidence, weights), max_size=60)


def replay(history: list[tuple[Evidence, float]], p: TrustParams | None = None) -> TrustRecord:
    p = p or TrustParams()
    record = TrustRecord()
    for ev, w in history:
        record = observe(record, ev, p, w)
    return record


@settings(max_examples=300, deadline=None)
@given(histories, evidence, weights)
def test_score_stays_in_the_open_unit_interval_and_moves_the_right_way(
    history: list[tuple[Evidence, float]], ev: Evidence, w: float
) -> None:
    p = TrustParams(half_life=0)  # without forgetting, one observation's direction is clean
    before = replay(history, p)
    after = observe(before, ev, p, w)
    s0, s1 = trust_score(before, p), trust_score(after, p)
    assert 0 < s1 < 1
    # A weight near 0 moves the exact score by less than the rounding of (c + a) / (n + a + b):
    # allow a few ulps, never a step the wrong way.
    ulps = 4 * math.ulp(1.0)
    if ev is Evidence.CONFIRMED:
        assert s1 >= s0 - ulps
    else:
        assert s1 <= s0 + ulps
    assert after.observations == before.observations + 1


@settings(max_examples=200, deadline=None)
@given(histories)
def test_same_history_same_record(history: list[tuple[Evidence, float]]) -> None:
    assert replay(history) == replay(history)


@settings(max_examples=200, deadline=None)
@given(histories)
def test_demotion_needs_a_low_score_and_enough_evidence(
    history: list[tuple[Evidence, float]],
) -> None:
    p = TrustParams()
    record = TrustRecord()
    for ev, w in history:
        new = observe(record, ev, p, w)
        score = trust_score(new, p)
        if new.demoted and not record.demoted:  # a demotion happened now
            assert score < p.threshold
            assert new.evidence >= p.min_evidence
        if record.demoted and not new.demoted:  # a restoration happened now
            assert score >= p.recover
        if new.demoted:
            assert score < p.recover
        record = new


@settings(max_examples=100, deadline=None)
@given(histories)
def test_a_liar_is_demoted_and_an_honest_host_earns_trust_back(
    history: list[tuple[Evidence, float]],
) -> None:
    p = TrustParams()
    record = replay(history, p)
    for _ in range(50):
        record = observe(record, Evidence.REFUTED, p)
    assert record.demoted
    steps = 0
    while record.demoted:
        record = observe(record, Evidence.CONFIRMED, p)
        steps += 1
        assert steps < 200, "trust must be earnable back"
    assert trust_score(record, p) >= p.recover


def test_hysteresis_prevents_flapping_at_the_threshold() -> None:
    p = TrustParams()
    record = TrustRecord()
    while not record.demoted:
        record = observe(record, Evidence.REFUTED, p)
    record = observe(record, Evidence.CONFIRMED, p)
    # one good visit lifts the score but not to `recover`: still demoted
    assert trust_score(record, p) < p.recover
    assert record.demoted


def test_weak_claims_and_missed_changes_cost_less() -> None:
    strong = observe(TrustRecord(), Evidence.REFUTED, weight=1.0)
    weak = observe(TrustRecord(), Evidence.REFUTED, weight=0.3)
    missed = observe(TrustRecord(), Evidence.MISSED)
    assert (
        trust_score(strong) < trust_score(missed) < trust_score(weak) < trust_score(TrustRecord())
    )
    assert observe(TrustRecord(), Evidence.REFUTED, weight=0.0).refuted == 0.0


def test_forgetting_lets_old_evidence_fade() -> None:
    p = TrustParams(half_life=10)
    record = TrustRecord(refuted=100.0, demoted=True)
    for _ in range(10):
        record = observe(record, Evidence.CONFIRMED, p, weight=0.0)
    assert record.refuted == pytest.approx(50.0)


@settings(max_examples=200, deadline=None)
@given(weights, histories)
def test_weighted_probability_never_exceeds_the_announcement(
    prob: float, history: list[tuple[Evidence, float]]
) -> None:
    record = replay(history)
    value = weighted_probability(prob, record)
    assert 0.0 <= value <= prob
    if record.demoted:
        assert value == 0.0


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"threshold": 0.7, "recover": 0.6}, "recover"),
        ({"prior_confirmed": 0}, "prior_confirmed"),
        ({"missed_weight": 2}, "missed_weight"),
    ],
)
def test_bad_params_are_refused(kwargs: dict[str, float], word: str) -> None:
    with pytest.raises(ConfigError, match=word):
        TrustParams(**kwargs)


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ConfigError, match="weight"):
        observe(TrustRecord(), Evidence.CONFIRMED, weight=1.5)
    with pytest.raises(TypeError, match="Evidence"):
        observe(TrustRecord(), "confirmed")  # type: ignore[arg-type]
