"""Llama 4's input-scaled mixture of experts (``ext:moe.input-scaled*``): the layer proved for every size and at the
symbolic, exact and float levels, the block, table and induction in opaque symbols, the mutants killed at every
level; the gate form without the input diagonal and an expert with an up bias are refused with a witness, and the
entry's form agrees with the numeric core (:mod:`symuat.numeric.moe`) on a random instance."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy
from ledger_support import assert_every_mutant_killed, verdicts
from symuat_paper import ext_moe_input_scaled as m

from symuat import SIGMA, Status, UnsupportedError, vec_r
from symuat.algebra.families import family_member
from symuat.algebra.matrices import elementwise, identity_matrix, kron
from symuat.layers.gated_ffn import GatedFFN
from symuat.layers.moe import gated_experts_matrix_vector, input_scaled_experts, input_scaled_experts_matrix_vector
from symuat.numeric.ffn import GatedFFNWeights, activation_function
from symuat.numeric.moe import MoEFFNWeights

Matrix = sympy.ImmutableMatrix
LEVELS = {"symbolic", "exact", "float"}


@pytest.fixture(scope="module")
def records(audited_without_coq):
    """This module's entries as the session audits them (every level but Coq: tests/conftest.py)."""
    return audited_without_coq([e.id for e in m.entries()])

@pytest.mark.parametrize("entry", m.entries(), ids=lambda e: e.id)
def test_every_entry_audits_as_recorded(entry, records):
    record = records[entry.id]
    assert entry.status is Status.PROVED and record.agrees, (entry.id, record.reason)
    decided = {ev.level.value for ev in record.evidence if ev.holds}
    assert decided == LEVELS | ({"all-sizes"} if entry.id == "ext:moe.input-scaled" else set())
    assert all(ev.holds is not False for ev in record.evidence)


def test_the_gate_form_without_the_input_diagonal_is_not_llama4():
    """Gating after the expert only (ext:moe.gate-form's D(u), no D_in on the gate branch): false at every level."""
    def gate_only(e, d):
        h = vec_r(e["H"])
        routed = gated_experts_matrix_vector(h, d["N"], d["M"], lambda j: family_member(e, "g", j),
                                             lambda j: m._expert(e, j), d["E"], SIGMA)
        return routed + m._shared(e, d, lambda f: f.apply_matrix_vector(h, d["N"], SIGMA))
    wrong = dataclasses.replace(m.input_scaled_identity(), rhs=gate_only)
    assert verdicts(wrong) == {"all-sizes": False, "symbolic": False, "exact": False, "float": False}


def test_an_up_bias_breaks_the_form():
    """With an up bias an unchosen expert (zero row) still contributes W_d(σ(0) ⊙ b_u): the layer functions refuse
    it, and the form written out with the bias is false with a witness."""
    H, g = Matrix([[1, 2]]), Matrix([[0]])
    biased = GatedFFN(Matrix([[1], [1]]), Matrix([[1], [0]]), Matrix([[1, 1]]), b_u=Matrix([[1]]))
    with pytest.raises(UnsupportedError, match="expert 0 has a bias"):
        input_scaled_experts(H, lambda j: g, lambda j: biased, 1, SIGMA)
    with pytest.raises(UnsupportedError, match="expert 0 has a bias"):
        input_scaled_experts_matrix_vector(vec_r(H), 1, 2, lambda j: g, lambda j: biased, 1, SIGMA)
    lhs = vec_r(biased.apply(g[0, 0] * H, SIGMA))
    z = kron(g, identity_matrix(1)) * kron(identity_matrix(1), biased.W_g.T) * vec_r(H)
    u = kron(identity_matrix(1), biased.W_u.T) * vec_r(H) + biased.b_u
    rhs = kron(g, identity_matrix(2)) * biased.W_d.T * Matrix(elementwise(SIGMA, z).multiply_elementwise(u))
    assert rhs == Matrix([[0], [0]]) and lhs == Matrix([[SIGMA(0)], [SIGMA(0)]])  # the witness at g = 0


def _silu(z):
    return z / (1 + sympy.exp(-z))


def test_the_form_matches_the_numeric_core_on_a_random_instance():
    """The entry's two sides with Llama 4's gates (sigmoid of the top-k logits, computed here) and σ = silu against
    the numeric core's held operators of MoEFFNWeights(input_scaled=True) (D_in(u) on the gate branch, D(u) before
    the down projection: symuat.numeric.moe)."""
    rng = np.random.default_rng(4)
    N, M, F, E, k = 3, 2, 2, 3, 2
    W = {f"{p}{j + 1}": rng.standard_normal(s) for j in range(E) for p, s in (("Wg", (M, F)), ("Wu", (M, F)),
                                                                             ("Wd", (F, M)))}
    W.update({f"s{p}1": rng.standard_normal(s) for p, s in (("Wg", (M, F)), ("Wu", (M, F)), ("Wd", (F, M)))})
    router, U = rng.standard_normal((M, E)), rng.standard_normal((N, M))
    logits = U @ router
    gates = np.zeros((N, E))
    for n in range(N):
        top = np.argsort(-logits[n])[:k]
        gates[n, top] = 1 / (1 + np.exp(-logits[n, top]))
    w = MoEFFNWeights(experts=tuple(GatedFFNWeights(W[f"Wg{j + 1}"], W[f"Wu{j + 1}"], W[f"Wd{j + 1}"])
                                    for j in range(E)),
                      router=router, top_k=k, normalize=False, routing="sigmoid", input_scaled=True,
                      shared=GatedFFNWeights(W["sWg1"], W["sWu1"], W["sWd1"]))
    ops, act, x = w.operators(U), activation_function("silu"), U.reshape(-1)
    (gate_op, b_g), (up_op, b_u), (down_op, b_d) = ops["in"], ops["up"], ops["out"]
    expected = down_op.matvec(act(gate_op.matvec(x) + b_g) * (up_op.matvec(x) + b_u)) + b_d
    env = {name: Matrix(v.tolist()) for name, v in W.items()}
    env.update({"H": Matrix(U.tolist()), **{f"g{j + 1}": Matrix(gates[:, j:j + 1].tolist()) for j in range(E)}})
    dims = {"N": N, "M": M, "F": F, "E": E, "S": 1}
    for side in (m.input_scaled_identity().lhs, m.input_scaled_identity().rhs):
        got = np.array([float(v.replace(SIGMA, _silu).evalf(30)) for v in side(env, dims)])
        assert np.abs(got - expected).max() <= 1e-12 * max(1.0, np.abs(expected).max())
    assert (gates == 0).any()  # an unchosen expert is in the instance


@pytest.mark.slow  # every mutant of the four entries, three levels each
def test_every_mutant_is_killed_at_every_level():
    assert_every_mutant_killed(m.entries())
