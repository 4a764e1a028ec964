"""Shared fixtures for the scrapy_fresh test suite."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def python_env() -> dict[str, str]:
    """Environment for subprocesses that must import this checkout of scrapy_fresh."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture
def python_exe() -> str:
    return sys.executable
