"""One reading of HTTP dates: the conditional check (:func:`scrapy_fresh.validators.
parse_http_date`, used for the validators kept and the page's modification time) and the
provider signals (:func:`scrapy_fresh.providers.http.header_signals`, ``Last-Modified``
as a past update) take the same header to the same time, or both find it malformed.
They used two parsers once; a year before 1970 or a leap second then meant a date for one
and none for the other.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from scrapy_fresh.dates import parse_rfc822
from scrapy_fresh.providers.http import header_signals
from scrapy_fresh.validators import kept_validators, parse_http_date

_DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "Sunday", "Xyz"]
_MONTHS = [
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Oct",
    "Nov",
    "Dec",
    "Foo",
]
_ZONES = ["GMT", "UTC", "UT", "-0000", "+0000", "+0100", "-0930", "+1400", "+1500", "+2500",
          "PST", "EDT", "XYZ", ""]  # fmt: skip
FAR_FUTURE = 1e12  # "now" for header_signals: no date here is in the future


@st.composite
def http_dates(draw: st.DrawFn) -> str:
    """RFC 1123 dates with every part sometimes out of range (and RFC 850 / asctime)."""
    day, month = draw(st.sampled_from(_DAYS)), draw(st.sampled_from(_MONTHS))
    dd = draw(st.integers(0, 32))
    year = draw(st.sampled_from([69, 94, 1900, 1969, 1970, 1994, 2024, 9999, 10000]))
    hh, mm, ss = draw(st.integers(0, 25)), draw(st.integers(0, 61)), draw(st.integers(0, 61))
    zone = draw(st.sampled_from(_ZONES))
    form = draw(st.sampled_from(["1123", "850", "asctime"]))
    clock = f"{hh:02d}:{mm:02d}:{ss:02d}"
    if form == "850":
        return f"{day}, {dd:02d}-{month}-{year % 100:02d} {clock} {zone}".strip()
    if form == "asctime":
        return f"{day} {month} {dd:2d} {clock} {year}"
    return f"{day}, {dd:02d} {month} {year} {clock} {zone}".strip()


def _provider_time(value: str) -> float | None:
    found = header_signals({"last-modified": value}, "http://a.test/", FAR_FUTURE)
    return found.past[0].when if found.past else None


@given(http_dates())
def test_the_conditional_check_and_the_provider_signals_read_a_date_alike(value: str) -> None:
    assert parse_http_date(value) == _provider_time(value)


def test_dates_the_two_parsers_once_read_apart() -> None:
    # Before 1970: a time for the conditional check, malformed for the providers.
    before_epoch = "Wed, 31 Dec 1969 23:59:59 GMT"
    assert parse_http_date(before_epoch) is None
    assert _provider_time(before_epoch) is None
    # A leap second: malformed for the conditional check, a time for the providers.
    leap = "Sat, 31 Dec 2016 23:59:60 GMT"
    assert parse_http_date(leap) == _provider_time(leap) == parse_rfc822(leap)
    assert parse_http_date(leap) is not None


def test_a_last_modified_sent_in_its_own_leap_second_is_not_kept() -> None:
    """kept_validators compares Last-Modified with Date: with a Date the check could not
    read (the leap second), it kept a validator of the second the page was sent in."""
    second = "Sat, 31 Dec 2016 23:59:59 GMT"
    leap = "Sat, 31 Dec 2016 23:59:60 GMT"
    assert kept_validators(None, second, leap) == (None, None)
