"""Real Transformer stacks: the derived Eq. 11 form, evaluated term by term, equals the direct forward pass."""

from __future__ import annotations

import numpy as np
import pytest

from symuat.errors import InvalidValueError
from symuat.expansion import closed_forms
from symuat.numeric import ACTIVATIONS, KINDS, duat_form, duat_relative_error, forward, random_stack, vec_r


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_duat_form_matches_forward_pass(kind, activation, causal):
    rng = np.random.default_rng(hash((kind, activation, causal)) % 2**32)
    stack = random_stack(rng, n_layers=3, width=8, n_heads=2, ffn_width=12, kind=kind,
                         activation=activation, causal=causal)
    X0 = rng.standard_normal((5, 8))
    form = duat_form(stack, X0)
    assert duat_relative_error(form) <= 1e-9
    assert len(form.terms.sigma_terms) == 3
    assert np.allclose(form.output, forward(stack, X0)[-1], rtol=1e-9, atol=1e-12)


def test_terms_and_parameters_are_inspectable():
    rng = np.random.default_rng(1)
    stack = random_stack(rng, n_layers=2, width=4, n_heads=2, ffn_width=6, kind="paper", activation="relu")
    X0 = rng.standard_normal((3, 4))
    form = duat_form(stack, X0)
    # The linear term is Ã_2 x'_0 = W'_{2,1} W'_{1,1} x'_0: recompute it from the bound operators.
    W21, W11 = form.parameter("W'_{2,1}"), form.parameter("W'_{1,1}")
    assert np.allclose(form.terms.linear_term, W21.matvec(W11.matvec(vec_r(X0))))
    assert {c.name for c in closed_forms(2)} >= {r"\tilde{A}_{2}"}
    assert form.is_dynamic("W'_{1,1}") and not form.is_dynamic("W'_{1,3}")
    with pytest.raises(InvalidValueError, match="unknown parameter name"):
        form.parameter("W'_{9,1}")


def test_dynamic_parameters_really_vary_with_the_input():
    """The block-kind table of dynamic parameters agrees with what changes between two inputs."""
    rng = np.random.default_rng(2)
    for kind in sorted(KINDS):
        stack = random_stack(rng, n_layers=1, width=4, n_heads=2, ffn_width=6, kind=kind, activation="gelu")
        a, b = duat_form(stack, rng.standard_normal((3, 4))), duat_form(stack, rng.standard_normal((3, 4)))
        for name in ("W'_{1,1}", "W'_{1,2}", "W'_{1,3}"):
            pa, pb = a.parameter(name), b.parameter(name)
            probe = rng.standard_normal(pa.shape[1])
            changed = not np.allclose(pa.matvec(probe), pb.matvec(probe))
            assert changed == a.is_dynamic(name), (kind, name)
        for name in ("b'_{1,2}", "b'_{1,3}"):
            changed = not np.allclose(a.parameter(name), b.parameter(name))
            assert changed == a.is_dynamic(name), (kind, name)


def test_bad_stack_argument():
    with pytest.raises(InvalidValueError, match="stack must be a TransformerStack"):
        duat_form("not a stack", np.zeros((2, 2)))
