"""Figures: no date in the PDF, attribution shares checked against the direct forward pass.

Their bytes are compared across runs and hash seeds with the rest of the document (tests/test_determinism.py).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from symuat.errors import UnsupportedError
from symuat.latex import figures
from symuat.numeric import forward, random_stack, vec_r

REQUIRE_PLOT = os.environ.get("SYMUAT_REQUIRE_PLOT") == "1"
needs_plot = pytest.mark.skipif(not figures.plot_available() and not REQUIRE_PLOT,
                                reason="matplotlib not installed (CI sets SYMUAT_REQUIRE_PLOT=1)")

@needs_plot
def test_figure_pdfs_carry_no_date():
    data = figures.attribution_figure()
    assert data.startswith(b"%PDF") and b"CreationDate" not in data and b"ModDate" not in data


def test_attribution_terms_add_up_to_the_direct_forward_pass():
    rng = np.random.default_rng(7)
    stack = random_stack(rng, 3, 4, 2, 6, kind="standard")
    X0 = rng.standard_normal((3, 4))
    per_layer, per_token = figures.attribution_shares(stack, X0)
    assert per_layer.shape == (3, 5) and per_token.shape == (3, 5)
    assert np.allclose(per_layer.sum(axis=1), 1) and np.allclose(per_token.sum(axis=1), 1)
    assert np.all(per_layer[0, 3:] == 0) and np.all(per_layer[1, 4:] == 0)  # depth l has only l sigma terms
    # the shares come from the DUAT terms; their sum must be the direct forward pass (an independent computation)
    from symuat.numeric import duat_form

    terms = duat_form(stack, X0).terms
    total = terms.linear_term + terms.bias_term + sum(terms.sigma_terms)
    assert np.allclose(total, vec_r(forward(stack, X0)[-1]), atol=1e-9)


def test_missing_matplotlib_is_an_unsupported_error(without_figures):
    with pytest.raises(UnsupportedError, match=r"pip install 'symuat\[plot\]'"):
        figures.attribution_figure()


def test_document_without_matplotlib_has_no_figures(without_figures):
    from symuat import Entry, Identity, Status, audit, dims_grid
    from symuat.latex.render import document_files

    same = Identity(lambda d: {"x": (d["n"], 1)}, lambda e, d: e["x"], lambda e, d: e["x"], dims_grid(n=(1,)))
    files = document_files(audit([Entry("duat:eq5", "Eq. 5", "x", Status.PROVED, same)]), depth=1)
    assert not any(name.endswith(".pdf") for name in files)
    assert not any(r"\includegraphics" in text for text in files.values())


def test_build_says_when_figures_are_left_out(monkeypatch, capsys):
    from symuat.cli import paper

    monkeypatch.setattr(paper, "plot_available", lambda: False)
    paper._say_if_no_figures()
    assert "matplotlib is not installed (pip install 'symuat[plot]')" in capsys.readouterr().out
    monkeypatch.setattr(paper, "plot_available", lambda: True)
    paper._say_if_no_figures()
    assert capsys.readouterr().out == ""
