r"""Change-rate estimators and WebFountain change-frequency buckets.

Estimators of a page's Poisson change rate :math:`\lambda` (changes per second) from what
the crawler saw; all return a finite rate :math:`\ge 0`, also with no visits or no time:

* :func:`naive_rate`: :math:`X/(nI)`, detected changes over observed time.
* :func:`improved_rate`: Cho & Garcia-Molina's bias-reduced estimator for regular visits
  where only "changed or not" is known.
* :func:`last_modified_rate`: Cho & Garcia-Molina's estimator when the time of the last
  change (``Last-Modified``, sitemap ``<lastmod>``) is known at each visit.
* :func:`complete_observation_rate`: every change is observed (pushed notifications).

Source of the first three: J. Cho, H. Garcia-Molina, "Estimating frequency of change",
ACM TOIT 3(3), 2003 (cited by the seed ``sharma-dixit-self-adjusting-refresh-time`` as
[12]). The seeds do not carry its text, so it is cited by section title rather than
number.

:func:`rate_to_bucket` and :func:`bucket_to_rate` keep a rate in one byte: seed
``edwards-adaptive-incremental-crawler-webfountain`` (Section 4) puts each page into one of
"at most 256" change-frequency buckets, "recorded as one byte of the page's metadata",
for rates from "every 15 minutes to ... once a year".
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy._validate import (
    check_count,
    check_non_negative,
    check_positive,
)

__all__ = [
    "MAX_BUCKETS",
    "MAX_BUCKET_RATE",
    "MIN_BUCKET_RATE",
    "bucket_to_rate",
    "bucket_width",
    "complete_observation_rate",
    "improved_rate",
    "last_modified_exposure",
    "last_modified_rate",
    "naive_rate",
    "rate_to_bucket",
]

#: Bucket count limit: one byte per page (Edwards et al., Section 4).
MAX_BUCKETS = 256
#: Lowest bucketed rate: once a year, in changes per second (Edwards et al., Section 4).
MIN_BUCKET_RATE = 1.0 / (365.0 * 86400.0)
#: Highest bucketed rate: every 15 minutes, in changes per second (Edwards et al., Section 4).
MAX_BUCKET_RATE = 1.0 / (15.0 * 60.0)


def _check_changes_visits(changes: float, visits: float) -> tuple[float, float]:
    x = check_count("changes", changes)
    n = check_count("visits", visits)
    if x > n:
        raise ConfigError(f"changes ({changes!r}) must not exceed visits ({visits!r}).")
    return x, n


def naive_rate(changes: float, visits: float, interval_secs: float) -> float:
    r"""Return the naive estimate :math:`\hat\lambda = X/(nI)`.

    Cho & Garcia-Molina 2003, "Estimation of frequency: existence of change" (the
    intuitive estimator): :math:`X` changes detected
    in :math:`n` visits :math:`I` seconds apart. It is biased low, since two changes
    between visits look like one. 0.0 with no visits.

    >>> naive_rate(3, 10, 86400) * 86400
    0.3
    >>> naive_rate(0, 0, 86400)
    0.0
    """
    x, n = _check_changes_visits(changes, visits)
    interval = check_positive("interval_secs", interval_secs)
    return x / (n * interval) if n > 0 else 0.0


def improved_rate(changes: float, visits: float, interval_secs: float = 1.0) -> float:
    r"""Return Cho & Garcia-Molina's improved estimate :math:`-\ln\frac{\bar X + 0.5}{n + 0.5}/I`.

    Cho & Garcia-Molina 2003, "Estimation of frequency: existence of change" (the
    improved estimator): with :math:`\bar X = n - X` the visits that saw
    no change, :math:`\hat r = -\ln((\bar X + 0.5)/(n + 0.5))` estimates the rate per
    visit interval, nearly unbiased and finite even when every visit saw a change; divided
    by :math:`I` it is per second. For irregular visits pass the mean interval. 0.0 with
    no visits.

    >>> round(improved_rate(3, 10), 6)
    0.336472
    >>> round(improved_rate(10, 10), 6)
    3.044522
    >>> improved_rate(0, 0)
    0.0
    """
    x, n = _check_changes_visits(changes, visits)
    interval = check_positive("interval_secs", interval_secs)
    unchanged = n - x
    return max(0.0, -math.log((unchanged + 0.5) / (n + 0.5))) / interval


def last_modified_exposure(intervals: Iterable[float], ages: Iterable[float | None]) -> float:
    r"""Return :math:`T` for :func:`last_modified_rate` from each visit's interval and age.

    Cho & Garcia-Molina 2003, "Estimation of frequency: last date of change": a visit that found a
    change contributes the time since that change (the page's age at the visit, from
    ``Last-Modified``), one that found none its whole interval since the previous visit.
    An age within the interval means a change since the previous visit.

    :param intervals: time since the previous visit, per visit.
    :param ages: time since the last modification at each visit (``None``: unknown, counted
        as unchanged); ages beyond the interval mean "not changed".

    >>> last_modified_exposure([10, 10, 10], [3, 25, None])
    23.0
    """
    total = 0.0
    ages_list = list(ages)
    intervals_list = list(intervals)
    if len(ages_list) != len(intervals_list):
        raise ConfigError(
            f"ages ({len(ages_list)} values) and intervals ({len(intervals_list)} values) "
            "must have one value per visit."
        )
    for i, (interval, age) in enumerate(zip(intervals_list, ages_list, strict=True)):
        span = check_non_negative(f"intervals[{i}]", interval)
        if age is None:
            total += span
        else:
            total += min(span, check_non_negative(f"ages[{i}]", age))
    return total


def last_modified_rate(changes: float, visits: float, exposure_secs: float) -> float:
    r"""Return the last-modified estimate :math:`\hat\lambda = (X - 1 - \frac{X}{n\ln(1 - X/n)})/T`.

    Cho & Garcia-Molina 2003, "Estimation of frequency: last date of change":
    :math:`X` visits out of :math:`n` found a change and :math:`T` is the summed exposure
    (:func:`last_modified_exposure`). The maximum-likelihood rate is :math:`X/T`; this is
    the paper's bias-corrected form (a cruder correction is :math:`(X - 1)/T`).

    Finite at the edges, by the limits of the formula: :math:`X = 0` gives 0 (the term
    :math:`-X/(n\ln(1-X/n)) \to 1`), :math:`X = n` gives :math:`(X - 1)/T` (the term
    :math:`\to 0`), and :math:`T = 0` (no exposure) gives 0. A single visit that found a
    change gives 0 too: one observation carries no rate information here.

    >>> round(last_modified_rate(5, 10, 20.0), 6)
    0.236067
    >>> last_modified_rate(10, 10, 20.0)
    0.45
    >>> last_modified_rate(0, 10, 20.0), last_modified_rate(0, 0, 0.0)
    (0.0, 0.0)
    """
    x, n = _check_changes_visits(changes, visits)
    exposure = check_non_negative("exposure_secs", exposure_secs)
    if x == 0 or exposure == 0:
        return 0.0
    share = x / n
    correction = 0.0 if share >= 1.0 else -share / math.log1p(-share)
    return max(0.0, (x - 1.0 + correction) / exposure)


def complete_observation_rate(
    changes: float,
    time_secs: float,
    *,
    prior_changes: float = 0.5,
    prior_secs: float = 0.5,
) -> float:
    r"""Return :math:`(X + 0.5)/(T + 0.5)` for a page whose every change is observed.

    When each change is seen (a provider that pushes notifications, a full update
    history: the "complete change observations" of Kolobov et al. 2019, NeurIPS), the
    maximum-likelihood Poisson rate is :math:`X/T`; the +0.5 terms, as in Cho &
    Garcia-Molina's improved estimator, keep it finite and positive with no history.
    They act as a prior of ``prior_changes`` changes over ``prior_secs``: in seconds,
    0.5 s is a strong prior of a fast page that fades as soon as real time accumulates.

    >>> complete_observation_rate(9.5, 19.5)
    0.5
    >>> complete_observation_rate(0, 0)
    1.0
    """
    x = check_count("changes", changes)
    t = check_non_negative("time_secs", time_secs)
    a = check_non_negative("prior_changes", prior_changes)
    b = check_positive("prior_secs", prior_secs)
    return (x + a) / (t + b)


def _check_bucket_args(min_rate: float, max_rate: float, buckets: int) -> tuple[float, float, int]:
    low = check_positive("min_rate", min_rate)
    high = check_positive("max_rate", max_rate)
    if high <= low:
        raise ConfigError(f"max_rate ({max_rate!r}) must be higher than min_rate ({min_rate!r}).")
    if isinstance(buckets, bool) or not isinstance(buckets, int):
        raise TypeError(f"buckets must be an int, got {type(buckets).__name__}: {buckets!r}.")
    if not 1 <= buckets <= MAX_BUCKETS:
        raise ConfigError(f"buckets ({buckets!r}) must be within 1..{MAX_BUCKETS} (one byte).")
    return low, high, buckets


def bucket_width(
    *, min_rate: float = MIN_BUCKET_RATE, max_rate: float = MAX_BUCKET_RATE, buckets: int = 256
) -> float:
    r"""Return the width of a bucket as a rate ratio :math:`q = (\lambda_{max}/\lambda_{min})^{1/B}`.

    Seed ``edwards-adaptive-incremental-crawler-webfountain``, Section 4: buckets are
    log-spaced, so each covers the rates :math:`[\lambda_{min}q^k, \lambda_{min}q^{k+1})`.

    >>> round(bucket_width(min_rate=1.0, max_rate=256.0, buckets=8), 6)
    2.0
    """
    low, high, count = _check_bucket_args(min_rate, max_rate, buckets)
    return float((high / low) ** (1.0 / count))


def rate_to_bucket(
    rate: float,
    *,
    min_rate: float = MIN_BUCKET_RATE,
    max_rate: float = MAX_BUCKET_RATE,
    buckets: int = 256,
) -> int:
    r"""Return the change-frequency bucket (0..buckets-1, one byte) of ``rate`` (per second).

    Seed ``edwards-adaptive-incremental-crawler-webfountain``, Section 4: at most 256
    buckets of pages with similar change rates, one byte per page. Bucket :math:`k` holds
    :math:`[\lambda_{min}q^k, \lambda_{min}q^{k+1})` (:func:`bucket_width`); rates at or
    below ``min_rate`` (including 0, "never changed") go to bucket 0, rates at or above
    ``max_rate`` to the last one. Monotone: a higher rate never gets a lower bucket.

    >>> rate_to_bucket(0.0), rate_to_bucket(1.0 / 86400), rate_to_bucket(1.0)
    (0, 144, 255)
    """
    low, high, count = _check_bucket_args(min_rate, max_rate, buckets)
    r = check_non_negative("rate", rate)
    if r <= low:
        return 0
    if r >= high:
        return count - 1
    index = math.floor(count * math.log(r / low) / math.log(high / low))
    return min(max(index, 0), count - 1)


def bucket_to_rate(
    bucket: int,
    *,
    min_rate: float = MIN_BUCKET_RATE,
    max_rate: float = MAX_BUCKET_RATE,
    buckets: int = 256,
) -> float:
    r"""Return the representative rate of ``bucket``: the geometric centre :math:`\lambda_{min}q^{k+1/2}`.

    Seed ``edwards-adaptive-incremental-crawler-webfountain``, Section 4. The inverse of
    :func:`rate_to_bucket` up to one bucket: ``rate_to_bucket(bucket_to_rate(k)) == k``,
    and a rate within ``[min_rate, max_rate]`` comes back within a factor :math:`q` of
    itself.

    >>> k = rate_to_bucket(1.0 / 86400)
    >>> round(bucket_to_rate(k) * 86400, 3)
    1.007
    """
    low, high, count = _check_bucket_args(min_rate, max_rate, buckets)
    if isinstance(bucket, bool) or not isinstance(bucket, int):
        raise TypeError(f"bucket must be an int, got {type(bucket).__name__}: {bucket!r}.")
    if not 0 <= bucket < count:
        raise ConfigError(f"bucket ({bucket!r}) must be within 0..{count - 1}.")
    return float(low * math.exp((bucket + 0.5) / count * math.log(high / low)))
