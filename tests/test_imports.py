"""Layer boundaries (docs/topics/architecture): policy/ is pure standard library."""

from __future__ import annotations

import json
import subprocess

import pytest

FORBIDDEN = ("scrapy", "twisted", "redis", "sqlite3", "_sqlite3", "scrapy_redis", "numpy", "lxml")


@pytest.mark.parametrize("module", ["scrapy_fresh.policy"])
def test_policy_imports_only_standard_library(module, python_exe, python_env):
    code = (
        "import json, sys\n"
        f"import {module}, pkgutil, importlib\n"
        f"pkg = importlib.import_module({module!r})\n"
        "for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "    importlib.import_module(info.name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [python_exe, "-c", code], capture_output=True, text=True, env=python_env, check=True
    ).stdout
    loaded = json.loads(out)
    bad = sorted(m for m in loaded if m.split(".")[0] in FORBIDDEN)
    assert bad == [], f"{module} pulled in {bad}"
    assert any(m.startswith(f"{module}.") for m in loaded), "no policy submodule was loaded"


def test_public_api_importable():
    from scrapy_fresh.fingerprint import fingerprint_html, simhash_features
    from scrapy_fresh.policy.allocation import cho_optimal
    from scrapy_fresh.policy.refresh import next_refresh_time
    from scrapy_fresh.store.sqlite import SQLiteStore

    assert all(
        callable(x)
        for x in (fingerprint_html, simhash_features, cho_optimal, next_refresh_time, SQLiteStore)
    )
