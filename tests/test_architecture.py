"""The package graph of ``symuat`` is acyclic and follows the layer order of docs/architecture.md."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "symuat"

#: Lowest first; a unit may import only units at or below its own rank (docs/architecture.md).
LAYERS = ("errors", "validation", "names", "algebra", "layers", "evidence", "expansion", "numeric", "analysis",
          "allsizes",
          "models", "sweep", "ledger", "soundness", "latex", "derive_format", "build", "progress", "html", "cli")
#: Imported only inside symuat/models/, and only inside functions (optional, heavy dependencies).
LAZY_ONLY = ("torch", "transformers")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level) for every import of ``path``, relative ones resolved (each file is
    parsed once per content: the tests below walk the same sources)."""
    st = path.stat()
    return list(_parsed_imports(path, st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=None)
def _parsed_imports(path: Path, mtime_ns: int, size: int) -> tuple[tuple[str, int, bool], ...]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    top = {id(node) for node in tree.body}  # an optional import in a module-level try is module level too
    top |= {id(n) for node in tree.body if isinstance(node, ast.Try)
            for n in [*node.body, *node.orelse, *(x for h in node.handlers for x in h.body)]}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, node.lineno, id(node) in top) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module is None:  # from . import x: each name may be a submodule
                out.extend((f"{target}.{alias.name}", node.lineno, id(node) in top) for alias in node.names)
            else:
                out.append((target, node.lineno, id(node) in top))
    return tuple(out)


def _unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "symuat" and len(parts) > 1 else None


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in _sources():
        source = _unit(_module_name(path))
        if source is None:
            continue
        for target, _, _ in _imports(path):
            unit = _unit(target)
            if unit is not None and unit != source:
                graph.setdefault(source, set()).add(unit)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_every_unit_has_a_place_in_the_layer_order():
    units = {_unit(_module_name(p)) for p in _sources()} - {None}
    assert units <= set(LAYERS), f"place {sorted(units - set(LAYERS))} in LAYERS and docs/architecture.md"


def test_the_documented_layer_order_is_the_tested_one():
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\d+\. `([a-z_]+)`", doc, flags=re.M)
    assert tuple(listed) == LAYERS


def test_no_cycle_between_subpackages():
    assert _cycle(_graph()) is None, " -> ".join(_cycle(_graph()) or ())


def _module_graph() -> dict[str, set[str]]:
    """Module → the symuat modules it imports (function-local imports included; a package is its ``__init__``)."""
    modules = {_module_name(path) for path in _sources()}
    graph: dict[str, set[str]] = {}
    for path in _sources():
        source = _module_name(path)
        for target, _, _ in _imports(path):
            while target and target not in modules:  # ``from .x import name``: the module is the longest known prefix
                target = target.rpartition(".")[0]
            if target and target != source and target != "symuat":
                graph.setdefault(source, set()).add(target)
    return graph


def test_no_import_circle_between_modules_even_inside_a_package():
    assert _cycle(_module_graph()) is None, " -> ".join(_cycle(_module_graph()) or ())


def test_the_numeric_core_knows_nothing_of_the_analysis_above_it():
    """symuat.analysis reads a form; the form's convenience methods find it through a registry, never an import."""
    core = [f"{path.relative_to(ROOT)}:{line}" for path in sorted((PACKAGE / "numeric").rglob("*.py"))
            for target, line, _ in _imports(path) if _unit(target) == "analysis"]
    assert core == []


def test_no_import_from_a_lower_layer_to_a_higher_one():
    rank = {u: i for i, u in enumerate(LAYERS)}
    upward = [f"{path.relative_to(ROOT)}:{line} imports {target}"
              for path in _sources() if (source := _unit(_module_name(path))) is not None
              for target, line, _ in _imports(path)
              if (unit := _unit(target)) is not None and rank.get(unit, -1) > rank.get(source, len(LAYERS))]
    assert upward == []


def test_no_module_imports_the_package_root():
    offenders = [f"{path.relative_to(ROOT)}:{line}" for path in _sources() if path != PACKAGE / "__init__.py"
                 for target, line, _ in _imports(path) if target == "symuat"]
    assert offenders == []


#: Optional dependencies of the sweep (the torch extra's pyarrow and threadpoolctl; the ray extra), imported inside
#: its functions so that ``import symuat`` never needs them.
SWEEP_LAZY = ("pyarrow", "ray", "threadpoolctl")


def test_no_function_local_imports_outside_models():
    local = [f"{path.relative_to(ROOT)}:{line} imports {target}" for path in _sources()
             if "models" not in path.relative_to(PACKAGE).parts
             for target, line, at_top in _imports(path) if not at_top
             and not ("sweep" in path.relative_to(PACKAGE).parts and target.split(".")[0] in SWEEP_LAZY)]
    assert local == []


@pytest.mark.parametrize("dependency", LAZY_ONLY)
def test_heavy_dependencies_are_imported_lazily_and_only_by_models(dependency):
    bad = [f"{path.relative_to(ROOT)}:{line}" for path in _sources() for target, line, at_top in _imports(path)
           if target.split(".")[0] == dependency
           and (at_top or "models" not in path.relative_to(PACKAGE).parts)]
    assert bad == []


def test_the_checker_sees_cycles_and_resolves_relative_imports():
    """The graph functions find a planted cycle and resolve relative imports."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    planted = PACKAGE / "evidence" / "identity.py"
    targets = {t for t, _, _ in _imports(planted)}
    assert "symuat.algebra.matrices" in targets and "symuat.evidence.declare" in targets
    modules = _module_graph()
    assert "symuat.numeric.operators" in modules["symuat.numeric.stack"] or "symuat.numeric.attention" in modules[
        "symuat.numeric.stack"]


def test_the_cli_and_the_package_import_no_analysis_importer_or_site():
    """``import symuat.cli`` (every ``symuat audit``) loads neither the analyses of a form, nor the model importers,
    the site or the sweep: they are imported on first use (``numeric.analyses.add_loader``, the CLI's lazy
    commands), and a form still finds its analyses."""
    import subprocess
    import sys

    code = ("import sys, symuat.cli\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[:2] in (['symuat', 'analysis'], "
            "['symuat', 'models'], ['symuat', 'html'], ['symuat', 'sweep']) or m.split('.')[0] == 'torch')\n"
            "assert heavy == [], heavy\n"
            "from symuat.numeric import random_stack, duat_form\n"
            "import numpy as np\n"
            "form = duat_form(random_stack(np.random.default_rng(0), 1, 4, 2, 8), np.ones((3, 4)))\n"
            "assert 'symuat.analysis' not in sys.modules\n"
            "att = form.attribution('layer')\n"
            "assert 'symuat.analysis' in sys.modules and att.parts\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
