"""Layer boundaries (docs/topics/architecture).

policy/ is pure standard library; the other pure layers import no Scrapy or Twisted
(only scrapy_fresh.crawl does); the public API is what ``scrapy_fresh.__all__`` names.
"""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

import pytest

FORBIDDEN = ("scrapy", "twisted", "redis", "sqlite3", "_sqlite3", "scrapy_redis", "numpy", "lxml")


PURE_LAYERS = [
    "scrapy_fresh",
    "scrapy_fresh.outcome",
    "scrapy_fresh.config",
    "scrapy_fresh.keys",
    "scrapy_fresh.urls",
    "scrapy_fresh.validators",
    "scrapy_fresh.fingerprint",
    "scrapy_fresh.changes",
    "scrapy_fresh.monitoring",
    "scrapy_fresh.store",
    "scrapy_fresh.frontier",
    "scrapy_fresh.providers",
    "scrapy_fresh.simulator",
]


def _loaded_after_import(module: str, python_exe: str, python_env: dict[str, str]) -> list[str]:
    """What a fresh interpreter has loaded after importing ``module`` and, for a
    subpackage, every module under it (the package ``scrapy_fresh`` alone: its
    subpackages are the layers checked one by one)."""
    walk = (
        ""
        if module == "scrapy_fresh"
        else (
            "for info in pkgutil.walk_packages(getattr(pkg, '__path__', []), pkg.__name__ + '.'):\n"
            "    importlib.import_module(info.name)\n"
        )
    )
    code = (
        "import json, sys, importlib, pkgutil\n"
        f"pkg = importlib.import_module({module!r})\n"
        f"{walk}"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [python_exe, "-c", code], capture_output=True, text=True, env=python_env, check=True
    ).stdout
    return list(json.loads(out))


def test_policy_imports_only_standard_library(python_exe, python_env):
    loaded = _loaded_after_import("scrapy_fresh.policy", python_exe, python_env)
    bad = sorted(m for m in loaded if m.split(".")[0] in FORBIDDEN)
    assert bad == [], f"scrapy_fresh.policy pulled in {bad}"
    assert any(m.startswith("scrapy_fresh.policy.") for m in loaded), "no policy submodule"


def test_pure_layers_import_no_scrapy(python_exe, python_env):
    # one process per layer: a layer must not lean on what another one loaded
    for module in PURE_LAYERS:
        loaded = _loaded_after_import(module, python_exe, python_env)
        bad = sorted({m.split(".")[0] for m in loaded} & {"scrapy", "twisted", "scrapy_redis"})
        assert bad == [], f"{module} pulled in {bad}"
        assert not any(m.startswith("scrapy_fresh.crawl") for m in loaded), module


def test_public_api_names_resolve():
    import scrapy_fresh

    assert "Addon" in scrapy_fresh.__all__
    assert set(scrapy_fresh.__all__) == {*scrapy_fresh._PUBLIC, "__version__"}
    for name in scrapy_fresh.__all__:
        value = getattr(scrapy_fresh, name)
        assert value is not None, name
    assert scrapy_fresh.Outcome.NEW.value == "new"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        scrapy_fresh.Nope  # noqa: B018


def test_public_api_importable():
    from scrapy_fresh.fingerprint.shingles import fingerprint_html, simhash_features
    from scrapy_fresh.policy.allocation import cho_optimal
    from scrapy_fresh.policy.refresh import next_refresh_time
    from scrapy_fresh.store.sqlite import SQLiteStore

    assert all(
        callable(x)
        for x in (fingerprint_html, simhash_features, cho_optimal, next_refresh_time, SQLiteStore)
    )


def _module_imports(path: Path, package: Path) -> set[str]:
    """The scrapy_fresh modules ``path`` imports when it runs: module level and inside
    functions, leaving out ``if TYPE_CHECKING:`` blocks (never executed)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            # ``from scrapy_fresh.x import y`` may name the submodule y
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    modules = {
        ".".join(p.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")
        for p in package.rglob("*.py")
    }
    return {n for n in names if n in modules}


def test_no_import_circles():
    package = Path(scrapy_fresh_package_dir())
    graph = {
        ".".join(p.relative_to(package.parent).with_suffix("").parts).removesuffix(
            ".__init__"
        ): _module_imports(p, package)
        for p in package.rglob("*.py")
    }
    # a package's __init__ re-exporting its modules is not a circle of those modules
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in graph.items()}
    assert len(graph) > 50
    circles = []
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                circles.append([*path[path.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []


def test_only_the_demo_and_commands_import_the_demo():
    """The demo site and its truth are a leaf room: the report's figures, the crawl and
    the stores never depend on them (the commands add the demo's true figures)."""
    package = Path(scrapy_fresh_package_dir())
    users = set()
    for path in package.rglob("*.py"):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        if any(d == "scrapy_fresh.demo" or d.startswith("scrapy_fresh.demo.")
               for d in _module_imports(path, package)):  # fmt: skip
            users.add(module)
    assert users
    assert {
        u for u in users if not u.startswith(("scrapy_fresh.demo", "scrapy_fresh.commands"))
    } == set()


def scrapy_fresh_package_dir() -> str:
    import scrapy_fresh

    return str(Path(scrapy_fresh.__file__).parent)
