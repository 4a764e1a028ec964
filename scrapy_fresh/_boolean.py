"""Yes/no values as Scrapy's ``getbool`` reads them: the one reading of the package."""

from __future__ import annotations

from typing import Any

from scrapy_fresh.exceptions import ConfigError

__all__ = ["parse_flag"]

_TRUE = ("1", "true")
_FALSE = ("0", "false")


def parse_flag(raw: Any, name: str) -> bool:
    """``raw`` as True or False: True/False, 1/0, or "true"/"false" (any case); anything
    else raises :class:`~scrapy_fresh.exceptions.ConfigError` naming ``name``.

    >>> parse_flag("TRUE", "X"), parse_flag(0, "X")
    (True, False)
    """
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int) and raw in (0, 1):
        return bool(raw)
    word = raw.strip().lower() if isinstance(raw, str) else None
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise ConfigError(f"{name} ({raw!r}) must be True or False (or 1/0, 'true'/'false').")
