"""Dependency rules of docs/architecture.md §1, checked on the source: the pure core stays pure."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "service" / "perfgate"
FRAMEWORKS = {
    "sqlalchemy",
    "alembic",
    "fastapi",
    "starlette",
    "uvicorn",
    "github3",
    "torch",
    "psycopg",
}
PURE = [
    "sides.py",
    "results.py",
    "allocation_note.py",
    "document_json.py",
    "document_slices.py",
    "json_text.py",
    "gc_pause.py",
    "stats",
    "report",
    "errors.py",
    "config.py",
    "policy.py",
    "importers",
    "bisect/decide.py",
]


def _modules(relative: str) -> list[Path]:
    path = PACKAGE / relative
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def _perfgate_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("perfgate"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("perfgate"))
    return found


@pytest.mark.parametrize("relative", PURE)
def test_pure_core_imports_no_framework(relative: str) -> None:
    for path in _modules(relative):
        bad = _imported_roots(path) & FRAMEWORKS
        assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}"
        inner = {
            m
            for m in _perfgate_imports(path)
            if m.split(".")[1:2] and m.split(".")[1] in {"store", "api", "github", "cli", "harness"}
        }
        assert not inner, f"{path.relative_to(PACKAGE)} imports {sorted(inner)}"


def test_only_harness_imports_torch() -> None:
    for path in PACKAGE.rglob("*.py"):
        if "harness" in path.relative_to(PACKAGE).parts:
            continue
        assert "torch" not in _imported_roots(path), f"{path.relative_to(PACKAGE)} imports torch"


def test_only_config_reads_the_environment() -> None:
    for path in PACKAGE.rglob("*.py"):
        if path.name == "config.py":
            continue
        text = path.read_text()
        for needle in ("os.environ", "os.getenv", "getenv("):
            assert needle not in text, f"{path.relative_to(PACKAGE)} reads the environment"


def _loaded_by(imports: str, heavy: tuple[str, ...]) -> list[str]:
    """Which of `heavy` a fresh interpreter has loaded after importing `imports`."""
    code = f"import sys, {imports}; print(','.join(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return [m for m in out.stdout.strip().split(",") if m]


def test_import_has_no_heavy_side_effects() -> None:
    imports = "perfgate, perfgate.cli, perfgate.results, perfgate.store.models"
    assert _loaded_by(imports, ("torch", "fastapi", "github3")) == []


def test_cli_help_loads_no_statistics_or_database_stack() -> None:
    # `perfgate --help` took 2.6 s when the CLI imported scipy and Alembic up front; 0.2 s now.
    assert _loaded_by("perfgate.cli", ("scipy", "sqlalchemy", "alembic", "numpy")) == []


def _package_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


@pytest.mark.parametrize(("library", "allowed"), [("click", {"cli"}), ("rich", {"cli", "report"})])
def test_ui_libraries_stay_in_the_ui_layers(library: str, allowed: set[str]) -> None:
    for path in PACKAGE.rglob("*.py"):
        if library in _imported_roots(path):
            assert _package_of(path) in allowed, f"{path.relative_to(PACKAGE)} imports {library}"


# Each adapter layer reaches the core only; the API serves the store, never the harness or GitHub.
FORBIDDEN = {
    "store": {"github", "harness", "api", "cli"},
    "github": {"store", "harness", "api", "cli"},
    "harness": {"store", "github", "api", "cli"},
    "api": {"harness", "github", "cli"},
    "ci": {"store", "harness", "api", "cli"},
    # bisect drives the harness and git; it compares without a store and reports through the CLI.
    "bisect": {"store", "api", "github", "cli"},
}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_adapter_layers_do_not_import_each_other(layer: str) -> None:
    for path in _modules(layer):
        reached = {m.split(".")[1] for m in _perfgate_imports(path) if m.count(".") >= 1}
        bad = reached & FORBIDDEN[layer]
        assert not bad, f"{path.relative_to(PACKAGE)} imports perfgate.{sorted(bad)}"
