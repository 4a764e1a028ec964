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

**A change proves a claim only as far as the claim explains it.** A page that changes
often has usually changed since its last crawl whatever its provider says, so a
sitemap that stamps every URL with the time it is read is "confirmed" at most visits of
a busy page; counted plainly, its score would settle at the page's own chance of a
change and stay above the threshold. Each outcome is therefore split between confirmed
and refuted by Bayes' rule (:func:`confirmed_share`), given the claim's probability and
the chance :math:`q` that the page changed anyway, from the changes our own visits
found (:func:`change_chance`): a claim that tells nothing the page's rate did not
loses trust, and an honest host's score tends to its true precision.

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

**Quiet claims check themselves only if they are not followed in full.** A claim that
a page will *not* change (``<ttl>``, ``Cache-Control: max-age``, ``Expires``: "no need
to look before then"; ``<skipHours>``/``<skipDays>``; kind ``cache``) pushes the page's
next visit out. Followed to the letter, a false one hides itself: the page is next
seen after the promised quiet time, when a change it shows may well have come after it,
so nothing refutes the claim, and it costs the page's freshness all along (the second
cost of Section 5.4, without the first that would give the lie away: no slot is spent
on the page at all). So such a claim may defer a page beyond its own, signal-free due
time :math:`b` (the refresh rule's, Sharma & Dixit eq. 1-2) towards the claimed end
:math:`T` only by the share :math:`w` the host has *earned* (:func:`quiet_weight`,
:func:`deferred_due`):

.. math::

    d = b + w\,(T - b), \qquad w = \frac{c}{c + r + n_q}

with the host's decayed confirmed and refuted weights :math:`c, r` for that kind and
:math:`n_q` (:attr:`TrustParams.quiet_evidence`, 3: the strength of the score's own
prior, :math:`a + b`). It is the posterior mean under a *sceptical* prior
:math:`(0, n_q)`: a claim that hides its own failures is granted no trust it has not
earned, where a claim that calls for a visit (eq. 6's announced updates, a ``lastmod``)
is checked by the very visit it calls for and may start at the believing prior. A host
whose quiet claims were never judged has :math:`w = 0`: its pages are visited at their
own due times, and these *verification visits* judge the claims. Every later visit is a
verification visit too, since :math:`w < 1` puts it before :math:`T`, inside the
claimed quiet time. No randomness is involved: the same history gives the same due
times. An honest host's :math:`w` grows with its record (:math:`E/(E + n_q)` for
:math:`E` judged claims all kept, about 0.96 at the 72 a half-life of 50 allows); a
liar's stays near 0 and it is demoted after a few visits (:math:`w = 0`).

**Judging a quiet claim** (:func:`quiet_share`). A visit covering the interval
:math:`(s, t]` of length :math:`a` since the last crawl, of which the claim said a
share :math:`f` is quiet (:func:`quiet_seconds`), found a change or not. If the claim
is false the page changed with probability :math:`q` (:func:`change_chance` over
:math:`a`). If it holds, the page changed only in the rest of the interval: with
probability 0 when the visit came inside the quiet time (:math:`f = 1`), so a change
found there refutes the claim in full. A change found by a visit that came after the
quiet time proves nothing: the claim says nothing of when, after it, the page changes,
and an honest provider's quiet time ends at its next change (as a visit following an
announced update, by Xu et al.'s slot rule, comes just after it), so such a visit is not
counted at all (:func:`observe_quiet`), unless ``Last-Modified`` dates the change inside
the quiet time. No change confirms the claim: if it holds, the page kept still with
probability :math:`1 - q_o`, :math:`q_o = 1 - (1 - q)^{1 - f}` its own chance over the
rest, :math:`(1 - f)a`. Bayes' rule splits the observation as :func:`confirmed_share`
does for the other claims, with weight :math:`f`: the more the page would have changed
without the claim, the more its keeping still confirms it; a page never seen to change
(:math:`q = 0`) confirms nothing. The bounded deferral above puts every visit inside
the claimed time, where a judgment is clean.

**Announced updates judged together.** A visit after several announced instants of
one kind (an hourly schedule seen by a visit a day later) judges them together: if the
host's claims hold, the page changed unless none of them came true, with probability
:math:`P = 1 - \prod_i (1 - p_i)` over the distinct instants (:func:`any_announced`),
and that is the claim's probability in :func:`confirmed_share`. Taking only the likeliest
one, as before, let a schedule that announced twenty changes since the last visit go
nearly unrefuted by a visit that found none.

**A host caught lying is not a new host.** The believing prior suits claims that call
for the visit that checks them. An announced update does (the first slot after it), but
it also says the copy fetched before it will not stay fresh, which makes fetching the
page *worth less* (:func:`scrapy_fresh.policy.gain.announced_fresh_secs`): a false
schedule that announces a change every hour makes its page look hopeless to fetch, the
page is seldom fetched, and the few visits, long apart, find it changed as the page would
have anyway (no news, :func:`confirmed_share`), so the schedule is never refuted and the
page starves: the self-hiding of quiet claims again. A host whose signals of another kind
were demoted has shown that it publishes false signals, and its announced updates are
used only as far as they earned trust themselves, :math:`p\,c/(c + r + n_q)` (the
sceptical prior of quiet claims, :func:`announced_probability`; 0 until judged), so its
pages are fetched at their own rate, and those visits judge the schedule. Honest hosts
keep the believing prior (measured: dropping it for every host costs the all-honest
crawl up to 2% of its freshness, the announced quiet times of honest schedules being
worth much).

**Documents that date every entry at the time they are read.** A sitemap generated on
request that gives every URL the generation time as ``<lastmod>`` (a feed that stamps
every item with the time it is served) says nothing about its pages: the issue's own
example of a lie, and search engines document ignoring such dates. Its claims need no
visit to be judged: the document gives itself away when (nearly) all its dates equal the
time it was read (:func:`stamps_read_time`), on two reads in a row, since a real change
falls at the very moment of a read for one entry by chance, not for every entry twice.
The tracker then ignores that document's dates while it keeps doing so, and counts each
such read as one refuted claim of its host's kind, in full (an honest document dates
every entry at the read time twice in a row with probability about 0), so the host is
demoted after a few reads without a visit (:mod:`scrapy_fresh.providers.tracker`).

Pure maths: no clock, no I/O.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy._validate import (
    check_finite,
    check_non_negative,
    check_positive,
    check_probability,
)

__all__ = [
    "DEFAULT_TRUST_PARAMS",
    "STAMP_MIN_ENTRIES",
    "STAMP_SHARE",
    "STAMP_TOLERANCE_SECS",
    "Evidence",
    "TrustParams",
    "TrustRecord",
    "announced_probability",
    "any_announced",
    "change_chance",
    "confirmed_share",
    "deferred_due",
    "observe",
    "observe_quiet",
    "quiet_seconds",
    "quiet_share",
    "quiet_weight",
    "stamps_read_time",
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
    #: Pseudo-evidence of the sceptical prior of quiet claims (:func:`quiet_weight`): a
    #: host whose quiet claims all held defers pages by half the claimed time once this
    #: much evidence is judged (:setting:`FRESH_TRUST_QUIET_EVIDENCE`).
    quiet_evidence: float = 3.0

    def __post_init__(self) -> None:
        check_positive("prior_confirmed", self.prior_confirmed)
        check_positive("prior_refuted", self.prior_refuted)
        check_probability("threshold", self.threshold)
        check_probability("recover", self.recover)
        check_non_negative("min_evidence", self.min_evidence)
        check_non_negative("half_life", self.half_life)
        check_probability("missed_weight", self.missed_weight)
        check_non_negative("quiet_evidence", self.quiet_evidence)
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


def change_chance(changes: float, watched_secs: float, elapsed_secs: float) -> float:
    r"""Return :math:`1 - e^{-\hat\lambda a}`: how likely the page changed within
    ``elapsed_secs`` (:math:`a`, since its last crawl) whatever its provider said.

    :math:`\hat\lambda` is the ``changes`` our own visits found over the
    ``watched_secs`` they covered, Cho & Garcia-Molina's naive estimator :math:`X/(nI)`
    (2003; :func:`scrapy_fresh.policy.estimators.naive_rate`). It counts several changes
    between two visits as one, so it is a lower bound of the rate: a change is never
    taken as more expected than the visits showed, and an honest provider's
    confirmations are not discounted more than they should be (its pages are visited
    right after each change, where the bound is tight). 0 while no visit has seen a
    change: a change is then the claim's alone.

    >>> round(change_chance(10, 10 * 86400.0, 86400.0), 4)  # a daily page, a day later
    0.6321
    >>> change_chance(0, 86400.0, 3600.0), change_chance(3, 86400.0, 0.0)
    (0.0, 0.0)
    """
    x = check_non_negative("changes", changes)
    watched = check_non_negative("watched_secs", watched_secs)
    a = check_non_negative("elapsed_secs", elapsed_secs)
    if x == 0.0 or watched == 0.0 or a == 0.0:
        return 0.0
    rate = x / watched
    if math.isinf(rate):  # a change seen over next to no time: a certain change
        return 1.0
    return -math.expm1(-rate * a)


def confirmed_share(score: float, probability: float, chance: float, changed: bool) -> float:
    r"""Return the share of one observation that counts as confirmed (the rest refuted).

    A claim says "this page changes (changed) with probability :math:`p`"
    (``probability``: eq. 6's :math:`P_{update}` for an announced update, 1 for a
    stated past update). The host's claims are to be believed with probability
    :math:`\tau` (the score); if they are, the page changes with probability
    :math:`p + (1 - p)q`, if not with :math:`q` (``chance``, the page's own rate:
    :func:`change_chance`). By Bayes' rule the visit's outcome splits between the two
    in proportion to their likelihoods, with :math:`m` the score before:

    .. math::

        \text{changed: } \frac{m(p + (1 - p)q)}{m(p + (1 - p)q) + (1 - m)q}, \qquad
        \text{unchanged: } \frac{m(1 - p)}{m(1 - p) + (1 - m)}

    (the exact posterior is the mixture of one more confirmation and one more
    refutation with these weights). So a change the page would have made anyway
    confirms little (:math:`q = 1`: nothing, the score stays), and a claim that said
    "maybe" is little refuted when nothing happened (:math:`p = 0.5` met half the time
    is what an honest host says). With :math:`p = 1` and :math:`q = 0` it is the plain
    count: a change confirms, no change refutes.

    >>> confirmed_share(2 / 3, 1.0, 0.0, True), confirmed_share(2 / 3, 1.0, 0.5, False)
    (1.0, 0.0)
    >>> round(confirmed_share(2 / 3, 1.0, 1.0, True), 4)  # no news: the score itself
    0.6667
    >>> round(confirmed_share(0.5, 1.0, 0.5, True), 4)  # "updated now", half the pages
    0.6667
    >>> confirmed_share(0.5, 0.0, 0.0, True)  # p = q = 0 and yet a change: no news
    0.5
    """
    m, p, q = score, probability, chance
    if changed:
        true = m * (p + (1.0 - p) * q)
        false = (1.0 - m) * q
    else:
        true = m * (1.0 - p)
        false = 1.0 - m
    total = true + false
    return true / total if total > 0.0 else m  # an outcome neither side allows: no news


def observe(
    record: TrustRecord,
    evidence: Evidence,
    params: TrustParams = DEFAULT_TRUST_PARAMS,
    weight: float = 1.0,
    chance: float = 0.0,
) -> TrustRecord:
    r"""Return ``record`` after one observation of ``evidence`` counting ``weight``.

    ``weight`` is the claim's probability (eq. 6's :math:`P_{update}` for announced
    updates, 1 for plain claims): the observation counts that much in all, so a weak
    hint moves the score little, and it is split between confirmed and refuted by
    :func:`confirmed_share` (:attr:`Evidence.CONFIRMED`: the page changed;
    :attr:`Evidence.REFUTED`: it did not) given ``chance``, the probability that the page
    changed anyway (:func:`change_chance`). A sitemap that stamps "updated now" on a page
    that changes on half the visits is confirmed half the time: counted plainly its score
    would settle at 1/2, on the threshold; discounted by its chance it falls towards 0,
    while an honest host's score tends to its true precision whatever the page's rate.
    :attr:`Evidence.MISSED` (a change nobody claimed) is a plain refutation of weight
    :attr:`TrustParams.missed_weight`.

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
    q = check_probability("chance", chance)
    if not isinstance(evidence, Evidence):
        raise TypeError(f"evidence must be an Evidence, got {type(evidence).__name__}.")
    if evidence is Evidence.MISSED:
        share, w = 0.0, params.missed_weight
    else:
        share = confirmed_share(
            trust_score(record, params), w, q, changed=evidence is Evidence.CONFIRMED
        )
    return _update(record, w, share, params)


def _update(record: TrustRecord, weight: float, share: float, params: TrustParams) -> TrustRecord:
    """Forget, add ``weight`` split ``share`` : ``1 - share``, demote or restore."""
    keep = params.decay
    confirmed = record.confirmed * keep + weight * share
    refuted = record.refuted * keep + weight * (1.0 - share)
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
    r"""The probability to give an announced update (eq. 6's :math:`P_{update}`) from a
    host with ``record``: 0 when demoted, else the announced probability times the
    trust score, :math:`\tau p`.

    The score is the probability that the host's claims are to be believed, the
    announced :math:`p` what the update's chance is if they are (:func:`confirmed_share`),
    so :math:`\tau p` is the chance the announced update is real, the role Xu et al.
    give the provider's precision in eq. 6 (the page's own chance of a change is the
    score's other term, :func:`scrapy_fresh.policy.gain.known_gain`). A host not
    known yet is believed at the prior, 2/3.

    >>> round(weighted_probability(0.9, TrustRecord()), 4)
    0.6
    >>> round(weighted_probability(0.8, TrustRecord(confirmed=17.0)), 4)  # 19 / 20
    0.76
    >>> weighted_probability(0.8, TrustRecord(demoted=True))
    0.0
    """
    p = check_probability("probability", probability)
    if record.demoted:
        return 0.0
    return p * trust_score(record, params)


# -- documents stamped at read time (module docstring) ------------------------------------

#: A date within this many seconds of the read time counts as "the read time" (a server
#: generating a document stamps it a little before our clock reads the answer).
STAMP_TOLERANCE_SECS = 60.0
#: A document dates (nearly) all its entries at the read time when at least this share
#: of them are (:func:`stamps_read_time`).
STAMP_SHARE = 0.9
#: Such documents are ignored once two reads in a row of them gave at least this many
#: entries dated at the read time (a single page dated "now" twice may just be busy).
STAMP_MIN_ENTRIES = 3


def stamps_read_time(
    times: Iterable[float],
    read_at: float,
    *,
    tolerance_secs: float = STAMP_TOLERANCE_SECS,
    share: float = STAMP_SHARE,
) -> int:
    """Return how many of the dates ``times`` that one document gave its entries, read
    at ``read_at``, are the read time itself (within ``tolerance_secs``) if they are at
    least ``share`` of them, else 0: the document says "updated now" of every page
    (module docstring). One such read is not enough to ignore a document (a site may
    have just regenerated every page): the tracker asks for two in a row, with at
    least :data:`STAMP_MIN_ENTRIES` such dates between them.

    >>> stamps_read_time([1000.0, 1000.0, 990.0], 1000.0)
    3
    >>> stamps_read_time([1000.0, 400.0, 100.0], 1000.0)  # real, older dates
    0
    >>> stamps_read_time([], 1000.0)
    0
    """
    tol = check_non_negative("tolerance_secs", tolerance_secs)
    ratio = check_probability("share", share)
    total = stamped = 0
    for t in times:
        total += 1
        stamped += abs(t - read_at) <= tol
    return stamped if total and stamped >= ratio * total else 0


def any_announced(probabilities: Iterable[float]) -> float:
    r"""Return :math:`1 - \prod_i (1 - p_i)`: the probability that at least one of
    several announced updates (distinct instants, each real with its :math:`p_i`, Xu et
    al.'s :math:`P_{update}`, eq. 6) came true, as a visit after all of them judges them
    (module docstring, "Announced updates judged together"). 0 for none.

    >>> any_announced([0.5, 0.5]), any_announced([]), any_announced([0.3, 1.0])
    (0.75, 0.0, 1.0)
    >>> round(any_announced([0.8] * 20), 12)  # an hourly schedule, a visit a day later
    1.0
    """
    log_none = 0.0
    for p in probabilities:
        if check_probability("probability", p) >= 1.0:
            return 1.0
        log_none += math.log1p(-p)
    return 0.0 - math.expm1(log_none)  # 0.0 - x: no -0.0 for none


def announced_probability(
    probability: float,
    record: TrustRecord,
    params: TrustParams = DEFAULT_TRUST_PARAMS,
    *,
    caught: bool = False,
) -> float:
    r"""The :math:`P_{update}` to give an update announced with ``probability`` by a host
    whose record of that kind is ``record``: :func:`weighted_probability` (:math:`\tau
    p`), or, for a host ``caught`` publishing false signals of another kind (demoted for
    them), only the trust its announcements earned themselves, :math:`p\,c/(c + r +
    n_q)` (:func:`quiet_weight`; module docstring, "A host caught lying ...").

    >>> round(announced_probability(0.8, TrustRecord()), 4)  # a new host: the prior
    0.5333
    >>> announced_probability(0.8, TrustRecord(), caught=True)  # caught: nothing unearned
    0.0
    >>> announced_probability(0.8, TrustRecord(confirmed=9.0), caught=True)  # 9 / 12
    0.6000000000000001
    """
    if caught:
        return check_probability("probability", probability) * quiet_weight(record, params)
    return weighted_probability(probability, record, params)


# -- quiet claims (module docstring, "Quiet claims ...") ----------------------------------


def quiet_weight(record: TrustRecord, params: TrustParams = DEFAULT_TRUST_PARAMS) -> float:
    r"""Return :math:`w = c / (c + r + n_q)`, the share of a claimed quiet time by which
    a host's quiet claims may defer a page (0 when demoted, or before any is judged).

    The posterior mean of "a quiet claim of this host holds" under the sceptical prior
    :math:`(0, n_q)` (:attr:`TrustParams.quiet_evidence`; see the module docstring):

    >>> quiet_weight(TrustRecord())  # never judged: no deferral, verify first
    0.0
    >>> quiet_weight(TrustRecord(confirmed=3.0))  # three claims kept: half the time
    0.5
    >>> round(quiet_weight(TrustRecord(confirmed=27.0, refuted=0.0)), 2)
    0.9
    >>> quiet_weight(TrustRecord(confirmed=27.0, demoted=True))
    0.0
    """
    if record.demoted:
        return 0.0
    total = record.confirmed + record.refuted + params.quiet_evidence
    return record.confirmed / total if total > 0.0 else 0.0


def deferred_due(own_due: float, claimed_due: float, weight: float) -> float:
    r"""Return :math:`b + w\,(T - b)` for ``own_due`` :math:`b`, ``claimed_due``
    :math:`T` and ``weight`` :math:`w` (:func:`quiet_weight`); ``own_due`` when the
    claim does not reach past it.

    >>> deferred_due(100.0, 1100.0, 0.5), deferred_due(100.0, 50.0, 0.9)
    (600.0, 100.0)
    >>> deferred_due(100.0, 1100.0, 0.0)  # not earned: the page's own due time
    100.0
    """
    w = check_probability("weight", weight)
    if not claimed_due > own_due:
        return own_due
    if w == 1.0:
        return claimed_due  # followed in full, exactly (as without trust)
    return min(claimed_due, own_due + w * (claimed_due - own_due))


_HOUR = 3600.0
_WEEK_HOURS = 7 * 24


def _quiet_hour(slot: int, hours: frozenset[int], days: frozenset[int]) -> bool:
    """Whether the hour ``slot`` (hours since the epoch) is quiet (1970-01-01: Thursday)."""
    return slot % 24 in hours or (slot // 24 + 3) % 7 in days


def _quiet_hours_secs(
    start: float, end: float, hours: frozenset[int], days: frozenset[int]
) -> float:
    """Seconds of ``(start, end]`` within quiet hours or days (UTC)."""
    if end <= start or not (hours or days):
        return 0.0
    total = 0.0
    first = math.floor(start / _HOUR)
    last = math.floor(end / _HOUR)
    if first == last:
        return end - start if _quiet_hour(first, hours, days) else 0.0
    if _quiet_hour(first, hours, days):
        total += (first + 1) * _HOUR - start
    if _quiet_hour(last, hours, days):
        total += end - last * _HOUR
    slot = first + 1
    weeks = (last - slot) // _WEEK_HOURS
    if weeks:  # the pattern repeats every week
        per_week = sum(_quiet_hour(h, hours, days) for h in range(slot, slot + _WEEK_HOURS))
        total += weeks * per_week * _HOUR
        slot += weeks * _WEEK_HOURS
    total += _HOUR * sum(_quiet_hour(h, hours, days) for h in range(slot, last))
    return total


def quiet_seconds(
    start: float,
    end: float,
    *,
    claimed_at: float | None = None,
    until: float | None = None,
    hours: frozenset[int] = frozenset(),
    days: frozenset[int] = frozenset(),
) -> float:
    """Return how many seconds of ``(start, end]`` a quiet claim said were quiet.

    The claim, made at ``claimed_at`` (``start`` if None), says the page does not change
    before ``until`` (a not-before time: ``max-age``, ``Expires``, ``<ttl>``) nor in the
    UTC ``hours`` (0-23) and ``days`` (0 = Monday) it names (``<skipHours>``,
    ``<skipDays>``). A window covering every hour or every day says nothing (as
    :meth:`~scrapy_fresh.providers.signals.QuietWindow.end_of_quiet` reads it).

    >>> quiet_seconds(0.0, 7200.0, until=3600.0)
    3600.0
    >>> quiet_seconds(0.0, 86400.0, hours=frozenset({0, 1}))  # two quiet hours a day
    7200.0
    >>> quiet_seconds(0.0, 86400.0, until=3600.0, hours=frozenset({0, 1}))  # overlapping
    7200.0
    >>> quiet_seconds(0.0, 14 * 86400.0, days=frozenset({6}))  # two Sundays
    172800.0
    """
    a = check_finite("start", start)
    b = check_finite("end", end)
    if b <= a:
        return 0.0
    if len(hours) >= 24 or len(days) >= 7:
        hours = days = frozenset()
    total = _quiet_hours_secs(a, b, hours, days)
    if until is not None:
        lo = a if claimed_at is None else max(a, claimed_at)
        hi = min(b, until)
        if hi > lo:
            total += (hi - lo) - _quiet_hours_secs(lo, hi, hours, days)
    return min(total, b - a)


def quiet_share(score: float, quiet_fraction: float, chance: float, changed: bool) -> float:
    r"""Return the share of one judged quiet claim that counts as confirmed (it held).

    The claim said a share :math:`f` (``quiet_fraction``) of the interval since the last
    crawl was quiet; the page changes over the whole interval with probability
    :math:`q` (``chance``, :func:`change_chance`) if the claim is false. If it holds:
    not at all when the whole interval was quiet (:math:`f = 1`); otherwise after the
    quiet time, when the claim does not say (module docstring: a change then is no news,
    the score :math:`m` itself); and it keeps still with probability :math:`1 - q_o`,
    :math:`q_o = 1 - (1 - q)^{1 - f}`. As in :func:`confirmed_share`:

    .. math::

        \text{changed: } 0 \ (f = 1), \qquad
        \text{unchanged: } \frac{m (1 - q_o)}{m (1 - q_o) + (1 - m)(1 - q)}

    >>> quiet_share(2 / 3, 1.0, 0.5, True)  # a change inside the quiet time
    0.0
    >>> round(quiet_share(2 / 3, 1.0, 0.5, False), 4)  # held where a change was even odds
    0.8
    >>> round(quiet_share(2 / 3, 1.0, 0.0, False), 4)  # held where none was expected: no news
    0.6667
    >>> round(quiet_share(2 / 3, 0.9, 0.5, True), 4)  # maybe after the quiet time: no news
    0.6667
    """
    m = score
    f = check_probability("quiet_fraction", quiet_fraction)
    q = check_probability("chance", chance)
    if changed:
        return 0.0 if f >= 1.0 else m
    q_out = -math.expm1((1.0 - f) * math.log1p(-q)) if q < 1.0 else (1.0 if f < 1.0 else 0.0)
    true, false = m * (1.0 - q_out), (1.0 - m) * (1.0 - q)
    total = true + false
    return true / total if total > 0.0 else m


def observe_quiet(
    record: TrustRecord,
    quiet_fraction: float,
    changed: bool,
    params: TrustParams = DEFAULT_TRUST_PARAMS,
    chance: float = 0.0,
) -> TrustRecord:
    """Return ``record`` after one judged quiet claim (:func:`quiet_share`), counting
    ``quiet_fraction``: the share of the visit's interval the claim covered. A change
    found by a visit that came after the quiet time is no news and is not counted
    (``record`` comes back as it was).

    A host whose ``max-age`` says "a week" while its page changes by the hour is
    refuted at each verification visit, which its pages get at once (:func:`quiet_weight`
    is 0 until claims are judged), and demoted after four:

    >>> r = TrustRecord()
    >>> for _ in range(4):
    ...     r = observe_quiet(r, 1.0, changed=True, chance=0.6)
    >>> r.demoted, quiet_weight(r)
    (True, 0.0)
    >>> h = TrustRecord()
    >>> for _ in range(6):
    ...     h = observe_quiet(h, 1.0, changed=False, chance=0.6)
    >>> h.demoted, round(quiet_weight(h), 2)
    (False, 0.58)
    """
    f = check_probability("quiet_fraction", quiet_fraction)
    share = quiet_share(trust_score(record, params), f, chance, changed)
    if changed and f < 1.0:
        return record
    return _update(record, f, share, params)
