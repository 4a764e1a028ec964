"""Trust in a host's signals (scrapy_fresh.policy.trust): properties over any history."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy.trust import (
    Evidence,
    TrustParams,
    TrustRecord,
    change_chance,
    confirmed_share,
    deferred_due,
    observe,
    observe_quiet,
    quiet_seconds,
    quiet_share,
    quiet_weight,
    trust_score,
    weighted_probability,
)

evidence = st.sampled_from(list(Evidence))
weights = st.floats(min_value=0.0, max_value=1.0)
histories = st.lists(st.tuples(evidence, weights), max_size=60)
Step = tuple[Evidence, float, float]  # evidence, weight (claim probability), chance
steps = st.lists(st.tuples(evidence, weights, weights), max_size=60)


def replay(history: list[tuple[Evidence, float]], p: TrustParams | None = None) -> TrustRecord:
    p = p or TrustParams()
    record = TrustRecord()
    for ev, w in history:
        record = observe(record, ev, p, w)
    return record


def replay_steps(history: list[Step], p: TrustParams | None = None) -> TrustRecord:
    p = p or TrustParams()
    record = TrustRecord()
    for ev, w, q in history:
        record = observe(record, ev, p, w, q)
    return record


@settings(max_examples=300, deadline=None)
@given(steps, evidence, weights, weights)
def test_score_stays_in_the_open_unit_interval_and_moves_the_right_way(
    history: list[Step], ev: Evidence, w: float, q: float
) -> None:
    p = TrustParams(half_life=0)  # without forgetting, one observation's direction is clean
    before = replay_steps(history, p)
    after = observe(before, ev, p, w, q)
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
@given(steps)
def test_same_history_same_record(history: list[Step]) -> None:
    assert replay_steps(history) == replay_steps(history)


@settings(max_examples=200, deadline=None)
@given(steps)
def test_demotion_needs_a_low_score_and_enough_evidence(history: list[Step]) -> None:
    p = TrustParams()
    record = TrustRecord()
    for ev, w, q in history:
        new = observe(record, ev, p, w, q)
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


def test_a_change_the_page_would_have_made_anyway_confirms_less() -> None:
    prior = trust_score(TrustRecord())
    plain = trust_score(observe(TrustRecord(), Evidence.CONFIRMED))
    half = trust_score(observe(TrustRecord(), Evidence.CONFIRMED, chance=0.5))
    sure = trust_score(observe(TrustRecord(), Evidence.CONFIRMED, chance=1.0))
    assert plain > half > prior
    assert sure == pytest.approx(prior)  # no news: a change was certain anyway
    # a claim with nothing changed is a plain refutation whatever the page's rate
    assert observe(TrustRecord(), Evidence.REFUTED, chance=0.9) == observe(
        TrustRecord(), Evidence.REFUTED
    )


def pattern(share: float, n: int) -> list[bool]:
    """``n`` outcomes, a ``share`` of them True, spread evenly (deterministic)."""
    out, credit = [], 0.0
    for _ in range(n):
        credit += share
        out.append(credit >= 1.0)
        credit -= out[-1]
    return out


@pytest.mark.parametrize("q", [0.5, 0.6, 0.7, 0.8])
def test_a_claim_confirmed_only_by_the_pages_own_rate_is_demoted(q: float) -> None:
    """A sitemap stamping "updated now" at every read, on a page that changes between two
    visits a share q of the time: its claims tell nothing the page's rate did not.
    Counted as plain confirmations its score would settle near q, above the threshold,
    so the lie would be believed for ever; discounted by q it is demoted."""
    p = TrustParams()
    record = plain = TrustRecord()
    for changed in pattern(q, 200):
        ev = Evidence.CONFIRMED if changed else Evidence.REFUTED
        record = observe(record, ev, p, chance=q)
        plain = observe(plain, ev, p)
    assert not plain.demoted  # (the rule without the chance)
    assert record.demoted
    assert trust_score(record, p) < 0.45


@pytest.mark.parametrize("precision", [1.0, 0.8, 0.6])
@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
def test_an_honest_hosts_score_tends_to_its_precision_whatever_the_page_rate(
    precision: float, q: float
) -> None:
    """Claims true a share ``precision`` of the time (a false one meets a change only by
    the page's chance q): the score estimates the precision, where the plain count
    settles at precision + (1 - precision) q, rising with the page's rate. A change that
    was likely anyway tells little, so with q = 0.9 the score stays nearer the prior."""
    rng = random.Random(f"{precision}-{q}")
    p = TrustParams()
    record = plain = TrustRecord()
    scores, plain_scores = [], []
    for i in range(3000):
        changed = rng.random() < precision or rng.random() < q
        ev = Evidence.CONFIRMED if changed else Evidence.REFUTED
        record = observe(record, ev, p, chance=q)
        plain = observe(plain, ev, p)
        if i >= 1000:
            scores.append(trust_score(record, p))
            plain_scores.append(trust_score(plain, p))
        assert not record.demoted
    mean, plain_mean = sum(scores) / len(scores), sum(plain_scores) / len(plain_scores)
    assert mean == pytest.approx(precision, abs=0.06 if q <= 0.5 else 0.13)
    if precision < 1.0:
        assert abs(mean - precision) < abs(plain_mean - precision)


def test_an_announcement_that_comes_true_as_often_as_it_said_keeps_trust() -> None:
    """A schedule announcing each update with probability 0.5 that is right half the
    time is honest: trust stays high. Weighting refutations by the probability alone
    (the old rule) sent it to 1/2, on the threshold."""
    p = TrustParams()
    record = TrustRecord()
    for changed in pattern(0.5, 300):
        record = observe(record, Evidence.CONFIRMED if changed else Evidence.REFUTED, p, 0.5)
        assert not record.demoted
    assert trust_score(record, p) > 0.8
    # while one that says 0.9 and is right a quarter of the time loses it
    liar = TrustRecord()
    for changed in pattern(0.25, 300):
        liar = observe(liar, Evidence.CONFIRMED if changed else Evidence.REFUTED, p, 0.9)
    assert liar.demoted


def test_confirmed_share_is_bayes_rule() -> None:
    m, prob, q = 0.6, 0.7, 0.3
    honest, by_chance = prob + (1 - prob) * q, q
    assert confirmed_share(m, prob, q, True) == pytest.approx(
        m * honest / (m * honest + (1 - m) * by_chance)
    )
    assert confirmed_share(m, prob, q, False) == pytest.approx(
        m * (1 - honest) / (m * (1 - honest) + (1 - m) * (1 - by_chance))
    )


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=0, max_value=10_000),
    st.floats(min_value=0.0, max_value=1e9),
    st.floats(min_value=0.0, max_value=1e9),
    st.floats(min_value=0.0, max_value=1e9),
)
def test_change_chance_is_a_probability_growing_with_the_time_elapsed(
    changes: int, watched: float, a: float, more: float
) -> None:
    q = change_chance(changes, watched, a)
    assert 0.0 <= q <= 1.0
    assert change_chance(changes, watched, a + more) >= q
    if changes == 0 or watched == 0:  # no change seen yet: the claim's alone
        assert q == 0.0


def test_change_chance_refuses_negative_input() -> None:
    with pytest.raises(ConfigError, match="elapsed_secs"):
        change_chance(1, 10.0, -1.0)
    with pytest.raises(ConfigError, match="chance"):
        observe(TrustRecord(), Evidence.CONFIRMED, chance=1.5)


@settings(max_examples=200, deadline=None)
@given(weights, steps)
def test_an_announcement_is_as_probable_as_the_host_is_believed(
    prob: float, history: list[Step]
) -> None:
    """P_update = trust x announced probability (eq. 6's precision): a host not known
    yet is believed at the prior, 2/3, not fully."""
    record = replay_steps(history)
    expected = 0.0 if record.demoted else prob * trust_score(record)
    assert weighted_probability(prob, record) == pytest.approx(expected)
    assert weighted_probability(0.9, TrustRecord()) == pytest.approx(0.6)


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"threshold": 0.7, "recover": 0.6}, "recover"),
        ({"prior_confirmed": 0}, "prior_confirmed"),
        ({"missed_weight": 2}, "missed_weight"),
        ({"quiet_evidence": -1}, "quiet_evidence"),
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


# -- quiet claims: max-age, Expires, ttl, skipHours/skipDays ------------------------------

quiet_steps = st.lists(
    st.tuples(st.booleans(), weights, weights), max_size=60
)  # changed, quiet fraction, chance


def replay_quiet(history: list[tuple[bool, float, float]], p: TrustParams) -> TrustRecord:
    record = TrustRecord()
    for changed, f, q in history:
        record = observe_quiet(record, f, changed, p, q)
    return record


@settings(max_examples=300, deadline=None)
@given(
    st.floats(min_value=0.0, max_value=1.0, exclude_min=True, exclude_max=True),
    weights,
    weights,
)
def test_quiet_share_is_bayes_rule_and_moves_the_right_way(m: float, f: float, q: float) -> None:
    """A kept claim never lowers the score, a broken one never raises it; the closed
    form is the likelihood of "the page changes only outside the quiet time"."""
    kept, broken = quiet_share(m, f, q, False), quiet_share(m, f, q, True)
    assert broken == (0.0 if f == 1.0 else m)
    assert m - 1e-12 <= kept <= 1.0
    q_out = -math.expm1((1.0 - f) * math.log1p(-q)) if q < 1.0 else 1.0
    if 1e-9 < q < 1.0:
        assert kept == pytest.approx(m * (1 - q_out) / (m * (1 - q_out) + (1 - m) * (1 - q)))


def test_a_change_inside_the_quiet_time_refutes_and_one_outside_tells_nothing() -> None:
    m = trust_score(TrustRecord())
    assert quiet_share(m, 1.0, 0.3, True) == 0.0
    assert quiet_share(m, 1.0, 0.0, True) == 0.0  # even on a page never seen to change
    # a change the visit found after the quiet time may have come after it: no news,
    # not even counted (an honest quiet time ends at the next change)
    assert quiet_share(m, 0.99, 0.3, True) == pytest.approx(m)
    assert observe_quiet(TrustRecord(), 0.99, True) == TrustRecord()
    assert quiet_share(m, 0.0, 0.3, False) == pytest.approx(m)
    # kept where the page would surely have changed: full confirmation
    assert quiet_share(m, 1.0, 1.0, False) == pytest.approx(1.0)
    # the observation counts as much as the claim covered of the interval
    assert observe_quiet(TrustRecord(), 0.25, False, chance=0.5).evidence == pytest.approx(0.25)


@settings(max_examples=200, deadline=None)
@given(quiet_steps)
def test_quiet_weight_is_a_bounded_share_never_above_the_score(
    history: list[tuple[bool, float, float]],
) -> None:
    p = TrustParams()
    record = replay_quiet(history, p)
    w = quiet_weight(record, p)
    assert 0.0 <= w < 1.0
    assert w <= trust_score(record, p)  # the sceptical prior: never more than the score
    if record.demoted:
        assert w == 0.0


def test_quiet_weight_starts_at_zero_and_is_earned_by_kept_claims() -> None:
    p = TrustParams()
    record, seen = TrustRecord(), []
    for _ in range(30):
        seen.append(quiet_weight(record, p))
        record = observe_quiet(record, 1.0, False, p, chance=0.5)
    assert seen[0] == 0.0
    assert all(b > a for a, b in itertools.pairwise(seen))  # each kept claim earns more
    assert 0.8 < seen[-1] < 1.0
    # the sceptical prior's strength is the setting: more evidence asked, less deferral
    strict = TrustParams(quiet_evidence=30.0)
    assert quiet_weight(record, strict) < quiet_weight(record, p)
    assert quiet_weight(TrustRecord(confirmed=3.0), TrustParams(quiet_evidence=0.0)) == 1.0
    assert quiet_weight(TrustRecord(), TrustParams(quiet_evidence=0.0)) == 0.0


@pytest.mark.parametrize("q", [0.0, 0.3, 0.6, 0.9])
def test_a_host_whose_pages_change_inside_its_quiet_times_is_demoted_in_four(q: float) -> None:
    """Whatever the page's rate, a change found inside the claimed quiet time refutes in
    full: the verification visits a never-judged host gets (weight 0) demote a liar
    after four, before its claims deferred anything."""
    p = TrustParams()
    record = TrustRecord()
    deferred, judged = 0.0, 0
    while not record.demoted and judged < 10:
        deferred += quiet_weight(record, p)
        record = observe_quiet(record, 1.0, True, p, q)
        judged += 1
    assert judged == 4
    assert deferred == 0.0
    assert quiet_weight(record, p) == 0.0


def test_an_honest_host_that_turns_liar_loses_its_deferral() -> None:
    p = TrustParams()
    record = TrustRecord()
    for _ in range(40):
        record = observe_quiet(record, 1.0, False, p, chance=0.5)
    earned = quiet_weight(record, p)
    for _ in range(60):
        record = observe_quiet(record, 1.0, True, p, chance=0.5)
    assert earned > 0.8
    assert record.demoted
    assert quiet_weight(record, p) == 0.0


@settings(max_examples=300, deadline=None)
@given(
    st.floats(min_value=-1e9, max_value=1e9),
    st.floats(min_value=-1e9, max_value=1e9),
    weights,
    weights,
)
def test_deferred_due_stays_between_the_own_and_the_claimed_time(
    own: float, claimed: float, w: float, w2: float
) -> None:
    due = deferred_due(own, claimed, w)
    assert own <= due <= max(own, claimed)
    if w <= w2:
        assert due <= deferred_due(own, claimed, w2)
    assert deferred_due(own, claimed, 0.0) == own
    assert deferred_due(own, claimed, 1.0) == max(own, claimed)


def brute_quiet(
    start: float, end: float, until: float | None, hours: frozenset[int], days: frozenset[int]
) -> float:
    """quiet_seconds by one-second steps (small intervals only)."""
    total = 0
    for t in range(int(start) + 1, int(end) + 1):
        hour = (t - 1) // 3600  # the second (t - 1, t]
        quiet = (until is not None and t <= until) or (
            len(hours) < 24
            and len(days) < 7
            and (hour % 24 in hours or (hour // 24 + 3) % 7 in days)
        )
        total += quiet
    return float(total)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=0, max_value=20 * 86400),
    st.integers(min_value=0, max_value=3 * 86400),
    st.one_of(st.none(), st.integers(min_value=0, max_value=24 * 86400)),
    st.frozensets(st.integers(min_value=0, max_value=23), max_size=6),
    st.frozensets(st.integers(min_value=0, max_value=6), max_size=2),
)
def test_quiet_seconds_counts_the_claimed_quiet_time(
    start: int, length: int, until: int | None, hours: frozenset[int], days: frozenset[int]
) -> None:
    end = start + length
    got = quiet_seconds(float(start), float(end), until=until, hours=hours, days=days)
    assert got == pytest.approx(brute_quiet(start, end, until, hours, days))


def test_quiet_seconds_over_long_spans_uses_the_weekly_pattern() -> None:
    year = 365 * 86400.0
    sundays = quiet_seconds(0.0, year, days=frozenset({6}))
    assert sundays == pytest.approx(52 * 86400.0, rel=0.02)
    nights = quiet_seconds(1234.5, 1234.5 + year, hours=frozenset(range(6)))
    assert nights == pytest.approx(year / 4, rel=1e-3)
    # a window covering every hour says nothing
    assert quiet_seconds(0.0, 86400.0, hours=frozenset(range(24))) == 0.0
    # the not-before part counts from when the claim was made
    assert quiet_seconds(0.0, 100.0, claimed_at=40.0, until=70.0) == 30.0
