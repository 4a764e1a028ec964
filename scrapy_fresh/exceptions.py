"""Errors raised by scrapy_fresh.

The tree::

    FreshError
    ├── ConfigError (also ValueError)        a setting or argument has a bad value
    └── StoreError                           the URL state store failed
        └── SchemaVersionError               a store file was written by another schema version
"""

from __future__ import annotations


class FreshError(Exception):
    """Base class of every error scrapy_fresh raises on purpose."""


class ConfigError(FreshError, ValueError):
    """A setting or argument has a value that cannot work; the message names it."""


class StoreError(FreshError):
    """The URL state store could not read or write."""


class SchemaVersionError(StoreError):
    """A store file uses a schema version this code cannot read."""
