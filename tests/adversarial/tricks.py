"""The URL tricks the adversarial tests throw at every entry point (a Hypothesis strategy).

(Imported as ``tests.adversarial.tricks``.)
"""

from __future__ import annotations

from urllib.parse import urlsplit

from hypothesis import strategies as st
from scrapy import Request

COVERED = "127.0.0.1:18080"
BYPASS = "http://evil.example\\@127.0.0.1:18080/x"
#: Pieces an attacker strings together around the covered host.
PIECES = [
    "127.0.0.1",
    "127.0.0.1:18080",
    "evil.example",
    "evil.example:18080",
    "127.0.0.2",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "2130706433",
    "127.1",
    "0x7f.0.0.1",
    "xn--bcher-kva.example",
    "bücher.example",
    "xn--zz.example",
    "127.0.0.1.",
    "EVIL.EXAMPLE",
    ":18080",
    ":018080",
    ":80",
    ":18081",
    ":",
    "\\",
    "@",
    "%40",
    "%2F",
    "%2f",
    "%5C",
    "/",
    "//",
    "\t",
    "\n",
    "\r",
    " ",
    "#",
    "?",
    ".",
    "user:pw@",
    "%00",
    "\u3002",  # ideographic full stop: a dot to IDNA
]
SCHEMES = ["http://", "https://", "HTTP://", "HtTpS://", "http:", "http:/", "http:\\\\", "ftp://"]

urls = st.builds(
    lambda scheme, parts: scheme + "".join(parts),
    st.sampled_from(SCHEMES),
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=6),
)


def fetched_from(url: str) -> tuple[str, int]:
    """The (host, port) Scrapy's downloader connects to for ``url``."""
    parts = urlsplit(Request(url).url)
    assert parts.hostname is not None
    return parts.hostname, parts.port or {"http": 80, "https": 443}[parts.scheme]
