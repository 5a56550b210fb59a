"""Mutation testing of symuat's own test suite (issue: soundness, item 3).

Each mutant flips one operator or constant in one of the evidence / ledger modules of a scratch copy
of the repository, runs a focused pytest subset there (stopping at the first failure) and counts the
mutant as *killed* when a test fails.  Survivors are printed with their location so that tests can be
strengthened.  No third-party mutation tool is needed.

    python benchmarks/mutate_tests.py [--every 1] [--modules symuat/evidence/identity.py ...]
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = ("symuat/evidence/identity.py", "symuat/evidence/fields.py", "symuat/evidence/opaque.py",
           "symuat/evidence/levels.py", "symuat/evidence/float_level.py", "symuat/evidence/declare.py",
           "symuat/ledger/audit.py")
TESTS = ("tests/test_evidence.py", "tests/test_evidence_pipeline.py", "tests/test_evidence_declare.py",
         "tests/test_audit.py",  # engine tests first: they kill most mutants fastest
          "tests/test_registry.py", "tests/test_coverage.py",
         "tests/test_ledger.py::test_ids_unique_and_required_present",
         "tests/test_ledger.py::test_entry[uat-arxiv:eq4]", "tests/test_ledger.py::test_entry[uat-arxiv:eq13.step6]",
         "tests/test_ledger.py::test_entry[uat-arxiv:eq13.step7]", "tests/test_ledger.py::test_entry[duat:eq6]",
         "tests/test_ledger.py::test_entry[uat-arxiv:sec3.2.claim4]",
         "tests/test_ledger.py::test_entry[uat-arxiv:sec3.2.claim5]", "tests/test_ledger.py::test_entry[duat:eq31]",
         "tests/test_ledger.py::test_entry[duat:eq35]", "tests/test_ledger.py::test_entry[duat:appB.fig2.box2.row3]",
         "tests/test_soundness.py::test_float_level_saturated_softmax",
         "tests/test_soundness.py::test_float_level_large_and_small_weight_scales",
         "tests/test_soundness.py::test_float_level_overflow_is_a_clear_verdict_not_a_crash")

_SWAP_CMP = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE,
             ast.LtE: ast.Gt, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
_SWAP_BIN = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult}
_SWAP_BOOL = {ast.And: ast.Or, ast.Or: ast.And}


def _sites(tree: ast.AST):
    """Every (node, description, apply) mutation site, in source order."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and type(node.ops[0]) in _SWAP_CMP:
            yield node, f"{type(node.ops[0]).__name__} -> {_SWAP_CMP[type(node.ops[0])].__name__}", \
                lambda n: n.ops.__setitem__(0, _SWAP_CMP[type(n.ops[0])]())
        elif isinstance(node, ast.BinOp) and type(node.op) in _SWAP_BIN:
            yield node, f"{type(node.op).__name__} -> {_SWAP_BIN[type(node.op)].__name__}", \
                lambda n: setattr(n, "op", _SWAP_BIN[type(n.op)]())
        elif isinstance(node, ast.BoolOp):
            yield node, f"{type(node.op).__name__} -> {_SWAP_BOOL[type(node.op)].__name__}", \
                lambda n: setattr(n, "op", _SWAP_BOOL[type(n.op)]())
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, "drop not", lambda n: setattr(n, "op", ast.UAdd())
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            yield node, f"{node.value} -> {not node.value}", lambda n: setattr(n, "value", not n.value)
        elif isinstance(node, ast.Constant) and type(node.value) is int and node.value in (0, 1, 2):
            yield node, f"{node.value} -> {node.value + 1}", lambda n: setattr(n, "value", n.value + 1)



def mutants(path: Path):
    source = path.read_text()
    count = sum(1 for _ in _sites(ast.parse(source)))
    for k in range(count):
        tree = ast.parse(source)
        node, what, apply = list(_sites(tree))[k]
        apply(node)
        try:
            yield k, node.lineno, what, ast.unparse(tree)
        except Exception:  # an unparsable mutant is skipped
            continue


def run(copy: Path, timeout: float) -> bool:
    """True when the focused tests fail (mutant killed)."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
           "--no-header", *TESTS]
    try:
        done = subprocess.run(cmd, cwd=copy, capture_output=True, text=True, timeout=timeout,
                              env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin:/usr/local/bin",
                                   "HOME": str(copy)})
    except subprocess.TimeoutExpired:
        return True  # an infinite loop counts as detected
    return done.returncode != 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=int, default=1, help="run every k-th mutant of each module")
    ap.add_argument("--modules", nargs="*", default=list(MODULES))
    ap.add_argument("--timeout", type=float, default=180.0)
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="symuat-mut-"))
    copy = scratch / "repo"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", "latex", "*.egg-info", "__pycache__",
                                                              ".pytest_cache", ".hypothesis"))
    if run(copy, args.timeout):
        sys.exit("the focused tests fail on the unmutated code; fix that first")
    killed = total = 0
    survivors = []
    start = time.perf_counter()
    for module in args.modules:
        original = (copy / module).read_text()
        for k, line, what, text in mutants(ROOT / module):
            if k % args.every:
                continue
            (copy / module).write_text(text)
            dead = run(copy, args.timeout)
            total += 1
            killed += dead
            if not dead:
                survivors.append(f"{module}:{line}: {what}")
            print(f"{'killed  ' if dead else 'SURVIVED'} {module}:{line}: {what}", flush=True)
        (copy / module).write_text(original)
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"\nmutation score: {killed}/{total} = {100 * killed / max(total, 1):.1f}% "
          f"({time.perf_counter() - start:.0f} s); {len(survivors)} survivors")
    for s in survivors:
        print("  survivor:", s)


if __name__ == "__main__":
    main()
