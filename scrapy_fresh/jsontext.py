"""Compact JSON text from the standard library's C encoder, built once.

:meth:`json.JSONEncoder.encode` builds a new C encoder (and a Python float formatter)
at every call; for the small values of the hot paths (a record's columns, a visit-log
line) that set-up costs about as much as the encoding. :func:`compact_encoder` builds
the C encoder once and gives the same text as ``json.JSONEncoder(separators=(",", ":"),
check_circular=False, ...).encode`` (``bench/json_encode.py`` times both;
``tests/test_jsontext.py`` compares them). Without the C encoder (an interpreter built
without it) it is that ``encode``.

No check for circular values is made: a value that contains itself raises
:class:`RecursionError` (``ValueError`` with the check). Use it for values this package
builds, not for a spider's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _std
from typing import Any

__all__ = ["compact_encoder"]


def compact_encoder(
    *, ensure_ascii: bool = True, allow_nan: bool = True, sort_keys: bool = False
) -> Callable[[Any], str]:
    """A function of one value that returns its compact JSON text (no spaces)."""
    reference = json.JSONEncoder(
        ensure_ascii=ensure_ascii,
        allow_nan=allow_nan,
        sort_keys=sort_keys,
        separators=(",", ":"),
        check_circular=False,
    )
    make = getattr(_std, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython has it
        return reference.encode
    strings = _std.encode_basestring_ascii if ensure_ascii else _std.encode_basestring
    chunks = make(
        None,  # no circular check (check_circular=False)
        reference.default,
        strings,
        None,  # no indent
        reference.key_separator,
        reference.item_separator,
        sort_keys,
        False,  # skipkeys
        allow_nan,
    )
    join = "".join

    def encode(value: Any) -> str:
        return join(chunks(value, 0))

    return encode
