r"""How far a host's update signals can be believed, learnt from what visits found.

Xu et al. (seed ``xu-content-provider-friendly-crawler``) show that knowing past updates
(smart providers) and announced future updates (super providers, eq. 6-7) makes a
crawler fresher, and in Section 5.4 (Figure 5) that wrong announcements hurt twice: a
slot is spent on a page that did not change, and that slot is taken from a page that
did. Providers in the wild publish signals that are stale, automatic or false (a sitemap
stamping every URL with today's date, a schedule nobody keeps), so each host's signals,
one kind at a time (:data:`scrapy_fresh.providers.signals.SIGNAL_KINDS`), earn a trust
score from what our own visits show:

* :attr:`Evidence.CONFIRMED`: a claim the visit bore out (an announced update came
  with a content change; a date moved and the fingerprint changed);
* :attr:`Evidence.REFUTED`: a claim the visit contradicted (an announced update with
  no content change; a ``lastmod`` or ``Last-Modified`` that moved while the
  fingerprint did not; a change inside a promised quiet window);
* :attr:`Evidence.MISSED`: a change no signal of that kind told of. A smart page
  whose provider stays silent scores 0 by eq. 4 and loses every slot, so silence about
  real changes also costs trust, at :attr:`TrustParams.missed_weight`.

**The score** is the mean of a Beta posterior over "a claim of this kind is true":
:math:`(c + a) / (c + r + a + b)` with confirmed weight :math:`c`, refuted weight
:math:`r` and prior :math:`(a, b)` (default 2, 1: a new host is believed, 2/3, but
not blindly). Claims made with a probability (eq. 6's :math:`P_{update}`) count with
that weight, so a weak hint that fails costs little.

**Forgetting.** Hosts change their ways; every observation first multiplies the old
weights by :math:`2^{-1/h}` (half-life :math:`h` observations), so a host that mends
its ways earns trust back and an old good record does not cover new lies for ever.

**Demotion with hysteresis.** Below :attr:`TrustParams.threshold` (0.5: a claim is then
more often wrong than right, and by Section 5.4 following it costs more than it gains)
and with at least :attr:`TrustParams.min_evidence` of evidence, the host's signals of
that kind are ignored (its pages fall back to normal). They are restored only once the
score reaches :attr:`TrustParams.recover` (> threshold), so a host on the edge does not
flip at every visit. A demoted host's claims are still checked, which is how it earns
trust back.

Pure maths: no clock, no I/O.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy._validate import check_non_negative, check_positive, check_probability

__all__ = [
    "DEFAULT_TRUST_PARAMS",
    "Evidence",
    "TrustParams",
    "TrustRecord",
    "observe",
    "trust_score",
    "weighted_probability",
]


class Evidence(str, enum.Enum):
    """What one visit showed about one claim (or the lack of one)."""

    CONFIRMED = "confirmed"
    REFUTED = "refuted"
    MISSED = "missed"


@dataclass(frozen=True)
class TrustParams:
    """Constants of the trust score (module docstring gives the reasoning)."""

    prior_confirmed: float = 2.0
    prior_refuted: float = 1.0
    threshold: float = 0.5
    recover: float = 0.6
    min_evidence: float = 3.0
    half_life: float = 50.0
    missed_weight: float = 0.5

    def __post_init__(self) -> None:
        check_positive("prior_confirmed", self.prior_confirmed)
        check_positive("prior_refuted", self.prior_refuted)
        check_probability("threshold", self.threshold)
        check_probability("recover", self.recover)
        check_non_negative("min_evidence", self.min_evidence)
        check_non_negative("half_life", self.half_life)
        check_probability("missed_weight", self.missed_weight)
        if self.recover < self.threshold:
            raise ConfigError(
                f"recover ({self.recover!r}) must not be lower than threshold "
                f"({self.threshold!r}): a host would be restored while still untrusted."
            )

    @property
    def decay(self) -> float:
        """Factor kept of old evidence per observation (1 with ``half_life`` 0: never fades)."""
        return 1.0 if self.half_life <= 0 else math.pow(0.5, 1.0 / self.half_life)


DEFAULT_TRUST_PARAMS = TrustParams()


@dataclass(frozen=True)
class TrustRecord:
    """What is known of one host's signals of one kind: decayed evidence weights."""

    confirmed: float = 0.0
    refuted: float = 0.0
    demoted: bool = False
    observations: int = 0

    @property
    def evidence(self) -> float:
        """Total (decayed) evidence weight."""
        return self.confirmed + self.refuted


def trust_score(record: TrustRecord, params: TrustParams = DEFAULT_TRUST_PARAMS) -> float:
    """Return the posterior mean that a claim of this kind is true, in (0, 1).

    >>> trust_score(TrustRecord())  # the prior: 2 / (2 + 1)
    0.6666666666666666
    >>> trust_score(TrustRecord(confirmed=8.0, refuted=1.0))
    0.8333333333333334
    """
    a, b = params.prior_confirmed, params.prior_refuted
    return (record.confirmed + a) / (record.confirmed + record.refuted + a + b)


def observe(
    record: TrustRecord,
    evidence: Evidence,
    params: TrustParams = DEFAULT_TRUST_PARAMS,
    weight: float = 1.0,
) -> TrustRecord:
    """Return ``record`` after one observation of ``evidence`` counting ``weight``.

    ``weight`` is the claim's probability for announced updates (1 for plain claims);
    :attr:`Evidence.MISSED` is further scaled by :attr:`TrustParams.missed_weight`.

    A host that lies five times in a row is demoted (four lies suffice with the
    defaults); it needs a longer run of true claims to be believed again:

    >>> r = TrustRecord()
    >>> for _ in range(5):
    ...     r = observe(r, Evidence.REFUTED)
    >>> r.demoted, round(trust_score(r), 2)
    (True, 0.25)
    >>> for _ in range(8):
    ...     r = observe(r, Evidence.CONFIRMED)
    >>> r.demoted, round(trust_score(r), 2)
    (False, 0.64)
    """
    w = check_probability("weight", weight)
    if not isinstance(evidence, Evidence):
        raise TypeError(f"evidence must be an Evidence, got {type(evidence).__name__}.")
    if evidence is Evidence.MISSED:
        w *= params.missed_weight
    keep = params.decay
    confirmed = record.confirmed * keep
    refuted = record.refuted * keep
    if evidence is Evidence.CONFIRMED:
        confirmed += w
    else:
        refuted += w
    updated = replace(
        record, confirmed=confirmed, refuted=refuted, observations=record.observations + 1
    )
    score = trust_score(updated, params)
    if record.demoted:
        demoted = score < params.recover
    else:
        demoted = score < params.threshold and updated.evidence >= params.min_evidence
    return replace(updated, demoted=demoted)


def weighted_probability(
    probability: float, record: TrustRecord, params: TrustParams = DEFAULT_TRUST_PARAMS
) -> float:
    """The probability to give an announced update (eq. 6's :math:`P_{update}`) from a
    host with ``record``: 0 when demoted, else the announced probability scaled by how
    much more than the prior the host is believed (capped at the announced value).

    >>> weighted_probability(0.8, TrustRecord())
    0.8
    >>> round(weighted_probability(0.8, TrustRecord(refuted=2.0)), 4)
    0.48
    >>> weighted_probability(0.8, TrustRecord(demoted=True))
    0.0
    """
    p = check_probability("probability", probability)
    if record.demoted:
        return 0.0
    prior = params.prior_confirmed / (params.prior_confirmed + params.prior_refuted)
    return min(p, p * trust_score(record, params) / prior)
