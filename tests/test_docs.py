"""The Sphinx docs build without warnings (sphinx-build -W)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_docs_build_without_warnings(tmp_path):
    if shutil.which("sphinx-build") is None and not _has_sphinx():
        pytest.fail("Sphinx is not installed: install the [docs] extra (make test does).")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "-q",
            "-b",
            "html",
            str(ROOT / "docs"),
            str(tmp_path / "html"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _has_sphinx() -> bool:
    try:
        import sphinx  # noqa: F401
    except ImportError:
        return False
    return True
