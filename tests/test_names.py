"""Paper names carry their structure; the readers (printer, opaque evaluator, mutants) use it."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.expansion import A_name, U_name, layer_symbols
from symuat.latex.printer import paper_latex
from symuat.names import (
    SIGMA,
    PaperName,
    U_tilde,
    beta_tilde,
    c_tilde,
    is_vector,
    layer_bias,
    layer_state,
    layer_weight,
    logistic,
    matrix_entry,
    residual,
    structure,
)

layers = st.integers(0, 40)


@given(layers, st.integers(1, 3))
@settings(max_examples=50, deadline=None)
def test_a_name_read_back_is_the_structure_that_built_it(i, k):
    for built in (layer_weight(i, k), layer_bias(i, k), layer_state(i), U_tilde(k, i), beta_tilde(i), residual(i)):
        read = PaperName.read(built.name)
        assert read == built and structure(built.symbol) == built


@given(layers, st.integers(1, 3))
@settings(max_examples=50, deadline=None)
def test_layer_and_index_are_fields_not_parsed(i, k):
    w = layer_weight(i, k)
    assert (w.layer, w.index) == (i, k)
    assert (U_tilde(k, i).layer, U_tilde(k, i).index) == (i, k)
    assert layer_weight("i+1", k).layer == "i+1"


def test_vectors_and_matrices():
    vectors = [layer_bias(1, 2), layer_state(0), c_tilde(2), beta_tilde(1), residual(3)]
    matrices = [layer_weight(1, 1), U_tilde(1, 2)]
    assert all(v.is_vector for v in vectors) and not any(m.is_vector for m in matrices)
    assert is_vector(sympy.Symbol(r"\mathbf{x}")) and not is_vector(sympy.Symbol(r"\boldsymbol{\beta}"))
    assert not is_vector(sympy.Symbol("H^{(1)}_{2}", commutative=False))
    assert is_vector(sympy.Symbol("e'", commutative=False))  # a decoder's second input, vec_r of the encoder's output


def test_untilde_maps_each_table_value_to_the_parameter_it_replaces():
    assert U_tilde(2, 5).original() == layer_weight(2, 3)
    assert beta_tilde(4).original() == layer_bias(4, 2)
    assert c_tilde(4).original() == layer_bias(4, 3)
    assert layer_weight(1, 1).original() is None


def test_shift_moves_the_first_printed_index():
    assert layer_weight(2, 3).shifted(-1) == layer_weight(1, 3)
    assert layer_state(0).shifted(-1) is None
    assert structure("H^{(2)}_{1}").shifted(1).name == "H^{(3)}_{1}"


def test_table_names_are_built_from_structure():
    assert structure(A_name(3)).layer == 3 and structure(U_name(1, 2)).stage == "2"
    s = layer_symbols(2)
    assert structure(s.W3) == layer_weight(2, 3) and structure(s.b2).is_vector


@pytest.mark.parametrize("symbol,latex", [
    (layer_weight(1, 2).symbol, r"\mathbf{W}'_{1,2}"),
    (beta_tilde(3).symbol, r"\tilde{\boldsymbol{\beta}}_{3}"),
    (U_tilde(1, 2).symbol, r"\tilde{\mathbf{U}}_{1}^{(2)}"),
    (residual(2).symbol, r"\mathrm{UAT}^{R}_{2}"),
    (sympy.Symbol(matrix_entry("W", 1, 2).name), "w_{1,2}"),
    (sympy.Symbol(r"\Delta W'_{1,2}", commutative=False), r"\Delta W'_{1,2}"),
])
def test_printer_reads_the_structure(symbol, latex):
    assert paper_latex(symbol) == latex


def test_one_sigma_and_a_logistic_that_does_not_overflow():
    from symuat.evidence.fields import SIGMA as fields_sigma
    from symuat.expansion.symbols import sigma

    assert sigma is SIGMA and fields_sigma is SIGMA
    x = np.array([-800.0, -3.0, 0.0, 2.5, 800.0])
    with np.errstate(over="raise"):
        got = logistic(x)
    assert np.allclose(got[1:4], 1 / (1 + np.exp(-x[1:4])), rtol=1e-15, atol=0) and got[0] == 0 and got[-1] == 1
