"""Fixtures of the real-site crawl tests: nginx (skipped, saying why, when it is not
installed; ``.ci/run`` installs it with apt) and a Redis key prefix per module."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.nginx_support import nginx_missing_reason, python_docs_missing_reason

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(scope="session")
def nginx_available() -> None:
    """Skip the test when nginx cannot be found."""
    reason = nginx_missing_reason()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def python_docs_available() -> None:
    """Skip the test when Python 3.11's HTML docs are not installed."""
    reason = python_docs_missing_reason()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def module_prefix(request: pytest.FixtureRequest) -> Iterator[str]:
    """A Redis key prefix of this module alone (shared server), deleted afterwards."""
    from tests.redis_helpers import delete_prefix, shared_client, unique_prefix

    client = shared_client()
    p = unique_prefix(request.module.__name__.rsplit(".", 1)[-1])
    yield p
    delete_prefix(client, p)
    client.close()
