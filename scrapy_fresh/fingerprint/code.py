"""Code as text is compared: the one normalising of code, for page digests (a ``<pre>``
block, :mod:`scrapy_fresh.fingerprint.content`) and item fields a rule marks as code
(:mod:`scrapy_fresh.fingerprint.itemfields`)."""

from __future__ import annotations

__all__ = ["code_text"]


def code_text(block: str) -> str:
    """Code as written: no noise rules; a block of lines keeps each line's indentation
    (a line moved out of a loop is an edit), trailing spaces and blank lines go.

    >>> code_text("for x in xs:\\n    check(x)\\n\\n    count += 1   \\n")
    'for x in xs:\\n    check(x)\\n    count += 1'
    >>> code_text("  one   line  ")
    'one line'
    """
    if "\n" not in block:
        return " ".join(block.split())
    return "\n".join(line.rstrip() for line in block.splitlines() if line.strip())
