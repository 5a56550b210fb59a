"""Entry notes, prose reasons and identity scopes are LaTeX text mode (docs/writing-derivations.md).

Every formula is inside ``$…$``; outside it there is no ASCII math (``_``, ``^``, ``sqrt(``), no Unicode math
symbol, no seed file name and no external specification reference.  A real pdflatex run over all of them
checks that they compile.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from symuat import Denial, Identity, OpaqueIdentity, Prose, Readings, load_entries

_MATH = re.compile(r"(?<!\\)\$(?:[^$\\]|\\.)*\$")
_UNICODE_MATH = "σ◇ᵀ⊗≤≥≠ΣΛεαβθ√∈⇒→↦∪·×⌈⌉Δ∑ϕφπλμ∞ℝ⊕≈∀∃⁻¹²³₁₂₃ĤṼŨ\u0302\u0303\u030a"
_OUTSIDE_MATH = {
    "an underscore": re.compile(r"(?<!\\)_"),
    "a caret": re.compile(r"(?<!\\)\^"),
    "sqrt(": re.compile(r"sqrt\("),
    "ASCII math": re.compile(r"\b[A-Za-z]'\s*\{|\b[A-Za-z]'\s*\("),
    "a Unicode math symbol": re.compile("[" + re.escape(_UNICODE_MATH) + "]"),
}
_ANYWHERE = {
    "a seed file name": re.compile(r"\b\d{3}_[0-9a-f]{16}\.txt|\b[Ss]eeds? ?\d{3}\b"),
    "an external specification": re.compile(r"SPEC\s*§"),
    "a control character (a lost backslash, as in a non-raw '\\theta')": re.compile(r"[\x00-\x09\x0b-\x1f\x7f]"),
}


def problems(text: str) -> list[str]:
    """What is wrong with ``text`` as a LaTeX text-mode string (empty when nothing is)."""
    found = []
    if len(re.findall(r"(?<!\\)\$", text)) % 2:
        found.append("an unbalanced $")
    depth = 0
    for ch in re.sub(r"\\[{}]", "", text):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            break
    if depth:
        found.append("unbalanced braces")
    outside = _MATH.sub(" ", text)
    found += [f"{what} outside $…$" for what, rx in _OUTSIDE_MATH.items() if rx.search(outside)]
    found += [what for what, rx in _ANYWHERE.items() if rx.search(text)]
    return found


def _texts(entry):
    yield "note", entry.note
    claims = [entry.claim] + ([entry.correction.identity] if entry.correction else [])
    for claim in claims:
        if isinstance(claim, Prose):
            yield "reason", claim.reason
        elif isinstance(claim, (Identity, OpaqueIdentity)):
            yield "scope", claim.scope
        elif isinstance(claim, Readings):
            yield from (("scope", r.scope) for r in claim.readings.values())
        elif isinstance(claim, Denial):
            yield "scope", claim.identity.scope


TEXTS = sorted({(e.id, kind, text) for e in load_entries() for kind, text in _texts(e) if text})


@pytest.mark.parametrize(("bad", "what"), [
    ("W' {1,2} is dense", "ASCII math"), ("W'_{1,2} is dense", "an underscore"), ("scale 1/sqrt(M)", "sqrt("),
    ("x^T y", "a caret"), ("the ◇ product", "a Unicode math symbol"), ("σ is free", "a Unicode math symbol"),
    ("as seed 001 prints", "a seed file name"), ("see 001_280f2464439a611b.txt", "a seed file name"),
    ("see SPEC §5", "an external specification"), ("$x_i", "an unbalanced $"), ("$\theta$", "a control character"),
                                           (r"\texttt{a", "unbalanced braces"),
])
def test_the_check_rejects(bad, what):
    assert any(p.startswith(what) for p in problems(bad)), problems(bad)


@pytest.mark.parametrize("good", [r"$\mathbf W'_{1,2}$ and $\sqrt{M}$, $x_i$", r"\texttt{residual\_term}",
                                  r"50\% of $W'_{HV}$", "the DUAT version, Eq. 3 (duat:eq3)"])
def test_the_check_accepts(good):
    assert problems(good) == []


def test_every_note_reason_and_scope_is_latex_text():
    bad = [f"{i} {kind}: {', '.join(problems(t))}: {t[:80]!r}" for i, kind, t in TEXTS if problems(t)]
    assert not bad, "\n".join(bad)


def test_they_compile_with_pdflatex(pdflatex, tmp_path):
    body = "\n\n".join(r"\noindent\texttt{" + i + "} " + f"{kind}: {t}" for i, kind, t in TEXTS)
    (tmp_path / "notes.tex").write_text(r"\documentclass{article}\usepackage[T1]{fontenc}\usepackage{amsmath,amssymb}"
                                        "\n" + r"\begin{document}" + "\n" + body + "\n" + r"\end{document}" + "\n")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "notes.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    errors = [line for line in run.stdout.splitlines() if line.startswith("!")]
    assert run.returncode == 0, "\n".join(errors) or run.stdout[-2000:]


def test_latex_marks_of_a_denial_are_relative_to_the_printed_denial():
    """A proved denial: every level refutes the denied identity, so every mark confirms the denial (as the CLI)."""
    from symuat.latex.render import level_marks
    from symuat.ledger.snapshot import record_from_data
    from symuat.ledger.text import evidence_marks

    def record(kind, holds):
        return record_from_data({
            "id": "duat:eq1", "version": "duat", "ref": "Eq. 1", "statement": "AB != BA", "status": "proved",
            "kind": kind, "correction": None, "note": "", "tags": [], "prose": "", "computed": "proved",
            "reason": "", "evidence": [["symbolic", holds, "d", None], ["exact", holds, "d", None]],
            "counterexample": None, "correction_evidence": []})

    assert level_marks(record("denial", False))[1:3] == (r"\yes", r"\yes")
    assert level_marks(record("identity", False))[1:3] == (r"\no", r"\no")
    assert evidence_marks(record("denial", False)) == "denial: symbolic ✓ exact ✓"
