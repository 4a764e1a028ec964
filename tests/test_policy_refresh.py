"""Sharma & Dixit refresh rule, degree of success, decay and cold start (policy/refresh.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_fresh.policy.refresh import (
    DEFAULT_DECAY,
    DEFAULT_EMA_WEIGHT,
    DEFAULT_HALF_LIFE_VISITS,
    SuccessCounter,
    adjust_refresh,
    clamp_refresh,
    cold_start,
    decay_for_half_life,
    decayed_success,
    degree_of_success,
    next_refresh_time,
    refresh_delta,
    site_refresh_secs,
    site_success,
    unit_step,
)

FAST = settings(max_examples=60, deadline=None, database=None)

probability = st.floats(min_value=0.0, max_value=1.0)
refresh_secs = st.floats(min_value=1e-3, max_value=1e9)


@st.composite
def thresholds(draw: st.DrawFn) -> tuple[float, float]:
    p_l = draw(st.floats(min_value=0.01, max_value=0.98))
    p_g = draw(st.floats(min_value=p_l + 0.01, max_value=1.0))
    return p_l, p_g


# The paper's worked examples (seed sharma-dixit-self-adjusting-refresh-time, Section III).


def test_case_1_p_c_between_thresholds_keeps_refresh_time():
    assert next_refresh_time(100, 0.6, 0.3, 0.7) == pytest.approx(100, abs=1e-3)
    assert refresh_delta(100, 0.6, 0.3, 0.7) == 0.0


def test_case_2_p_c_above_p_g_shortens_refresh_time():
    assert refresh_delta(100, 0.85, 0.3, 0.7) == pytest.approx(-150 / 7, abs=1e-3)
    assert next_refresh_time(100, 0.85, 0.3, 0.7) == pytest.approx(78.571428, abs=1e-3)


def test_case_3_p_c_below_p_l_lengthens_refresh_time():
    # The paper carries its rounded 78.58 into case 3 and prints 91.67.
    assert refresh_delta(78.58, 0.25, 0.3, 0.7) == pytest.approx(13.0967, abs=1e-3)
    assert next_refresh_time(78.58, 0.25, 0.3, 0.7) == pytest.approx(91.676666, abs=1e-3)
    assert next_refresh_time(78.58, 0.25, 0.3, 0.7) == pytest.approx(91.67, abs=1e-2)


def test_unit_step_is_zero_at_zero():
    assert unit_step(0.0) == 0.0
    assert unit_step(1e-12) == 1.0
    # p_c exactly on a threshold: u(0) = 0, so nothing changes.
    assert next_refresh_time(100, 0.7, 0.3, 0.7) == 100
    assert next_refresh_time(100, 0.3, 0.3, 0.7) == 100


def test_threshold_errors_name_argument_value_and_expectation():
    with pytest.raises(ValueError, match=r"^p_l \(0\.8\) must be lower than p_g \(0\.7\)\.$"):
        next_refresh_time(100, 0.5, 0.8, 0.7)
    with pytest.raises(ValueError, match=r"p_l \(0\.5\) must be lower than p_g \(0\.5\)"):
        next_refresh_time(100, 0.5, 0.5, 0.5)
    with pytest.raises(ValueError, match=r"p_l \(0\.0\) must be within \(0, 1\)"):
        next_refresh_time(100, 0.5, 0.0, 0.7)
    with pytest.raises(ValueError, match=r"p_g \(1\.5\) must be within \(0, 1\]"):
        next_refresh_time(100, 0.5, 0.3, 1.5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"t_n": 0}, r"t_n \(0\) must be higher than 0"),
        ({"t_n": -5.0}, r"t_n \(-5\.0\) must be higher than 0"),
        ({"p_c": 1.2}, r"p_c \(1\.2\) must be within \[0, 1\]"),
        ({"p_c": float("nan")}, r"p_c \(nan\) must be a finite number"),
        ({"t_n": float("inf")}, r"t_n \(inf\) must be a finite number"),
    ],
)
def test_bad_values_raise_value_error(kwargs, message):
    args = {"t_n": 100.0, "p_c": 0.5, "p_l": 0.3, "p_g": 0.7, **kwargs}
    with pytest.raises(ValueError, match=message):
        next_refresh_time(**args)


@pytest.mark.parametrize("bad", ["100", None, True, [100]])
def test_wrong_types_raise_type_error(bad):
    with pytest.raises(TypeError, match="t_n must be a real number"):
        next_refresh_time(bad, 0.5, 0.3, 0.7)


@FAST
@given(t_n=refresh_secs, p_c=probability, bounds=thresholds())
def test_next_refresh_time_is_finite_and_within_the_rule_bounds(t_n, p_c, bounds):
    p_l, p_g = bounds
    result = next_refresh_time(t_n, p_c, p_l, p_g)
    assert math.isfinite(result)
    assert result <= 2 * t_n * (1 + 1e-12)
    assert result >= t_n * (2 - 1 / p_g) - 1e-9 * t_n
    if p_l <= p_c <= p_g:
        assert result == t_n


@FAST
@given(t_n=refresh_secs, a=probability, b=probability, bounds=thresholds())
def test_refresh_time_never_grows_as_p_c_rises(t_n, a, b, bounds):
    p_l, p_g = bounds
    low, high = min(a, b), max(a, b)
    assert next_refresh_time(t_n, high, p_l, p_g) <= next_refresh_time(t_n, low, p_l, p_g)
    distinct = high - low > 1e-6
    if distinct and p_g < low:  # strictly above p_g: strictly shorter as p_c rises
        assert next_refresh_time(t_n, high, p_l, p_g) < next_refresh_time(t_n, low, p_l, p_g)
        assert next_refresh_time(t_n, low, p_l, p_g) < t_n
    if distinct and high < p_l:  # strictly below p_l: longer than before
        assert next_refresh_time(t_n, low, p_l, p_g) > next_refresh_time(t_n, high, p_l, p_g)
        assert next_refresh_time(t_n, high, p_l, p_g) > t_n


@FAST
@given(
    t_n=refresh_secs,
    p_c=probability,
    bounds=thresholds(),
    low=st.floats(min_value=1e-3, max_value=1e6),
    span=st.floats(min_value=0.0, max_value=1e6),
)
def test_adjust_refresh_stays_within_min_and_max(t_n, p_c, bounds, low, span):
    p_l, p_g = bounds
    high = low + span
    result = adjust_refresh(t_n, p_c, p_l, p_g, min_secs=low, max_secs=high)
    assert low <= result <= high
    raw = next_refresh_time(t_n, p_c, p_l, p_g)
    if low <= raw <= high:
        assert result == raw


def test_adjust_refresh_rescues_the_non_positive_raw_rule():
    # p_g <= 1/2 and p_c >= 2 p_g: eq. 1-2 give 0 or less.
    assert next_refresh_time(100, 1.0, 0.2, 0.4) < 0
    assert adjust_refresh(100, 1.0, 0.2, 0.4, min_secs=60, max_secs=1000) == 60


def test_clamp_refresh_validates_bounds():
    assert clamp_refresh(5.0, 1.0, 10.0) == 5.0
    with pytest.raises(ValueError, match=r"max_secs \(1\.0\) must not be lower than min_secs"):
        clamp_refresh(5.0, 10.0, 1.0)
    with pytest.raises(ValueError, match=r"min_secs \(0\) must be higher than 0"):
        clamp_refresh(5.0, 0, 10.0)


def test_degree_of_success_paper_example_and_zero_visits():
    assert degree_of_success(6, 10) == 0.6
    assert degree_of_success(0, 0) == 0.0
    with pytest.raises(ValueError, match=r"changes \(3\) must not exceed visits \(2\)"):
        degree_of_success(3, 2)
    with pytest.raises(ValueError, match=r"visits \(-1\) must be 0 or higher"):
        degree_of_success(0, -1)


@FAST
@given(visits=st.integers(min_value=0, max_value=10_000), data=st.data())
def test_degree_of_success_is_a_probability(visits, data):
    changes = data.draw(st.integers(min_value=0, max_value=visits))
    p_c = degree_of_success(changes, visits)
    assert 0.0 <= p_c <= 1.0
    if visits:
        assert p_c == changes / visits


def test_default_decay_halves_a_visit_after_ten_visits():
    assert DEFAULT_HALF_LIFE_VISITS == 10
    assert pytest.approx(0.5) == DEFAULT_DECAY**10
    assert pytest.approx(1 - DEFAULT_DECAY) == DEFAULT_EMA_WEIGHT
    assert decay_for_half_life(4) ** 4 == pytest.approx(0.5)


@FAST
@given(history=st.lists(st.booleans(), max_size=60))
def test_counter_without_decay_is_the_papers_ratio(history):
    counter = SuccessCounter()
    for changed in history:
        counter = counter.record(changed, decay=1.0)
    assert counter.visits == len(history)
    assert counter.changes == sum(history)
    assert counter.p_c == pytest.approx(degree_of_success(sum(history), len(history)))


@FAST
@given(history=st.lists(st.booleans(), min_size=1, max_size=80))
def test_decayed_counter_is_the_exponentially_weighted_ratio(history):
    counter = SuccessCounter()
    for changed in history:
        counter = counter.record(changed)
    weights = [DEFAULT_DECAY ** (len(history) - 1 - i) for i in range(len(history))]
    expected = sum(w for w, c in zip(weights, history, strict=True) if c) / sum(weights)
    assert counter.p_c == pytest.approx(expected)
    assert 0.0 <= counter.p_c <= 1.0


@FAST
@given(
    history=st.lists(st.booleans(), max_size=40),
    decay=st.floats(min_value=1e-6, max_value=1.0),
    start=st.floats(min_value=0.0, max_value=1e9),
    share=st.floats(min_value=0.0, max_value=1.0),
)
def test_a_recorded_counter_is_one_its_checks_accept(history, decay, start, share):
    """record() builds its counter without __post_init__ (its counts are in range by
    construction): the checked constructor takes the same counts, unchanged."""
    counter = SuccessCounter(start, start * share)
    for changed in history:
        counter = counter.record(changed, decay=decay)
        checked = SuccessCounter(counter.visits, counter.changes)
        assert checked == counter
        assert type(counter.visits) is float
        assert type(counter.changes) is float


def test_decay_forgets_old_history():
    counter = SuccessCounter()
    for _ in range(100):
        counter = counter.record(True)
    for _ in range(20):
        counter = counter.record(False)
    # Twenty quiet visits (two half-lives) pull p_c well below p_l = 0.3; the plain ratio
    # would still be 100/120.
    assert counter.p_c < 0.3
    assert counter.visits < 1 / (1 - DEFAULT_DECAY) + 1


def test_counter_validates():
    with pytest.raises(ValueError, match=r"changes \(2\.0\) must not exceed visits \(1\.0\)"):
        SuccessCounter(1.0, 2.0)
    with pytest.raises(ValueError, match=r"decay \(1\.5\) must be within \(0, 1\]"):
        SuccessCounter().record(True, decay=1.5)
    with pytest.raises(TypeError, match="changed must be a bool"):
        SuccessCounter().record(1)  # type: ignore[arg-type]
    assert SuccessCounter().p_c == 0.0


@FAST
@given(prev=probability, changed=st.booleans(), weight=st.floats(min_value=1e-6, max_value=1.0))
def test_decayed_success_moves_towards_the_observation(prev, changed, weight):
    result = decayed_success(prev, changed, weight)
    assert 0.0 <= result <= 1.0
    target = 1.0 if changed else 0.0
    assert abs(result - target) <= abs(prev - target) + 1e-12


def test_decayed_success_validates_weight():
    assert decayed_success(0.5, True, 1.0) == 1.0
    with pytest.raises(ValueError, match=r"weight \(0\.0\) must be within \(0, 1\]"):
        decayed_success(0.5, True, 0.0)


def test_cold_start_inherits_the_site_and_falls_back_only_without_history():
    assert cold_start(3600.0, 0.8, 86400.0) == (3600.0, 0.8)
    assert cold_start(None, None, 86400.0) == (86400.0, 0.0)
    assert cold_start(None, 0.9, 86400.0, default_p_c=0.5) == (86400.0, 0.5)
    assert cold_start(3600.0, None, 86400.0, default_p_c=0.5) == (3600.0, 0.5)
    with pytest.raises(ValueError, match=r"site_refresh_secs \(0\.0\) must be higher than 0"):
        cold_start(0.0, 0.5, 86400.0)


def test_site_success_pools_visits():
    assert site_success([(10, 6), (10, 2)]) == pytest.approx(0.4)
    # Pooled, not the mean of page ratios (which would be 0.5).
    assert site_success([(100, 0), (1, 1)]) == pytest.approx(1 / 101)
    assert site_success([]) == 0.0
    assert site_success([(0, 0)]) == 0.0
    with pytest.raises(ValueError, match=r"pages\[1\] changes \(3\) must not exceed"):
        site_success([(1, 1), (2, 3)])


def test_site_refresh_secs_is_the_median():
    assert site_refresh_secs([60.0, 3600.0, 7200.0]) == 3600.0
    assert site_refresh_secs([60.0, 120.0]) == 90.0
    assert site_refresh_secs([]) is None
