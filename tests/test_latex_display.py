"""Breaking long formulas across lines: nothing lost, nothing scaled, every line within the budget."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.latex.display import break_points, display, math_width, plain_delimiters, split_lines

_ATOMS = [r"\mathbf{W}'_{1,1}", r"x'_{0}", r"b'_{2,3}", r"\tilde{\mathbf{U}}^{(3)}_{2}", "a", r"\Delta W'_{1,2}"]


@st.composite
def _sums(draw, depth: int = 2):
    """A random sum of products, possibly with sigma(...) arguments that are sums themselves."""
    terms = []
    for _ in range(draw(st.integers(1, 8))):
        factors = draw(st.lists(st.sampled_from(_ATOMS), min_size=1, max_size=3))
        term = " ".join(factors)
        if depth and draw(st.booleans()):
            term += r" \sigma{\left(" + draw(_sums(depth - 1)) + r" \right)}"
        terms.append(term)
    signs = [draw(st.sampled_from(["+", "-"])) for _ in terms[1:]]
    return terms[0] + "".join(f" {s} {t}" for s, t in zip(signs, terms[1:]))


def _squash(tex: str) -> str:
    return re.sub(r"\s+", "", tex)


@settings(max_examples=60, deadline=None)
@given(_sums(), st.sampled_from([60.0, 150.0, 380.0]))
def test_split_lines_loses_nothing_and_respects_the_budget(tex, budget):
    lines = split_lines(tex, budget)
    joined = "".join(lines)
    assert _squash(joined) in (_squash(tex), _squash(plain_delimiters(tex)))
    pieces = break_points(plain_delimiters(tex))
    widest_piece = max(math_width(p) for p in pieces)
    for line in lines:
        assert line.count(r"\left") == line.count(r"\right")
        assert math_width(line) <= max(budget, widest_piece) + 1e-9


def test_a_short_left_side_stays_with_its_matrix():
    matrix = r"\left[\begin{matrix}" + " & ".join(["h^{(1)}_{1,1} v^{(1)}_{1,1}"] * 8) + r"\end{matrix}\right]"
    assert split_lines(r"\mathbf{y}' = " + matrix, budget=200) == [r"\mathbf{y}' = " + matrix]


@settings(max_examples=30, deadline=None)
@given(_sums())
def test_display_never_scales(tex):
    out = display(tex)
    assert r"\resizebox" not in out and r"\scalebox" not in out
    assert out.startswith(r"\[") and out.endswith(r"\]")


def test_break_points_keep_matrices_and_scripts_whole():
    tex = r"y = \left[\begin{matrix}a + b & c\\ d & e - f\end{matrix}\right] + x_{i+1}"
    pieces = break_points(tex)
    assert pieces == ["y ", r"= \left[\begin{matrix}a + b & c\\ d & e - f\end{matrix}\right] ", "+ x_{i+1}"]


def test_matrix_width_is_its_widest_row_not_all_entries():
    row = " & ".join(["w_{1,1}"] * 6)
    matrix = r"\begin{matrix}" + r"\\".join([row] * 6) + r"\end{matrix}"
    assert math_width(matrix) < 2 * math_width(row)


def test_mostly_words_become_a_quotation_in_text_mode():
    tex = r"\text{the residual mechanism supports the dynamic approximation of } \mathbf{b}'_{2,2} \text{ terms}"
    out = display(tex)
    assert out.startswith(r"\begin{quote}") and r"$\mathbf{b}'_{2,2}$" in out and r"\text" not in out
