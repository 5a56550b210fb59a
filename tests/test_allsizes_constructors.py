"""SymPy's own constructors on symbolic sizes are in the all-sizes fragment: ``zeros``, ``ones``, ``eye``,
``kronecker_product``, ``Matrix.hstack``/``vstack`` and ``BlockMatrix`` (``from sympy import …`` too)."""

from __future__ import annotations

import pytest
import sympy
from sympy import BlockMatrix, Matrix, eye, kronecker_product, ones, zeros

from symuat import Identity, dims_grid, kron
from symuat.allsizes.decide import decide

SHAPES = {"A": ("n", "n"), "B": ("m", "m"), "X": ("n", "m")}


def _block(A, B, d):
    return BlockMatrix([[A, zeros(d["n"], d["m"])], [zeros(d["m"], d["n"]), B]])


#: name → (lhs, true rhs, false rhs)
CASES = {
    "zeros": (lambda e, d: e["X"] - e["X"], lambda e, d: zeros(d["n"], d["m"]), lambda e, d: sympy.zeros(d["n"], d["m"])
              + e["X"]),
    "eye": (lambda e, d: eye(d["n"]) * e["X"], lambda e, d: e["X"], lambda e, d: e["X"] * eye(d["m"]) * 2),
    "ones": (lambda e, d: ones(d["n"], d["m"]), lambda e, d: sympy.ones(d["n"], 1) * sympy.ones(1, d["m"]),
             lambda e, d: sympy.ones(d["n"], 1) * sympy.ones(1, d["m"]) * 2),
    "kronecker_product": (lambda e, d: kronecker_product(e["A"], e["B"]), lambda e, d: kron(e["A"], e["B"]),
                          lambda e, d: kron(e["A"].T, e["B"])),
    "hstack_vstack": (lambda e, d: Matrix.hstack(e["A"], e["X"]).T, lambda e, d: Matrix.vstack(e["A"].T, e["X"].T),
                      lambda e, d: Matrix.vstack(e["A"], e["X"].T)),
    "block_matrix": (lambda e, d: _block(e["A"], e["B"], d).T, lambda e, d: _block(e["A"].T, e["B"].T, d),
                     lambda e, d: _block(e["A"].T, e["B"], d)),
}


def _identity(lhs, rhs) -> Identity:
    return Identity(SHAPES, lhs=lhs, rhs=rhs, dims=dims_grid(n=(1, 2), m=(1, 2)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_true_identity_built_with_the_constructor_is_proved_for_every_size(name):
    lhs, true, _ = CASES[name]
    evidence = decide(_identity(lhs, true)).evidence
    assert evidence is not None and evidence.holds, decide(_identity(lhs, true)).reason
    assert "equal for every n, m >= 1" in evidence.detail


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_false_identity_built_with_the_constructor_gets_its_smallest_witness(name):
    lhs, _, false = CASES[name]
    evidence = decide(_identity(lhs, false)).evidence
    assert evidence is not None and evidence.holds is False and "smallest witness" in evidence.detail
    assert set(evidence.counterexample["dims"]) == {"n", "m"}


def test_the_constructors_are_restored_after_tracing():
    decide(_identity(*CASES["block_matrix"][:2]))
    assert zeros(2, 3).shape == (2, 3) and isinstance(kronecker_product(eye(2), ones(1, 2)), sympy.MatrixBase)
    assert BlockMatrix([[eye(1), zeros(1, 1)]]).shape == (1, 2)
