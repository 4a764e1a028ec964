"""HTTP validators and what a host does with them: the bookkeeping behind the conditional check.

Pure functions and per-host counters, standard library only (no Scrapy): the downloader
middleware (:mod:`scrapy_fresh.crawl.middlewares`) asks :meth:`HostChecks.plan` how to check a
known page and reports what the host answered. See :doc:`/topics/conditional`.

The cheap checks come from the crawling lecture (seed ``clifton-web-crawling-lecture``:
HEAD, ``Last-Modified``, ``ETag``) and RFC 9110 (section 13: ``If-None-Match`` uses the
weak comparison, so a weak ``W/"..."`` ETag is sent as it is).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields

from scrapy_fresh.dates import parse_rfc822

__all__ = [
    "Check",
    "HostChecks",
    "head_verdict",
    "kept_validators",
    "length_full_due",
    "length_full_gap",
    "parse_content_length",
    "parse_http_date",
    "parse_retry_after",
    "usable_etag",
]

#: A host counts as ignoring conditional requests after this many 200 answers to a
#: request whose validator matched, if it never answered 304.
IGNORED_AFTER = 2
#: A host's ETags count as per-response noise after this many visits where the ETag
#: changed but the content did not, if no If-None-Match ever got a 304.
CHURN_AFTER = 3
#: HEAD probes stop for a host after this many HEAD answers with nothing to compare.
HEAD_USELESS_AFTER = 2
#: The byte counters of :meth:`HostChecks.count_check` are halved when the full-download
#: side passes this, so that the measured cost follows what the host does now.
CHECK_BYTES_WINDOW = 1 << 30
#: While a host never showed a change its Content-Length hid, the gap between the forced
#: full downloads of its length-probed pages doubles this many times at most
#: (:func:`length_full_due`).
LENGTH_FULL_DOUBLINGS = 4

_ETAG = re.compile(r'^(W/)?"[\x21\x23-\x7e\x80-\xff]*"$')


class Check(str, enum.Enum):
    """How a known page is checked before its body is downloaded."""

    #: Send ``If-None-Match`` / ``If-Modified-Since``; a 304 means not modified.
    CONDITIONAL = "conditional"
    #: Send a HEAD request first; fetch the body only when its validators changed.
    HEAD = "head"
    #: Fetch the body and compare fingerprints.
    NONE = "none"


def parse_http_date(value: str | None) -> float | None:
    """Return the Unix time of an HTTP date (RFC 9110 section 5.6.7), or None if malformed.

    The one RFC 822/1123 parser of the package (:func:`~scrapy_fresh.dates.parse_rfc822`),
    so that the conditional check and the provider signals read a header alike: a year
    before 1970, an offset beyond 14 hours or an impossible day is malformed.

    >>> parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT")
    784111777.0
    >>> parse_http_date("yesterday") is None, parse_http_date(None) is None
    (True, True)
    >>> parse_http_date("Wed, 31 Dec 1969 23:59:59 GMT") is None
    True
    """
    if not value or not isinstance(value, str):
        return None
    return parse_rfc822(value)


def usable_etag(value: str | None) -> bool:
    """Whether ``value`` is a well-formed entity tag (``"x"`` or ``W/"x"``) that can be sent.

    >>> usable_etag('"abc"'), usable_etag('W/"abc"'), usable_etag("abc"), usable_etag(None)
    (True, True, False, False)
    """
    return bool(value) and _ETAG.match(value or "") is not None


def kept_validators(
    etag: str | None, last_modified: str | None, date: str | None
) -> tuple[str | None, str | None]:
    """The validators of an answer worth keeping for the next conditional request.

    An answer sent in the second its copy was last modified, or before it (the file's
    time ahead of the server's clock), cannot be told by whole-second validators from
    an edit later in that second, which would then be answered 304 until the page
    changed again. RFC 9110, Section 8.8.2.2, calls a ``Last-Modified`` strong only
    when ``Date`` is at least a second later: one that is not is not kept. Nor is an
    ETag made of that second: a weak one (Apache weakens its ETag then) or one that
    carries the second in hex (nginx: ``"<mtime>-<length>"``). A strong ETag of another
    kind (a hash of the content) is kept.

    >>> kept_validators('"6567e7c0-1a2b"', "Thu, 30 Nov 2023 01:39:12 GMT",
    ...                 "Thu, 30 Nov 2023 01:39:12 GMT")
    (None, None)
    >>> kept_validators('"a1b2c3"', "Thu, 30 Nov 2023 01:39:12 GMT",
    ...                 "Thu, 30 Nov 2023 01:39:12 GMT")
    ('"a1b2c3"', None)
    >>> kept_validators('"6567e7c0-1a2b"', "Thu, 30 Nov 2023 01:39:12 GMT",
    ...                 "Thu, 30 Nov 2023 01:39:11 GMT")  # the file's clock is ahead
    (None, None)
    >>> kept_validators('"6567e7c0-1a2b"', "Thu, 30 Nov 2023 01:39:12 GMT",
    ...                 "Thu, 30 Nov 2023 01:39:13 GMT")
    ('"6567e7c0-1a2b"', 'Thu, 30 Nov 2023 01:39:12 GMT')
    """
    if not last_modified or not date:
        return etag, last_modified
    modified, sent = parse_http_date(last_modified), parse_http_date(date)
    if modified is None or sent is None or int(modified) < int(sent):
        return etag, last_modified
    second = f"{int(modified):x}"
    if etag and not etag.startswith("W/") and second not in etag.strip('"').lower().split("-"):
        return etag, None
    return None, None


def parse_content_length(value: str | None) -> int | None:
    """Return a ``Content-Length`` header value as an int, or None if absent or malformed.

    >>> parse_content_length("120"), parse_content_length("x"), parse_content_length(None)
    (120, None, None)
    """
    if value is None:
        return None
    value = value.strip()
    if not value.isdigit():
        return None
    return int(value)


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Return the seconds to wait that a ``Retry-After`` header asks for, or None.

    The header holds either a number of seconds or an HTTP date (RFC 9110 section 10.2.3).

    >>> parse_retry_after("120", now=0.0)
    120.0
    >>> parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now=784111700.0)
    77.0
    >>> parse_retry_after("soon", now=0.0) is None
    True
    """
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    when = parse_http_date(value)
    if when is None:
        return None
    return max(0.0, when - now)


def head_verdict(
    etag: str | None,
    last_modified: str | None,
    content_length: int | None,
    headers: Mapping[str, str | None],
    *,
    trust_etag: bool = True,
    trust_length: bool = True,
) -> bool | None:
    """Compare a HEAD answer's validators with the stored ones.

    Return True if one of them changed, False if at least one could be compared and
    none changed, None if nothing could be compared (the HEAD answer is useless).
    ``headers`` maps lower-case header names to values. With ``trust_length`` False
    (length probes not opted into, :setting:`FRESH_LENGTH_PROBE`) a moved
    ``Content-Length`` still means changed, but an equal one is no evidence of
    "unchanged": a same-length edit shows in no header.

    >>> head_verdict('"a"', None, 10, {"etag": '"a"', "content-length": "10"})
    False
    >>> head_verdict('"a"', None, 10, {"etag": '"b"'})
    True
    >>> head_verdict(None, None, None, {"etag": '"b"'}) is None
    True
    >>> head_verdict(None, None, 10, {"content-length": "10"}, trust_length=False) is None
    True
    """
    compared = False
    new_etag = headers.get("etag")
    if trust_etag and etag and new_etag:
        if new_etag.strip() != etag:
            return True
        compared = True
    new_lm = headers.get("last-modified")
    if last_modified and new_lm:
        old_t, new_t = parse_http_date(last_modified), parse_http_date(new_lm)
        same = (
            old_t == new_t
            if old_t is not None and new_t is not None
            else (new_lm.strip() == last_modified.strip())
        )
        if not same:
            return True
        compared = True
    new_cl = parse_content_length(headers.get("content-length"))
    if content_length is not None and new_cl is not None:
        if new_cl != content_length:
            return True
        compared = compared or trust_length
    return False if compared else None


@dataclass
class HostChecks:
    """What one host has shown about validators during this run (counters only).

    ``plan`` turns them into a :class:`Check` for ``FRESH_CHECK = "auto"``; the other
    modes force one way. The counters are kept in the host's site record
    (:attr:`~scrapy_fresh.store.base.SiteState.checks`, see :meth:`counts` and
    :meth:`from_counts`), so the next run starts from what this one learned.
    """

    #: 304 answers.
    not_modified: int = 0
    #: 304 answers to a request that carried If-None-Match.
    etag_not_modified: int = 0
    #: 200 answers although the validator we sent still matched.
    ignored: int = 0
    #: Visits where the ETag changed while the content fingerprint did not.
    etag_churn: int = 0
    #: HEAD answers with no validator to compare (or failed HEAD requests).
    head_useless: int = 0
    #: HEAD probes of pages without ETag or Last-Modified whose Content-Length was the same.
    length_not_modified: int = 0
    #: Such probes whose Content-Length had moved while the content fingerprint had not.
    length_churn: int = 0
    #: Full downloads of pages without ETag or Last-Modified that found the content changed
    #: while the Content-Length had not moved: changes a length probe would have missed.
    length_blind: int = 0
    #: A 200 answer kept the ETag we had although the content changed.
    lying: bool = False
    #: Bytes of the answers to checks that found no change (304s, unchanged HEAD answers).
    check_bytes: int = 0
    #: Bytes full downloads of the same pages would have cost (see :meth:`count_check`).
    check_full_bytes: int = 0

    def counts(self) -> dict[str, int]:
        """The counters as a JSON-safe dict (``lying`` as 0 or 1); once per visit.

        Its instance dict holds the fields alone, in their order (a dataclass's
        ``__init__`` sets them so): copied, not read field by field."""
        if type(self) is not HostChecks:  # a subclass's dict may hold more than the counters
            return {name: int(getattr(self, name)) for name in _COUNT_NAMES}
        counts: dict[str, int] = self.__dict__.copy()
        counts["lying"] = int(self.lying)
        return counts

    @classmethod
    def from_counts(cls, counts: Mapping[str, int]) -> HostChecks:
        """Counters saved by :meth:`counts`; unknown names and bad values are left out."""
        checks = cls()
        for f in fields(cls):
            value = counts.get(f.name)
            if isinstance(value, int) and value >= 0:
                setattr(checks, f.name, bool(value) if f.name == "lying" else value)
        return checks

    def count_check(self, answer_bytes: int, full_bytes: int) -> None:
        """Count one check that found no change: its answer weighed ``answer_bytes``, a full
        download of the page about ``full_bytes`` (the measured cost of a cheap check,
        :func:`~scrapy_fresh.policy.cost.check_cost_ratio`).

        >>> c = HostChecks()
        >>> c.count_check(300, 20_000)
        >>> c.check_bytes, c.check_full_bytes
        (300, 20000)
        """
        self.check_bytes += max(0, int(answer_bytes))
        self.check_full_bytes += max(0, int(full_bytes), int(answer_bytes))
        if self.check_full_bytes > CHECK_BYTES_WINDOW:
            self.check_bytes //= 2
            self.check_full_bytes //= 2

    @property
    def ignores_conditionals(self) -> bool:
        """The host answered 200 to matching validators and never 304."""
        return self.not_modified == 0 and self.ignored >= IGNORED_AFTER

    @property
    def etag_untrusted(self) -> bool:
        """The host's ETags change on every response (and never earned a 304)."""
        return self.etag_not_modified == 0 and self.etag_churn >= CHURN_AFTER

    @property
    def head_is_useless(self) -> bool:
        return self.head_useless >= HEAD_USELESS_AFTER

    @property
    def length_untrusted(self) -> bool:
        """The host's length probes waste more than they save.

        A probe whose length matched saved a download but its answer, :math:`1 - c` of a
        page (:math:`c`: the host's measured cost of a cheap check); one whose length
        moved on its own wasted :math:`c`. After :data:`CHURN_AFTER` wasted ones, the
        probes stop when ``churn * c >= matched * (1 - c)`` -- with no cheap check
        measured yet, when none ever matched.

        >>> HostChecks(length_churn=3).length_untrusted
        True
        >>> HostChecks(length_churn=9, length_not_modified=1, check_bytes=2,
        ...            check_full_bytes=100).length_untrusted  # 9 x 0.02 < 1 x 0.98
        False
        """
        if self.length_churn < CHURN_AFTER:
            return False
        if self.check_full_bytes <= 0:
            return self.length_not_modified == 0
        cost = min(1.0, self.check_bytes / self.check_full_bytes)
        return self.length_churn * cost >= self.length_not_modified * (1.0 - cost)

    @property
    def length_full_doublings(self) -> int:
        """How often the gap between forced full downloads of this host's length-probed
        pages may double (:func:`length_full_due`): :data:`LENGTH_FULL_DOUBLINGS` until
        the host once showed a change its length hid, 0 (a fixed gap) from then on.

        >>> HostChecks().length_full_doublings, HostChecks(length_blind=1).length_full_doublings
        (4, 0)
        """
        return 0 if self.length_blind else LENGTH_FULL_DOUBLINGS

    def plan(
        self,
        mode: str,
        *,
        has_validators: bool,
        has_head_validators: bool,
        page_ignores: bool = False,
        page_length_churns: bool = False,
    ) -> Check:
        """Return how to check a known page of this host.

        :param mode: ``FRESH_CHECK``: ``"auto"``, ``"conditional"``, ``"head"`` or ``"none"``.
        :param has_validators: the record has an ETag or Last-Modified that can be sent.
        :param has_head_validators: the record has an ETag, Last-Modified or
            Content-Length a HEAD answer can be compared with.
        :param page_ignores: this page already answered 200 to matching validators.
        :param page_length_churns: this page's Content-Length already changed while its
            content did not.

        In ``"auto"`` mode a page with neither ETag nor Last-Modified but a known
        Content-Length gets a HEAD probe (Clifton's HEAD check, the design's "HEAD probe"):
        the body is fetched only when the length moved. A page (or a whole host) whose
        length moves on every answer without a content change is fetched in full.

        >>> HostChecks().plan("auto", has_validators=True, has_head_validators=True).value
        'conditional'
        >>> HostChecks(ignored=2).plan("auto", has_validators=True,
        ...                            has_head_validators=True).value
        'head'
        >>> HostChecks(lying=True).plan("auto", has_validators=True,
        ...                             has_head_validators=True).value
        'none'
        >>> HostChecks().plan("auto", has_validators=False, has_head_validators=True).value
        'head'
        >>> HostChecks(length_churn=3).plan("auto", has_validators=False,
        ...                                 has_head_validators=True).value
        'none'
        """
        if mode == "none":
            return Check.NONE
        if mode == "conditional":
            return Check.CONDITIONAL if has_validators else Check.NONE
        if mode == "head":
            return Check.HEAD if has_head_validators else Check.NONE
        if self.lying:
            return Check.NONE
        if self.ignores_conditionals or page_ignores:
            if has_head_validators and not self.head_is_useless:
                return Check.HEAD
            return Check.NONE
        if has_validators:
            return Check.CONDITIONAL
        if (
            has_head_validators
            and not page_length_churns
            and not self.head_is_useless
            and not self.length_untrusted
        ):
            return Check.HEAD
        return Check.NONE


#: The counters of :class:`HostChecks`, in field order (``fields()`` is slow per visit).
_COUNT_NAMES = tuple(f.name for f in fields(HostChecks))


def length_full_due(fetch: int, every: int, doublings: int) -> bool:
    """Whether the ``fetch``-th fetch of a length-probed page (the first fetch is 0, a
    full download) must download the page in full although its length did not move.

    An edit that keeps the byte length shows in no header, so length probes need full
    downloads now and then: the first after ``every`` fetches, and then -- like Sharma &
    Dixit's refresh time (seed ``sharma-dixit-self-adjusting-refresh-time``, eq. 2, the
    refresh time doubles after a visit that found nothing) -- after gaps that double,
    ``every``, ``2 every``, ``4 every``... up to ``every * 2**doublings``, then fixed.
    The caller passes ``doublings=0`` for a host that once showed a change its length
    hid (:attr:`HostChecks.length_full_doublings`): a full download every ``every``
    fetches. ``every`` 0 or 1: every fetch is full (no length probes).

    >>> [n for n in range(1, 64) if length_full_due(n, 4, 0)][:5]
    [4, 8, 12, 16, 20]
    >>> [n for n in range(1, 130) if length_full_due(n, 4, 2)]
    [4, 12, 28, 44, 60, 76, 92, 108, 124]
    """
    if every <= 1:
        return True
    if fetch <= 0 or fetch % every:
        return False
    step = fetch // every  # in units of ``every``: full at 1, 3, 7, ... 2**(d+1) - 1
    last_doubling = (1 << (doublings + 1)) - 1
    if step <= last_doubling:
        return step & (step + 1) == 0
    return (step - last_doubling) % (1 << doublings) == 0


def length_full_gap(fetch: int, every: int, doublings: int) -> int:
    """The gap, in fetches, between the forced full downloads around the ``fetch``-th
    fetch of a length-probed page (:func:`length_full_due`): one fetch in this many is
    a full download there.

    >>> [length_full_gap(n, 4, 2) for n in (1, 4, 5, 12, 13, 28, 29, 200)]
    [4, 4, 8, 8, 16, 16, 16, 16]
    """
    if every <= 1:
        return 1
    step = max(0, fetch - 1) // every  # full downloads already made after the first
    return every << min(doublings, (step + 1).bit_length() - 1)
