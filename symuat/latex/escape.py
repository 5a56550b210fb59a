r"""Escape free text (notes, references, user-provided names) for LaTeX.

Math written by symuat or transcribed from the paper is LaTeX already and is not
escaped; everything else goes through :func:`escape_text`, which escapes the ten
special characters and maps the Unicode symbols used in notes to math commands,
so a ``.tex`` file can never be broken by a name.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["escape_text"]

_SPECIAL: Mapping[str, str] = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}

#: Unicode symbols that occur in notes, as LaTeX.
_UNICODE: Mapping[str, str] = {
    "⊗": r"$\otimes$", "◇": r"$\diamond$", "⋄": r"$\diamond$", "ᵀ": r"$^{T}$", "∈": r"$\in$",
    "σ": r"$\sigma$", "Σ": r"$\Sigma$", "δ": r"$\delta$", "ε": r"$\varepsilon$", "β": r"$\beta$",
    "γ": r"$\gamma$", "μ": r"$\mu$", "α": r"$\alpha$", "θ": r"$\theta$", "Λ": r"$\Lambda$",
    "≤": r"$\le$", "≥": r"$\ge$", "≠": r"$\ne$", "×": r"$\times$", "→": r"$\to$", "↦": r"$\mapsto$",
    "−": "-", "–": "--", "—": "---", "′": "'", "’": "'", "‘": "`", "“": "``", "”": "''",
    "…": r"\ldots{}", "⋯": r"$\cdots$", "·": r"$\cdot$", "√": r"$\surd$", "∑": r"$\Sigma$",
    "ℝ": r"$\mathbb{R}$", "₀": r"$_0$", "₁": r"$_1$", "₂": r"$_2$", "₃": r"$_3$", "ᵢ": r"$_i$",
    "ⱼ": r"$_j$", "²": r"$^2$", "˜": r"\textasciitilde{}", "✗": "x", "⇒": r"$\Rightarrow$",
    "§": r"\S{}", "∞": r"$\infty$", "≈": r"$\approx$", "±": r"$\pm$", "∘": r"$\circ$", "⊙": r"$\odot$",
    "Ã": r"$\tilde{A}$", "Ũ": r"$\tilde{U}$", "Ṽ": r"$\tilde{V}$",
}

_COMBINING_TILDE = "\u0303"


def escape_text(text: str) -> str:
    r"""LaTeX-safe version of ``text``; unknown non-ASCII characters become ``?``.

    >>> escape_text("W' = W ⊗ I_M, 50% & more")
    "W' = W $\\otimes$ I\\_M, 50\\% \\& more"
    >>> escape_text("c\u0303 and β\u0303")
    '\\~{c} and $\\tilde{\\beta}$'

    """
    out: list[str] = []
    for ch in text:
        if ch == _COMBINING_TILDE and out:
            base = out.pop()
            out.append(rf"$\tilde{{{base.strip('$')}}}$" if base.startswith("$") else rf"\~{{{base}}}")
            continue
        if ch in _SPECIAL:
            out.append(_SPECIAL[ch])
        elif ord(ch) < 128:
            out.append(ch)
        else:
            out.append(_UNICODE.get(ch, "?"))
    return "".join(out)
