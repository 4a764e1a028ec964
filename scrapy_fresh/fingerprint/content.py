"""Page digests for verdicts: main content, volatile tokens normalised, exact hash.

A page that yields no item is judged by :func:`digest`: the page changed when the exact
hash of its normalised main content changed. The simhash of the same text comes with
it, as the *magnitude* of a change (how much moved), never as the verdict.

The pipeline, one step each:

1. **Parse** with Resiliparse (its Lexbor HTML5 parser), after decoding the bytes the way
   :func:`scrapy_fresh.fingerprint.shingles.html_to_text` does (BOM, ``encoding``, the document's
   declaration, UTF-8); a gzip-compressed body (a ``sitemap.xml.gz``) is read as what it
   holds (:func:`inflated`), not as its bytes. A ``text/`` answer that is not markup is
   text (:func:`is_plain_text`), and a JSON answer is its data (:func:`is_json`,
   :func:`canonical_json`): neither is parsed; both go on at step 5.
2. **Choose the content.** The user's include selectors (:attr:`ContentRules.include`)
   when set; else the page's main landmarks (``<main>``, ``[role=main]``), else its
   ``<article>`` elements, else the whole ``<body>``. Everything else is dropped.
3. **Drop furniture** inside it: :data:`BOILERPLATE_SELECTORS` (navigation, sidebars,
   ad slots, hidden elements), and :data:`PAGE_FURNITURE_SELECTORS` (footers, asides)
   when the whole body is read (neither only without include selectors), then the
   user's exclude selectors (:attr:`ContentRules.exclude`).
4. **Extract the text** with Resiliparse's ``extract_plain_text``: visible text only,
   one block per line; markup, attributes (and so attribute order, CSRF hidden inputs,
   asset URLs) never reach the text.
5. **Normalise**: the user's ignore patterns (:attr:`ContentRules.ignore`) are deleted,
   then the built-in rules of :data:`NOISE_RULES` replace dates, times, relative times,
   counters, session ids, CSRF tokens and cache-busting query parameters by a
   placeholder, then whitespace is collapsed.
6. **Hash**: 64-bit BLAKE2b of the UTF-8 text (the verdict) and
   :func:`scrapy_fresh.fingerprint.shingles.fingerprint_text` of the same text (the magnitude).

Selectors are CSS (Lexbor's CSS engine) or, written ``xpath:...`` or starting with ``/``
or ``(``, XPath 1.0 (lxml; pages are then parsed twice, once by lxml to mark the
elements the XPath selects). Patterns are Python regular expressions, applied with
:data:`re.MULTILINE` to the text, one block per line.
"""

from __future__ import annotations

import decimal
import functools
import hashlib
import itertools
import json
import math
import re
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple, TypeAlias

from lxml import etree
from lxml import html as lxml_html
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import CSSParserException, DocumentNode, DOMNode, HTMLTree

from scrapy_fresh._boolean import parse_flag
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.fingerprint.code import code_text
from scrapy_fresh.fingerprint.shingles import _decode_with_codec, fingerprint_text
from scrapy_fresh.providers.safexml import TooLarge, gunzip_capped, is_gzip

__all__ = [
    "BOILERPLATE_SELECTORS",
    "CONTENT_VERSION",
    "DEFAULT_RULES",
    "HASH_BITS",
    "MAX_INFLATED_BYTES",
    "NOISE_RULES",
    "PAGE_FURNITURE_SELECTORS",
    "ContentRules",
    "Digest",
    "canonical_json",
    "content_text",
    "digest",
    "digest_scheme",
    "inflated",
    "is_json",
    "is_plain_text",
    "normalize_text",
]

#: Bumped whenever the extraction, a default or a rule changes. It is part of every
#: digest's scheme tag (:func:`digest_scheme`): a digest made by an older version is not
#: compared with a new one, so an upgrade does not make every page look changed once.
CONTENT_VERSION: Final = 4
#: Largest gzip payload judged by what it holds (:func:`inflated`): the sitemap
#: protocol's 50 MB, uncompressed. A larger one (or a damaged stream) is judged by its
#: bytes as they came.
MAX_INFLATED_BYTES: Final = 50 * 1024 * 1024
#: The low bits of :attr:`Digest.exact` that hash the text; the 16 above them are the
#: scheme tag (:func:`digest_scheme`).
HASH_BITS: Final = 48

#: Furniture dropped from the content wherever it is, unless the user names what to
#: include: navigation, search forms, breadcrumbs, cookie banners, ad slots and
#: hidden elements. Class and id names are matched as whole tokens or distinctive
#: prefixes, so that ``admonition``, ``header`` or ``badge`` stay.
BOILERPLATE_SELECTORS: Final = (
    "nav",
    "[role=navigation]",
    "[role=search]",
    "[hidden]",
    "[aria-hidden=true]",
    "[class~=breadcrumb]",
    "[class~=breadcrumbs]",
    "[class*=cookie-]",
    "[class~=ad]",
    "[class~=ads]",
    "[class^=ad-]",
    '[class*=" ad-"]',
    "[class*=advert]",
    "[class*=adslot]",
    "[class*=sponsor]",
    "[id^=ad-]",
    "[id^=ad_]",
    "[id*=advert]",
    "[data-ad-slot]",
    "ins.adsbygoogle",
)
#: Furniture dropped too when the page has no main landmark and the whole ``<body>`` is
#: read: footers, sidebars and complementary content. Inside ``<main>`` or an
#: ``<article>`` these are the content's own (footnotes and sidebar boxes are ``<aside>``
#: in Sphinx pages, an article's ``<footer>`` holds its byline), so they stay there.
PAGE_FURNITURE_SELECTORS: Final = (
    "footer",
    "aside",
    "[role=contentinfo]",
    "[role=complementary]",
    "[class~=footer]",
    "[class~=sidebar]",
)
_LANDMARKS: Final = ("main, [role=main]", "article")
_BOILERPLATE_CSS: Final = ", ".join(BOILERPLATE_SELECTORS)  # one selector list: faster
_FURNITURE_CSS: Final = ", ".join(BOILERPLATE_SELECTORS + PAGE_FURNITURE_SELECTORS)
_XPATH_MARK: Final = "data-scrapy-fresh-xpath"
# Around the text of each <pre> and <code> (Unicode noncharacters, for a program's own
# use; taken out of pages first, _clean): code is content as written, see normalize_text.
_CODE_START: Final = "\ufdd0"
_CODE_END: Final = "\ufdd1"
_CODE_PIECES: Final = re.compile("([\ufdd0\ufdd1])")
_CODE_HOLE: Final = "\ufdd2"  # where a piece of code was, while the noise rules run

# ---------------------------------------------------------------------------------------
# Built-in noise rules
# ---------------------------------------------------------------------------------------

# Each pattern starts with a character class, so that the regular expression engine
# skips quickly to the places where it can match (measured: 3-5 times faster than
# starting with \b or an alternation); a look-behind right after it checks that a word
# starts there.


def _words(*alternatives: str) -> str:
    """A pattern matching any of ``alternatives`` (each a regex starting with a letter),
    case-insensitively, at the start of a word, beginning with a character class."""
    firsts = sorted({a[0].lower() + a[0].upper() for a in alternatives})
    rests = "|".join(f"(?<=[{a[0].lower()}{a[0].upper()}])(?i:{a[1:]})" for a in alternatives)
    return f"[{''.join(firsts)}](?<![\\w]{{1}}.)(?:{rests})"


_MONTHS = (
    "jan(?:uary)?", "feb(?:ruary)?", "mar(?:ch)?", "apr(?:il)?", "may", "june?", "july?",
    "aug(?:ust)?", "sep(?:t(?:ember)?)?", "oct(?:ober)?", "nov(?:ember)?", "dec(?:ember)?",
)  # fmt: skip
_MONTH = "(?i:" + "|".join(_MONTHS) + r")\.?"
_ORDINAL = r"(?:st|nd|rd|th)?"
_ZONE = r"(?:\s?(?:UTC|GMT|Z|[A-Z]{1,4}T|[+-]\d{2}:?\d{2})(?!\w))?"
_NUMERIC_DATE = (
    r"[0-9](?<![\w.]{1}[0-9])(?:"
    r"\d{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d?/\d{1,2}/\d{2}(?:\d{2})?|\d?\.\d{1,2}\.\d{4}"
    rf"|\d?{_ORDINAL}\s+{_MONTH},?\s+\d{{4}}"
    rf"|\d?:\d{{2}}(?::\d{{2}}(?:\.\d+)?)?(?:\s?(?i:[ap]\.?m\.?))?{_ZONE}"
    r")(?![\w-])"
)
_WEEKDAY = r"(?i:mon|tue(?:s)?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?i:day)?\.?,?\s+"
# Dates that begin with a word end with a year: found from the year (a 4-digit number,
# quick to find), then the month and weekday are read back from the text before it.
_YEAR = re.compile(r"[0-9](?<![\w.]{1}[0-9])\d{3}(?![\w-])")
# "Mar 4, 2024", "Monday, March 2024"; "Tue Oct  7 10:11:12 2025" (C's asctime, the
# ``date`` command: the time, already a placeholder, between day and year); "07-Oct-2025"
# (nginx's and Apache's directory listings).
_MONTH_BEFORE = re.compile(
    rf"(?<!\w)(?:(?:{_WEEKDAY})?{_MONTH}\s+(?:\d{{1,2}}{_ORDINAL},?\s+)?(?:\{{date\}}\s+)?"
    rf"|\d{{1,2}}-{_MONTH}-)\Z"
)
_WEEKDAY_BEFORE = re.compile(rf"(?<!\w){_WEEKDAY}\Z")
_LOOK_BACK = 40


def _named_dates(text: str) -> str:
    """Replace dates written with a month name ("Mar 4, 2024", "Monday, March 2024")."""
    parts: list[str] = []
    last = 0
    for year in _YEAR.finditer(text):
        start = year.start()
        before = _MONTH_BEFORE.search(text, max(last, start - _LOOK_BACK), start)
        if before is not None:
            parts += (text[last : before.start()], "{date}")
            last = year.end()
    return "".join(parts) + text[last:] if parts else text


def _weekdays(text: str) -> str:
    """Drop the weekday before a date already replaced ("Mon, {date}" -> "{date}")."""
    parts: list[str] = []
    last = 0
    start = text.find("{date}")
    while start != -1:
        before = _WEEKDAY_BEFORE.search(text, max(last, start - 12), start)
        if before is not None:
            parts.append(text[last : before.start()])
            last = start
        start = text.find("{date}", start + 6)
    return "".join(parts) + text[last:] if parts else text


_COUNTED = (
    "views?", "comments?", "likes?", "shares?", "repl(?:y|ies)", "reads", "visits?",
    "visitors?", "votes?", "upvotes?", "followers?", "subscribers?", "reactions?",
    "retweets?", "clicks", "hits", "downloads", "watching",
)  # fmt: skip
# "Views: 1,234", "Comments (12)": found from the number, the label read back.
_LABELLED_NUMBER = re.compile(r"[:(]\s*\d(?:[\d,.]*\d)?\s?[kKmM]?(?!\w)\)?")
_LABEL_BEFORE = re.compile(r"(?<!\w)(?i:" + "|".join(_COUNTED) + r")\s*\Z")


def _labelled_counters(text: str) -> str:
    """Replace counters written label first ("Views: 1,234", "Comments (12)")."""
    parts: list[str] = []
    last = 0
    for number in _LABELLED_NUMBER.finditer(text):
        start = number.start()
        label = _LABEL_BEFORE.search(text, max(last, start - 14), start)
        if label is not None:
            parts += (text[last : label.start()], "{count}")
            last = number.end()
    return "".join(parts) + text[last:] if parts else text


_UNITS = r"(?i:sec(?:ond)?|min(?:ute)?|h(?:ou)?r|day|week|month|year)s?"


_Step: TypeAlias = "tuple[str | Callable[[str], str], str, tuple[str, ...]]"


class _Rule(NamedTuple):
    """A built-in noise rule: what it replaces, and its steps.

    Each step is ``(regex or function, placeholder, probes)``: the regex's matches are
    replaced by the placeholder (a function rewrites the text itself), and the step runs
    only on texts whose lower-case form contains one of the probes (every text when there
    are none): a cheap test that spares most pages most patterns.
    """

    doc: str
    steps: tuple[_Step, ...]


#: The built-in normalisation rules, in the order they run. Each replaces what it
#: matches by a placeholder (``{date}``, ``{ago}``, ...), so that the text keeps its
#: shape; :attr:`ContentRules.noise` chooses among them by name.
NOISE_RULES: Final[Mapping[str, _Rule]] = {
    "cache_busters": _Rule(
        "cache-busting query parameters in URLs written in the text: v, ver, version, "
        "rev, _, t, ts, cb, cachebust(er), nocache, timestamp",
        (
            (
                (
                    r"[?&](?<=[\w/][?&])(?:v|ver|version|rev|_|t|ts|cb|cachebust(?:er)?|nocache"
                    r"|timestamp)=[\w.%-]*"
                ),
                "",
                ("?",),
            ),
        ),
    ),
    "session_ids": _Rule(
        "session ids written as key=value: jsessionid, PHPSESSID, ASPSESSIONID..., sid, "
        "sessionid, session_id",
        (
            (
                _words("jsessionid", "phpsessid", r"aspsessionid\w*", "sid", "sessionid")
                + r"=[\w.-]+",
                "{session}",
                ("sid=", "sessionid", "session_id="),
            ),
            (_words("session_id") + r"=[\w.-]+", "{session}", ("session_id=",)),
        ),
    ),
    "csrf_tokens": _Rule(
        "CSRF tokens and nonces written as key=value or key: value, values of 8 or more "
        "characters: csrf..., xsrf..., authenticity_token, __RequestVerificationToken, "
        "_token, nonce",
        (
            (
                (
                    r"[cCxXaAnN_](?<![\w]{1}.)"
                    r"(?:(?<=[cCxX])(?i:srf[\w-]*)|(?<=[aA])(?i:uthenticity_token)"
                    r"|(?<=_)(?i:_requestverificationtoken|token)|(?<=[nN])(?i:once))"
                    r"\s*[=:]\s*[\"']?[\w+/=.-]{8,}[\"']?"
                ),
                "{token}",
                ("srf", "token", "nonce"),
            ),
        ),
    ),
    "relative_times": _Rule(
        'relative times: "3 minutes ago", "an hour ago", "5m ago", "just now", "yesterday"',
        (
            (
                r"(?:[0-9](?<![\w.]{1}[0-9])\d*|"
                + _words("an?", r"a\s+few", "one", "few", "several")
                + rf")\s*(?:{_UNITS}|(?:s|m|h|d|w|mo|y)(?=\s))\s+(?i:ago)(?!\w)",
                "{ago}",
                (" ago",),
            ),
            (_words(r"just\s+now", "yesterday") + r"(?!\w)", "{ago}", ("just now", "yesterday")),
        ),
    ),
    "dates": _Rule(
        "absolute dates and times: ISO 8601 (2024-03-04, 2024-03-04T12:30:01Z), "
        "04/03/2024, 4.3.2024, 4 March 2024, Mar 4, 2024, March 2024, 04-Mar-2024 "
        "(directory listings), Mon Mar  4 12:30:01 2024 (asctime), a weekday before "
        "any of them, clock times (12:30, 12:30:01 pm UTC); a date and its time become "
        "one placeholder",
        (
            (_NUMERIC_DATE, "{date}", ()),
            (_named_dates, "", ()),
            (_weekdays, "", ("{date}",)),
            (r"\{date\}(?:,?\s+(?i:at\s+)?\{date\})+", "{date}", ("{date}",)),
        ),
    ),
    "counters": _Rule(
        "counters of views, comments, likes, shares, replies, visits, votes, followers, "
        'downloads...: "1,234 views", "1.2k likes", "Views: 1234"',
        (
            (
                r"[0-9](?<![\w.]{1}[0-9])(?:[\d,.]*\d)?\s?[kKmM]?\s+(?i:"
                + "|".join(_COUNTED)
                + r")(?!\w)",
                "{count}",
                (),
            ),
            (_labelled_counters, "", (":", "(")),
        ),
    ),
}

_Compiled: TypeAlias = "tuple[Callable[[str], str], tuple[str, ...]]"

#: The noise rules that run on link targets (:attr:`ContentRules.links`): those about
#: URLs. Dates, times and counts in a target are content (``/reports/2024-05-01.pdf``).
URL_NOISE_RULES: Final = ("cache_busters", "session_ids", "csrf_tokens")


def _substitute(pattern: re.Pattern[str], placeholder: str) -> Callable[[str], str]:
    return functools.partial(pattern.sub, placeholder)


@functools.lru_cache(maxsize=64)
def _noise_steps(names: tuple[str, ...]) -> tuple[_Compiled, ...]:
    """(text -> text, probes) of every step of the named rules, in order."""
    steps: list[_Compiled] = []
    for name, rule in NOISE_RULES.items():
        if name in names:
            for step, placeholder, probes in rule.steps:
                if isinstance(step, str):
                    step = _substitute(re.compile(step), placeholder)
                steps.append((step, probes))
    return tuple(steps)


# ---------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------


def _is_xpath(selector: str) -> bool:
    return selector.startswith(("xpath:", "/", "("))


def _xpath(selector: str) -> str:
    return selector.removeprefix("xpath:")


@functools.lru_cache(maxsize=1)
def _probe_tree() -> HTMLTree:
    return HTMLTree.parse("<html><body><p>x</p></body></html>")


def _strings(value: Any, where: str, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} ({value!r}) must be a list of {what}.")
    return tuple(v.strip() for v in value if v.strip())


def _check_selectors(selectors: tuple[str, ...], where: str) -> None:
    for selector in selectors:
        if _is_xpath(selector):
            try:
                etree.XPath(_xpath(selector))
            except etree.XPathSyntaxError as error:
                raise ConfigError(
                    f"{where} contains {selector!r}, which is not a valid XPath 1.0 "
                    f"expression ({error})."
                ) from None
            continue
        document = _probe_tree().document
        assert document is not None
        try:
            document.query_selector_all(selector)
        except CSSParserException as error:
            raise ConfigError(
                f"{where} contains {selector!r}, which is not a valid CSS selector ({error}); "
                "write XPath as 'xpath:...'."
            ) from None


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.MULTILINE)
    except re.error as error:
        raise ConfigError(
            f"{where} contains {pattern!r}, which is not a valid Python regular "
            f"expression ({error})."
        ) from None


def _check_patterns(patterns: tuple[str, ...], where: str) -> tuple[re.Pattern[str], ...]:
    return tuple(_compile(pattern, where) for pattern in patterns)


@dataclass(frozen=True)
class ContentRules:
    """What of a page is content: selectors to include and exclude, patterns to ignore.

    Build it with :meth:`build`, which validates everything and names the source of a bad
    value in the :class:`~scrapy_fresh.exceptions.ConfigError`.

    :param include: CSS or XPath selectors of the elements whose text is the content;
        empty: the page's main content (landmarks, else ``<body>``).
    :param exclude: selectors of elements dropped from the content.
    :param ignore: regular expressions whose matches are deleted from the text.
    :param noise: names of the :data:`NOISE_RULES` that run (default: all).
    :param links: the targets of the content's links (``<a href>``) and images
        (``<img src>``) are content too, written in the text after each as ``<URL>``
        (:setting:`FRESH_CONTENT_LINKS`; default: their text and ``alt`` alone).
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    noise: tuple[str, ...] = tuple(NOISE_RULES)
    links: bool = False
    _ignore: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _noise: tuple[_Compiled, ...] = field(init=False, repr=False, compare=False)
    _url_noise: tuple[_Compiled, ...] = field(init=False, repr=False, compare=False)
    #: 16 bits naming :data:`CONTENT_VERSION` and these rules: the top of every
    #: :attr:`Digest.exact` made with them (:func:`digest_scheme`).
    scheme: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Compiled once; build() has validated the values with their sources' names.
        object.__setattr__(self, "_ignore", _check_patterns(self.ignore, "ignore"))
        object.__setattr__(self, "_noise", _noise_steps(self.noise))
        url_rules = tuple(name for name in self.noise if name in URL_NOISE_RULES)
        object.__setattr__(self, "_url_noise", _noise_steps(url_rules))
        named = repr(
            (CONTENT_VERSION, self.include, self.exclude, self.ignore, self.noise)
            + (("links",) if self.links else ())  # without: the tags rules had before it
        )
        tag = hashlib.blake2b(named.encode("utf-8"), digest_size=2).digest()
        object.__setattr__(self, "scheme", int.from_bytes(tag, "big"))

    @classmethod
    def build(
        cls,
        *,
        include: Any = None,
        exclude: Any = None,
        ignore: Any = None,
        noise: Any = tuple(NOISE_RULES),
        links: Any = False,
        names: Mapping[str, str] | None = None,
    ) -> ContentRules:
        """Return validated rules; raise ConfigError naming the bad value's source.

        :param names: where each argument came from, for error messages, e.g.
            ``{"include": "FRESH_CONTENT_INCLUDE"}`` (default: the argument's name).

        >>> ContentRules.build(include=["div.price"], ignore=[r"\\d+ in stock"]).include
        ('div.price',)
        >>> ContentRules.build(ignore=["(unclosed"], names={"ignore": "FRESH_CONTENT_IGNORE"})
        Traceback (most recent call last):
        ...
        scrapy_fresh.exceptions.ConfigError: FRESH_CONTENT_IGNORE contains '(unclosed', which is not a valid Python regular expression (missing ), unterminated subpattern at position 0).
        """
        where = {
            "include": "include", "exclude": "exclude", "ignore": "ignore", "noise": "noise",
            "links": "links",
        }  # fmt: skip
        where.update(names or {})
        inc = _strings(include, where["include"], "CSS or XPath selectors")
        exc = _strings(exclude, where["exclude"], "CSS or XPath selectors")
        ign = _strings(ignore, where["ignore"], "regular expressions")
        rules = _strings(noise, where["noise"], "noise rule names")
        for selectors, name in ((inc, "include"), (exc, "exclude")):
            _check_selectors(selectors, where[name])
        unknown = [r for r in rules if r not in NOISE_RULES]
        if unknown:
            raise ConfigError(
                f"{where['noise']} names unknown rules {unknown!r}; expected some of "
                f"{', '.join(NOISE_RULES)}."
            )
        _check_patterns(ign, where["ignore"])
        return cls(
            inc, exc, ign, tuple(r for r in NOISE_RULES if r in rules),
            parse_flag(links, where["links"]),
        )  # fmt: skip

    def replace(self, **changes: Any) -> ContentRules:
        """Return these rules with some values replaced (and validated), e.g. per request."""
        values: dict[str, Any] = {
            "include": self.include,
            "exclude": self.exclude,
            "ignore": self.ignore,
            "noise": self.noise,
            "links": self.links,
        }
        names = changes.pop("names", None)
        values.update(changes)
        return ContentRules.build(**values, names=names)

    @classmethod
    def from_settings(cls, settings: Any) -> ContentRules:
        """Rules from the ``FRESH_CONTENT_*`` settings (anything with ``get(name)``);
        raise ConfigError naming the setting of a bad value (checked at start-up)."""
        values = {arg: _get(settings, name) for arg, name in SETTINGS.items()}
        return cls.build(**values, names=SETTINGS)

    def for_spider(self, spider: Any) -> ContentRules:
        """These rules with the spider's ``fresh_content_*`` attributes in place of the
        settings' values (an attribute replaces, it does not extend)."""
        changes = {
            arg: getattr(spider, name) for arg, name in META_KEYS.items() if hasattr(spider, name)
        }
        if not changes:
            return self
        names = {arg: f"spider attribute {name}" for arg, name in META_KEYS.items()}
        return self.replace(**changes, names=names)

    def for_request(self, meta: Mapping[str, Any]) -> ContentRules:
        """These rules with the request's ``fresh_content_*`` meta keys in place of the
        spider's or the settings' values."""
        changes = {arg: meta[name] for arg, name in META_KEYS.items() if name in meta}
        if not changes:
            return self
        key = tuple(sorted(_frozen(changes).items()))
        try:
            return _cached_replace(self, key)  # the same meta values on many requests
        except TypeError:  # unhashable values: build() says what is wrong with them
            return self.replace(**changes, names=_META_NAMES)


#: Settings read by :meth:`ContentRules.from_settings`, by argument.
SETTINGS: Final = {
    "include": "FRESH_CONTENT_INCLUDE",
    "exclude": "FRESH_CONTENT_EXCLUDE",
    "ignore": "FRESH_CONTENT_IGNORE",
    "noise": "FRESH_CONTENT_NOISE_RULES",
    "links": "FRESH_CONTENT_LINKS",
}
#: Spider attributes and request meta keys that replace the settings, by argument.
META_KEYS: Final = {
    "include": "fresh_content_include",
    "exclude": "fresh_content_exclude",
    "ignore": "fresh_content_ignore",
    "noise": "fresh_content_noise_rules",
    "links": "fresh_content_links",
}


def _get(settings: Any, name: str) -> Any:
    value = settings.get(name)
    if value is None and name == SETTINGS["noise"]:
        return tuple(NOISE_RULES)
    return False if value is None and name == SETTINGS["links"] else value


def _frozen(changes: Mapping[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in changes.items()}


_META_NAMES: Final = {arg: f"meta[{name!r}]" for arg, name in META_KEYS.items()}


@functools.lru_cache(maxsize=256)
def _cached_replace(rules: ContentRules, changes: tuple[tuple[str, Any], ...]) -> ContentRules:
    return rules.replace(**dict(changes), names=_META_NAMES)


#: All the built-in noise rules, no user selectors or patterns.
DEFAULT_RULES: Final = ContentRules.build()


# ---------------------------------------------------------------------------------------
# Extraction
# ---------------------------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")
_UTF8: Final = frozenset({"utf-8", "utf8", "UTF-8"})


def _clean(text: str, codec: str | None = None) -> str:
    """``text`` with NUL and lone surrogates (Lexbor takes UTF-8) replaced by U+FFFD.

    ``codec``: the codec that decoded ``text``, if any; Python's UTF-8 decoder never
    yields a lone surrogate (encoded surrogates are invalid bytes, replaced by U+FFFD).
    """
    text = text.replace("\x00", "\ufffd")
    if text.isascii():
        return text
    if codec not in _UTF8:
        try:
            text.encode("utf-8")  # a check 5-10 times faster than a regex pass
        except UnicodeEncodeError:
            text = _SURROGATE.sub("\ufffd", text)
    if _CODE_START in text or _CODE_END in text:  # they mark code (_mark_code)
        text = text.replace(_CODE_START, "").replace(_CODE_END, "")
    return text


def _outermost(nodes: Iterable[DOMNode]) -> list[DOMNode]:
    chosen = list(dict.fromkeys(nodes))
    keep = set(chosen)
    result = []
    for node in chosen:
        parent = node.parent
        while parent is not None and parent not in keep:
            parent = parent.parent
        if parent is None:
            result.append(node)
    return result


def _keep_only(tree: HTMLTree, nodes: list[DOMNode]) -> None:
    """Remove from ``tree`` everything but ``nodes``, their content and their ancestors."""
    if len(nodes) == 1:  # the common case: no sets of nodes (each lookup costs a weakref)
        _keep_one(nodes[0])
        return
    keep = set(nodes)
    path: set[DOMNode] = set()
    for node in nodes:
        parent = node.parent
        while parent is not None and parent not in path:
            path.add(parent)
            parent = parent.parent
    for parent in path:
        for child in list(parent.child_nodes):
            if child not in keep and child not in path:
                child.decompose()


def _keep_one(node: DOMNode) -> None:
    """:func:`_keep_only` for one node: remove the siblings of it and of its ancestors."""
    parent = node.parent
    while parent is not None:
        child = parent.first_child
        while child is not None:
            following = child.next
            if child != node:
                child.decompose()
            child = following
        node, parent = parent, parent.parent


def _marker(index: int) -> str:
    """The CSS selector of the elements marked for the ``index``-th XPath selector."""
    return f"[{_XPATH_MARK}~=x{index}]"


def _css(rules: ContentRules, selectors: tuple[str, ...]) -> list[str]:
    """CSS for ``selectors`` (of ``rules``): XPath selectors become their marks."""
    every = rules.include + rules.exclude
    return [_marker(every.index(s)) if _is_xpath(s) else s for s in selectors]


def _mark_xpath(text: str, rules: ContentRules) -> str:
    """Parse with lxml, mark the elements each XPath selects, and serialise again."""
    try:
        root = lxml_html.document_fromstring(text.strip() or "<html></html>")
    except etree.ParserError:  # a doctype or a comment alone: "Document is empty"
        return text
    for index, selector in enumerate(rules.include + rules.exclude):
        if not _is_xpath(selector):
            continue
        found = etree.XPath(_xpath(selector))(root)
        for element in found if isinstance(found, list) else ():
            if isinstance(element, etree._Element):  # not text, attributes or numbers
                marks = element.get(_XPATH_MARK, "")
                element.set(_XPATH_MARK, f"{marks} x{index}".strip())
    return str(etree.tostring(root, encoding="unicode", method="html"))


def _landmarks(document: DocumentNode, landmark: str) -> Iterable[DOMNode]:
    """The elements the CSS ``landmark`` (one of :data:`_LANDMARKS`) selects, in any
    order: found by tag and attribute lookups, 30 times faster than the CSS engine."""
    if landmark == "article":
        return document.get_elements_by_tag_name("article")
    return itertools.chain(
        document.get_elements_by_tag_name("main"), document.get_elements_by_attr("role", "main")
    )


#: The elements whose target :attr:`ContentRules.links` writes into the text, and the
#: attribute that holds it.
_TARGETS: Final = (("a", "href"), ("img", "src"))


def _write_targets(document: DocumentNode, skip: list[str], rules: ContentRules) -> None:
    """Write the target of each link and image into the text after it, as ``<URL>``
    (:attr:`ContentRules.links`): a link that points elsewhere under the same words is
    then an edit. Those in skipped elements (``skip``: CSS) are left out with them. A
    target is written as code is (:func:`_mark_code`): only the URL rules
    (:data:`URL_NOISE_RULES`) and the user's ignore patterns touch it."""
    skipped: set[DOMNode] = set()
    for selector in skip:
        skipped.update(document.query_selector_all(selector))
    for tag, attribute in _TARGETS:
        for node in document.get_elements_by_tag_name(tag).values():
            target = " ".join((node.getattr(attribute) or "").split())
            parent = node.parent
            if not target or parent is None or _within(node, skipped):
                continue
            for step, probes in rules._url_noise:
                if not probes or any(p in target.lower() for p in probes):
                    target = step(target)
            text = document.create_text_node(f" {_CODE_START}<{target}>{_CODE_END} ")
            following = node.next
            if following is None:
                parent.append_child(text)
            else:
                parent.insert_before(text, following)


def _within(node: DOMNode, nodes: set[DOMNode]) -> bool:
    """Whether ``node`` or one of its ancestors is one of ``nodes``."""
    current: DOMNode | None = node
    while current is not None:
        if current in nodes:
            return True
        current = current.parent
    return False


def _mark_code(document: DocumentNode) -> None:
    """Put :data:`_CODE_START` and :data:`_CODE_END` around the text of each ``<pre>``
    and ``<code>`` element (nested ones too: :func:`normalize_text` counts the depth;
    finding the outermost ones costs more than the marks)."""
    # values(): the whole list at once (iterating the collection walks it anew for
    # each item), taken before the tree changes
    code = [
        *document.get_elements_by_tag_name("pre").values(),
        *document.get_elements_by_tag_name("code").values(),
    ]
    for node in code:
        first = node.first_child
        if first is not None:
            node.insert_before(document.create_text_node(_CODE_START), first)
            node.append_child(document.create_text_node(_CODE_END))


def _most_of(nodes: list[DOMNode], body: DOMNode) -> bool:
    """Whether ``nodes`` (a page's ``<article>`` elements) hold more than half of its
    body's text: the page's content, not reviews or teasers beside it."""
    return 2 * sum(len(node.text or "") for node in nodes) > len(body.text or "")


def _extract(text: str, rules: ContentRules) -> str:
    if any(_is_xpath(s) for s in rules.include + rules.exclude):
        text = _mark_xpath(text, rules)
    tree = HTMLTree.parse(text)
    document = tree.document
    if tree.body is None or document is None:
        return ""
    skip = _css(rules, rules.exclude)
    if rules.include:
        found: list[DOMNode] = []
        for selector in _css(rules, rules.include):
            found.extend(document.query_selector_all(selector))
        nodes = _outermost(found)
        if not nodes:
            return ""
        _keep_only(tree, nodes)
    else:
        for landmark in _LANDMARKS:
            nodes = _outermost(_landmarks(document, landmark))
            if nodes and (landmark != "article" or _most_of(nodes, tree.body)):
                _keep_only(tree, nodes)
                skip.append(_BOILERPLATE_CSS)
                break
        else:
            skip.append(_FURNITURE_CSS)
    if rules.links:
        _write_targets(document, skip, rules)
    _mark_code(document)
    text = extract_plain_text(
        tree,
        preserve_formatting=True,
        main_content=False,
        alt_texts=True,
        form_fields=True,  # a shop's stock is often on a button or in a <select>
        skip_elements=skip,
    )
    return str(text)


def normalize_text(text: str, rules: ContentRules = DEFAULT_RULES) -> str:
    """Apply the user's ignore patterns, then the noise rules, then collapse whitespace.

    Code (the text of ``<pre>`` and ``<code>``, between the marks :func:`content_text`'s
    extraction puts around it) is content as written: no noise rule touches it, and a
    block of lines keeps each line's indentation.

    >>> normalize_text("Posted 3 minutes ago  by Ann\\nUpdated Mar 4, 2024 12:30 UTC\\n1,234 views")
    'Posted {ago} by Ann Updated {date} {count}'
    >>> normalize_text("Price: 51.77 EUR, 19 available")
    'Price: 51.77 EUR, 19 available'
    """
    for pattern in rules._ignore:
        text = pattern.sub("", text)
    if _CODE_START not in text:
        return " ".join(_denoise(text, rules).split())
    prose, code = _code_pieces(text)
    if any(_CODE_HOLE in p for p in prose):
        prose = [_denoise(p, rules) for p in prose]  # one at a time: slower, same answer
    else:
        denoised = _denoise(_CODE_HOLE.join(prose), rules)
        if denoised.count(_CODE_HOLE) == len(code):
            prose = denoised.split(_CODE_HOLE)
        else:  # a rule took a hole with it
            prose = [_denoise(p, rules) for p in prose]
    out = [" ".join(prose[0].split())]
    for block, after in zip(code, prose[1:], strict=True):
        out += (code_text(block), " ".join(after.split()))
    return " ".join(part for part in out if part)


def _code_pieces(text: str) -> tuple[list[str], list[str]]:
    """The prose and the code of ``text`` (code: between the marks, at any depth):
    ``prose[0], code[0], prose[1], ..., prose[-1]``, one more prose piece than code."""
    prose: list[str] = []
    code: list[str] = []
    depth = 0
    run: list[str] = []
    for token in _CODE_PIECES.split(text):
        if token == _CODE_START:
            if depth == 0 and code and not any(run):  # code right after code: one piece
                run = [code.pop()]
            elif depth == 0:
                prose.append("".join(run))
                run = []
            depth += 1
        elif token == _CODE_END:
            depth -= 1
            if depth == 0:
                run = _end_code(prose, code, run)
        else:
            run.append(token)
    if depth:
        run = _end_code(prose, code, run)
    prose.append("".join(run))
    return prose, code


def _end_code(prose: list[str], code: list[str], run: list[str]) -> list[str]:
    """End a code piece (``run``); return the run that goes on. Marks with nothing
    between them (a ``<code>`` holding only empty elements) are no code: the prose
    before them goes on, as if they were not there."""
    block = "".join(run)
    if block:
        code.append(block)
        return []
    return [prose.pop()]


def _denoise(text: str, rules: ContentRules) -> str:
    """``text`` with the noise rules applied (:data:`NOISE_RULES`)."""
    lower = text.lower() if rules._noise else ""
    for step, probes in rules._noise:
        # Placeholders are probed in the text as it is now; words in the original.
        if not probes or any(p in (text if p[0] == "{" else lower) for p in probes):
            text = step(text)
    return text


def content_text(
    html: str | bytes,
    encoding: str | None = None,
    rules: ContentRules = DEFAULT_RULES,
    *,
    plain: bool | None = None,
    data: bool = False,
) -> str:
    """Return the normalised content text of a page: what :func:`digest` hashes.

    With ``plain`` True (a ``text/plain`` answer: :func:`is_plain_text`) the document is
    text, not markup: all of it is content, ``<pathspec>`` is words and not a tag, and
    selectors and link targets do not apply; the noise rules do (unless the document
    starts as an HTML page does, ``<!DOCTYPE html>`` or ``<html>``: a page served as
    ``text/plain`` by mistake is still read as a page). False: markup. None
    (the answer's type did not say it is text): markup, but for a gzip stream
    (:func:`inflated`: its type names the compression, not the document) that does not
    start with ``<``, such as a ``manual.txt.gz``, which is text.

    With ``data`` True (a JSON answer: :func:`is_json`) the document is its data, in
    :func:`canonical_json` form: its layout and the order of an object's members are not
    content; the noise rules apply to it as to text. A body that is not JSON is text.

    >>> content_text(b"<html><body><nav>Home</nav><main><p>Hello <b>world</b></p>"
    ...              b"<p>Updated 2024-03-04</p><div class='ad-slot'>Buy!</div></main>"
    ...              b"<footer>(c) 2024</footer></body></html>")
    'Hello world Updated {date}'
    >>> content_text(b"git add [--] [<pathspec>...]\\nUpdated 2024-03-04", plain=True)
    'git add [--] [<pathspec>...] Updated {date}'
    >>> content_text(b"<!DOCTYPE html><nav>Home</nav><p>Hi</p>", plain=True)
    'Hi'
    >>> import gzip
    >>> content_text(gzip.compress(b"dpkg --set-selections <selection.txt  |state|"))
    'dpkg --set-selections <selection.txt |state|'
    >>> content_text(b'{"stock": 3,\\n "price": 9.5}', data=True)
    '{"price":9.5,"stock":3}'
    """
    if not isinstance(rules, ContentRules):
        raise TypeError(f"rules ({rules!r}) must be a ContentRules; use ContentRules.build().")
    document = inflated(html)
    text, codec = _decode_with_codec(document, encoding)
    if data:
        canonical = canonical_json(text)
        if canonical is not None:
            return normalize_text(_clean(canonical), rules)
        plain = True  # said to be JSON and is not: read as text, never as a page
    if plain is None:
        plain = document is not html and not text.lstrip().startswith("<")
    elif plain and _HTML_START.match(text):  # a page served as text/plain by mistake
        plain = False
    if plain:
        return normalize_text(_clean(text, codec), rules)
    return normalize_text(_extract(separate_xml(_clean(text, codec)), rules), rules)


#: How an HTML page starts: one served as ``text/plain`` (a server's default type for
#: an unknown extension) is still read as a page.
_HTML_START: Final = re.compile(r"\s*<(?:!doctype\s+html|html[\s>])", re.IGNORECASE)
#: Subtypes of ``text/`` that are markup, read as a page (HTML) or as XML.
_MARKUP_SUBTYPES: Final = frozenset({"html", "xml", "xhtml", "xml-external-parsed-entity"})


def is_plain_text(content_type: str | None) -> bool:
    """Whether an answer of this ``Content-Type`` is text, not markup: any ``text/``
    type but HTML and XML (``text/plain``, ``text/csv``, ``text/css``, ``text/markdown``,
    ``text/x-rst``...). Its content is read by :func:`content_text` with ``plain``; other
    types pass None there.

    >>> is_plain_text("text/plain; charset=utf-8"), is_plain_text("TEXT/CSV")
    (True, True)
    >>> is_plain_text("text/html"), is_plain_text("text/xml"), is_plain_text("text/x+xml")
    (False, False, False)
    >>> is_plain_text("application/octet-stream"), is_plain_text(None)
    (False, False)
    """
    if not content_type:
        return False
    kind, _, subtype = content_type.split(";", 1)[0].strip().lower().partition("/")
    return (
        kind == "text"
        and bool(subtype)
        and subtype not in _MARKUP_SUBTYPES
        and not (subtype.endswith("+xml"))
    )


def is_json(content_type: str | None) -> bool:
    """Whether an answer of this ``Content-Type`` is JSON: ``application/json``,
    ``text/json`` or any ``+json`` type (``application/ld+json``,
    ``application/vnd.api+json``...). Its content is read by :func:`content_text` with
    ``data``.

    >>> is_json("application/json; charset=utf-8"), is_json("application/LD+JSON")
    (True, True)
    >>> is_json("text/html"), is_json("application/jsonp"), is_json(None)
    (False, False, False)
    """
    if not content_type:
        return False
    kind, _, subtype = content_type.split(";", 1)[0].strip().lower().partition("/")
    return (subtype == "json" and kind in ("application", "text")) or subtype.endswith("+json")


def canonical_json(text: str) -> str | None:
    """The JSON document ``text`` without what is not data: no layout, escapes written
    out, and an object's members sorted by name (an object is an unordered collection:
    RFC 8259, Section 4; a server may write them in any order from one answer to the
    next). Arrays keep their order. None if ``text`` is not JSON (or nests too deep).

    >>> canonical_json('{"b": [2, 1], "a": "\\u00e9t\\u00e9"}')
    '{"a":"été","b":[2,1]}'
    >>> canonical_json('{"b":[2,1],"a":"été"}') == canonical_json('{ "a" : "été", "b" : [2, 1] }')
    True
    >>> canonical_json("<html>") is None
    True
    """
    try:
        value = json.loads(text.lstrip("\ufeff"), parse_float=_json_number)
        canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):  # not JSON; nested past the interpreter's limit
        return None
    if not canonical.isascii() and _SURROGATE.search(canonical):
        # _clean would make every lone surrogate U+FFFD: written out, each stays itself
        canonical = _SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", canonical)
    return canonical


#: Digits of the largest integer a JSON number with a fraction or an exponent is read
#: as (below Python's 4300-digit limit on writing an int out); larger: not data.
_JSON_INT_DIGITS: Final = 4000


def _json_number(literal: str) -> int | float:
    """A JSON number with a fraction or an exponent as :func:`canonical_json` keeps it:
    one value, one form (JSON has one number type: ``1.0``, ``1e0`` and ``1`` are
    written ``1``; ``0.10`` and ``1e-1`` are ``0.1``). A value a float would change
    (past its 17 digits, its range) raises ValueError: the body is then read as text,
    where a change of any digit is a change (as a float, ``1e400`` and ``2e400`` are
    both Infinity).

    >>> _json_number("1.0"), _json_number("1E+2"), _json_number("-0.0"), _json_number("0.10")
    (1, 100, 0, 0.1)
    """
    number = float(literal)
    if repr(number) == literal and not number.is_integer():
        return number  # written as Python writes it: the common case, no Decimal
    exact = decimal.Decimal(literal)
    if exact == exact.to_integral_value():
        if exact.adjusted() >= _JSON_INT_DIGITS:
            raise ValueError(f"{literal[:40]!r}: too large an integer to write out")
        return int(exact)
    if not math.isfinite(number) or decimal.Decimal(repr(number)) != exact:
        raise ValueError(f"{literal[:40]!r} is not exactly a float")
    return number


def inflated(body: str | bytes) -> str | bytes:
    """What a gzip-compressed body holds (a ``sitemap.xml.gz`` served as a file, without
    ``Content-Encoding``, which Scrapy would have undone), else ``body`` itself.

    A gzip stream's header carries the time it was written (and often a file name): a
    document compressed again with the same content is other bytes. Its content is what
    it inflates to, as Scrapy's ``SitemapSpider`` reads it. Inflated as a stream up to
    :data:`MAX_INFLATED_BYTES` (a gzip bomb stops there); a larger or damaged stream is
    left as it came.

    >>> import gzip
    >>> xml = b"<?xml version='1.0'?><urlset><url><loc>a</loc></url></urlset>"
    >>> inflated(gzip.compress(xml, mtime=1)) == inflated(gzip.compress(xml, mtime=2)) == xml
    True
    >>> inflated(b"<p>not gzip</p>")
    b'<p>not gzip</p>'
    """
    if isinstance(body, str):
        return body
    data = bytes(body) if isinstance(body, (bytearray, memoryview)) else body
    if not isinstance(data, bytes) or not is_gzip(data):
        return body
    try:
        return b"".join(gunzip_capped(data, MAX_INFLATED_BYTES))
    except (TooLarge, zlib.error):
        return body


_XML_DECLARATION = re.compile(r"\s*<\?xml\b", re.IGNORECASE)
_BETWEEN_TAGS = re.compile(r">\s*<")


def separate_xml(text: str) -> str:
    """An XML document (a sitemap, a feed: it starts with ``<?xml``) with a space between
    its elements: an HTML parser knows none of them, so their texts would run together
    (``post-1`` and ``2000-01-01`` as ``post-12000-01-01``, which no date rule sees).

    >>> separate_xml('<?xml version="1.0"?><url><loc>a</loc><lastmod>b</lastmod></url>')
    '<?xml version="1.0"?> <url> <loc>a</loc> <lastmod>b</lastmod> </url>'
    >>> separate_xml("<p><b>x</b><i>y</i></p>")  # HTML is left as it is
    '<p><b>x</b><i>y</i></p>'
    """
    return _BETWEEN_TAGS.sub("> <", text) if _XML_DECLARATION.match(text) else text


class Digest(NamedTuple):
    """A page's digest: ``exact`` decides "changed", ``simhash`` says how much."""

    #: 48-bit BLAKE2b of the normalised content text under the 16-bit scheme tag of the
    #: rules that made it (:func:`digest_scheme`): of two digests with the same tag, the
    #: page changed iff they differ.
    exact: int
    #: :func:`~scrapy_fresh.fingerprint.shingles.fingerprint_text` of the same text: compare two
    #: with :func:`~scrapy_fresh.fingerprint.shingles.hamming` for the size of a change.
    simhash: int


def digest(
    html: str | bytes,
    encoding: str | None = None,
    rules: ContentRules = DEFAULT_RULES,
    *,
    plain: bool | None = None,
    data: bool = False,
) -> Digest:
    """Return the :class:`Digest` of a page: exact hash and simhash of its content text.

    :param html: the page, ``str`` or ``bytes`` (decoded as by
        :func:`~scrapy_fresh.fingerprint.shingles.html_to_text`).
    :param encoding: the HTTP charset of ``html`` when it is bytes.
    :param rules: what is content (:class:`ContentRules`; default :data:`DEFAULT_RULES`).
    :param plain: True: the document is text, not markup (a ``text/plain`` answer;
        :func:`is_plain_text`); False: markup; None: markup unless it is a gzip stream
        of text (see :func:`content_text`).
    :param data: True: a JSON answer (:func:`is_json`), read as its data (see
        :func:`content_text`).

    >>> page = "<html><body><main><p>Ducks swim.</p><p>%s</p></main></body></html>"
    >>> digest(page % "Built 2024-03-04 12:30") == digest(page % "Built 2025-01-09 08:01")
    True
    >>> digest(page % "Price 51.77") == digest(page % "Price 52.77")
    False
    """
    text = content_text(html, encoding, rules, plain=plain, data=data)
    hashed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=6).digest(), "big")
    return Digest(rules.scheme << HASH_BITS | hashed, fingerprint_text(text))


def digest_scheme(exact: int) -> int:
    """The scheme tag of a :attr:`Digest.exact` (:attr:`ContentRules.scheme`): two digests
    of one page say whether it changed only when their tags are equal. Otherwise the
    extraction (:data:`CONTENT_VERSION`) or the user's rules changed between them, and the
    verdict falls back on the simhash distance (:func:`~scrapy_fresh.fingerprint.verdict.judge`).

    >>> page = "<main><p>Widget 12.50 EUR</p><aside>Also 3.10</aside></main>"
    >>> digest_scheme(digest(page).exact) == DEFAULT_RULES.scheme
    True
    >>> narrow = ContentRules.build(exclude=["aside"])
    >>> digest_scheme(digest(page, rules=narrow).exact) == DEFAULT_RULES.scheme
    False
    """
    return exact >> HASH_BITS
