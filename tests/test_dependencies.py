"""The package's declared dependencies match what its code imports (issue 16)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "scrapy_fresh"

#: import name -> distribution name, where they differ
DISTRIBUTIONS = {
    "twisted": "twisted",
    "scrapy_redis": "scrapy-redis",
    "prometheus_client": "prometheus-client",
}


def _requirements() -> tuple[set[str], dict[str, set[str]]]:
    """install_requires and extras_require of setup.py, as lower-case names."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    call = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup"
    )
    kwargs = {k.arg: k.value for k in call.keywords}

    def names(node: ast.expr) -> set[str]:
        values = ast.literal_eval(node)
        return {re.split(r"[<>=!\[ ]", v, maxsplit=1)[0].lower() for v in values}

    extras = {
        ast.literal_eval(k): names(v)
        for k, v in zip(
            kwargs["extras_require"].keys, kwargs["extras_require"].values, strict=True
        )  # type: ignore[attr-defined]
    }
    return names(kwargs["install_requires"]), extras


def _imported_top_level() -> set[str]:
    """Third-party top-level names the package imports (anywhere, TYPE_CHECKING aside)."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    stdlib = set(sys.stdlib_module_names) | {"scrapy_fresh", "typing_extensions"}
    return {name for name in found if name not in stdlib and not name.startswith("_")}


def test_every_import_is_declared_and_every_requirement_imported() -> None:
    base, extras = _requirements()
    optional = extras["redis"] | extras["plots"] | extras["prometheus"]
    imported = {DISTRIBUTIONS.get(name, name).lower() for name in _imported_top_level()}
    assert "scrapy" in imported
    undeclared = sorted(imported - base - optional)
    assert undeclared == [], f"imported but not in install_requires or an extra: {undeclared}"
    unused = sorted(base - imported)
    assert unused == [], f"in install_requires but imported nowhere in scrapy_fresh: {unused}"
