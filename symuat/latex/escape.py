r"""Escape free text (notes, references, user-provided names) for LaTeX.

Math written by symuat or transcribed from the paper is LaTeX already and is not
escaped; everything else goes through :func:`escape_text`, which escapes the ten
special characters and maps the Unicode symbols used in notes to math commands,
so a ``.tex`` file can never be broken by a name.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

__all__ = ["escape_text", "text_with_math"]

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
    "Ã": r"$\tilde{A}$", "Ũ": r"$\tilde{U}$", "Ṽ": r"$\tilde{V}$", "Ĥ": r"$\hat{H}$", "Δ": r"$\Delta$",
    "∪": r"$\cup$", "¥": r"\textyen{}", "¢": r"\textcent{}", "€": r"\texteuro{}",
}

#: Combining accents (after NFD decomposition of an accented Latin letter) as TeX text accents: ``ç`` → ``\c{c}``.
_TEXT_ACCENTS: Mapping[str, str] = {
    "\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0304": "=", "\u0306": "u", "\u0307": ".",
    "\u0308": '"', "\u030a": "r", "\u030b": "H", "\u030c": "v", "\u0327": "c", "\u0328": "k",
    "\u0323": "d", "\u0331": "b",
}
#: Latin letters that are no accented ASCII letter, as T1 text commands.
_TEXT_LETTERS: Mapping[str, str] = {
    "ß": r"\ss{}", "æ": r"\ae{}", "Æ": r"\AE{}", "œ": r"\oe{}", "Œ": r"\OE{}", "ø": r"\o{}", "Ø": r"\O{}",
    "ł": r"\l{}", "Ł": r"\L{}", "ı": r"\i{}", "đ": r"\dj{}", "Đ": r"\DJ{}", "þ": r"\th{}", "Þ": r"\TH{}",
    "ð": r"\dh{}", "Ð": r"\DH{}", "ŋ": r"\ng{}", "Ŋ": r"\NG{}", "¡": r"\textexclamdown{}",
    "¿": r"\textquestiondown{}", "«": r"\guillemotleft{}", "»": r"\guillemotright{}", "\u00a0": "~",
}


def _accented(ch: str) -> str | None:
    r"""An accented Latin letter as TeX text accents (``é`` → ``\'{e}``, ``ǘ`` → ``\'{\"{u}}``); ``None`` if
    ``ch`` is not one; a Greek letter as math (``ω`` → ``$\omega$``)."""
    if ch in _TEXT_LETTERS:
        return _TEXT_LETTERS[ch]
    base, *marks = unicodedata.normalize("NFD", ch)
    if marks and base.isascii() and base.isalpha() and all(m in _TEXT_ACCENTS for m in marks):
        out = r"\i" if base == "i" and marks[0] not in ("\u0327", "\u0328", "\u0323", "\u0331") else base
        for m in marks:
            out = f"\\{_TEXT_ACCENTS[m]}{{{out}}}"
        return out
    name = unicodedata.name(ch, "")
    if name.startswith(("GREEK SMALL LETTER ", "GREEK CAPITAL LETTER ")) and len(name.split()) == 4:
        letter = name.split()[-1].lower()
        if name.startswith("GREEK CAPITAL"):
            letter = letter.capitalize()
        if letter in _GREEK:
            return f"$\\{letter}$"
    return None


_GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu",
          "nu", "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega", "Gamma", "Delta",
          "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi", "Omega"}

_COMBINING_TILDE = "\u0303"
_COMBINING_HAT = "\u0302"
_COMBINING_RING = "\u030a"


def escape_text(text: str) -> str:
    r"""LaTeX-safe version of ``text``; accented Latin letters become TeX accents (names print intact under any
    input encoding), other unknown non-ASCII characters ``?``.

    >>> escape_text("W' = W ⊗ I_M, 50% & more")
    "W' = W $\\otimes$ I\\_M, 50\\% \\& more"
    >>> print(escape_text("François Fleuret, Łukasz Kaiser, Jürgen Schmidhuber"))
    Fran\c{c}ois Fleuret, \L{}ukasz Kaiser, J\"{u}rgen Schmidhuber
    >>> escape_text("c\u0303 and β\u0303")
    '$\\tilde{c}$ and $\\tilde{\\beta}$'

    """
    out: list[str] = []
    for ch in text:
        if ch in (_COMBINING_TILDE, _COMBINING_HAT, _COMBINING_RING) and out:
            base = out.pop()
            accent = {_COMBINING_TILDE: "tilde", _COMBINING_HAT: "hat", _COMBINING_RING: "mathring"}[ch]
            out.append(rf"$\{accent}{{{base.strip('$')}}}$" if base.startswith("$") or base.isalpha()
                       else rf"\~{{{base}}}")
            continue
        if ch in _SPECIAL:
            out.append(_SPECIAL[ch])
        elif ord(ch) < 128:
            out.append(ch)
        elif ch in _UNICODE:
            out.append(_UNICODE[ch])
        else:
            out.append(_accented(ch) or "?")
    return "".join(out)


#: Non-ASCII letters that may carry a subscript in a note (``Σ_h``, ``β_j``, ``Ũ_j``), as math.
_MATH_LETTERS: Mapping[str, str] = {ch: tex.strip("$") for ch, tex in _UNICODE.items()
                                    if re.fullmatch(r"\$\\([A-Za-z]+|(tilde|hat)\{[A-Za-z]\})\$", tex)}
_ACCENTED = r"(?:[A-Za-z]|\\[A-Za-z]+|[" + "".join(_MATH_LETTERS) + r"])[\u0303\u0302]"
_BASE = r"(?:\\(?:tilde|hat|bar|mathbf|boldsymbol)\{[^{}$]*\}|[A-Za-z]+|[" + "".join(_MATH_LETTERS) + r"])"
_SUPER = r"(?:\^(?:\{[^{}$]*\}|\([^()$]*\)|[A-Za-z0-9]+)|ᵀ)"
_SUB = r"(?:_\{[^{}$]*\}|_[A-Za-z0-9]+(?:,[A-Za-z0-9]+)?)"
_SCRIPTS = rf"{_SUB}(?:{_SUPER})?|{_SUPER}(?:{_SUB})?"
#: ASCII math in free text: ``W'_{i,3}``, ``UAT_1^R``, ``x_i``, ``W_V,h``, ``Σ_h``, ``\tilde{V}_{1}``, ``c̃_j``,
#: ``sqrt(M)``; an accented letter (``Ũ``, ``c̃``) is math even without a script.
_ASCII_MATH = re.compile(
    r"(?P<path>(?<![\w.])[a-z][a-z0-9_]+(?:\.[A-Za-z_][A-Za-z0-9_]+){2,}(?:\[[^\]\s]*\])?)|"
    rf"(?<![A-Za-z0-9\\])(?P<sym>(?:{_ACCENTED}|[ÃŨṼĤ])'*(?:{_SCRIPTS})?|{_BASE}'*(?:{_SCRIPTS}))"
    r"|(?P<arrow>->|<=|>=|!=)"
    rf"|\((?P<group>[A-Za-z0-9'_{{}}, ]+)\)(?P<gsup>{_SUPER})"
    r"|(?<![A-Za-z])sqrt\((?P<root>[^()$]*)\)"
)
_ACCENT = re.compile(r"(\\[A-Za-z]+ ?|.)([\u0303\u0302])")
_ARROWS: Mapping[str, str] = {"->": r"$\to$", "<=": r"$\le$", ">=": r"$\ge$", "!=": r"$\ne$"}
#: ``residual_params``, ``check_depth``: a Python name, not a subscripted symbol.
_CODE_NAME = re.compile(r"[a-z]+(_[a-z]{3,})+")
_ADJACENT_MATH = re.compile(r"(?<!\\)\$\$")
_SCRIPT_ARG = re.compile(r"([_^])([A-Za-z0-9]+(?:,[A-Za-z0-9]+)?)")


def text_with_math(text: str) -> str:
    r"""Escape free text like :func:`escape_text`, but set ASCII math in it as LaTeX math.

    >>> text_with_math("UAT_1^R and W'_{i,3} with W_V,h, scale 1/sqrt(M), 50%")
    "$UAT_{1}^{R}$ and $W'_{i,3}$ with $W_{V,h}$, scale 1/$\\sqrt{M}$, 50\\%"
    >>> text_with_math(r"Σ_h H_h and \tilde{V}_{1}, 'W'_{1,1}'")
    "$\\Sigma _{h}$ $H_{h}$ and $\\tilde{V}_{1}$, '$W'_{1,1}$'"
    >>> text_with_math("c\u0303_{i+1} and Ũ_j^(i+1), Ũ alone")
    '$\\tilde{c}_{i+1}$ and $\\tilde{U} _{j}^{(i+1)}$, $\\tilde{U} $ alone'
    >>> text_with_math("(W'_HVO)^T = I_N⊗W_O^T")
    "$(W'_{HVO})^{T}$ = $I_{N} \\otimes W_{O}^{T}$"
    >>> text_with_math("'UAT^R_{i+1} = …'")
    "'$UAT^{R}_{i+1}$ = \\ldots{}'"
    >>> text_with_math("symuat.expansion.check_depth, x_i, e.g. check_depth")
    '\\texttt{symuat.\\allowbreak{}expansion.\\allowbreak{}check\\_depth}, $x_{i}$, e.g. \\texttt{check\\_depth}'
    >>> text_with_math("depth i -> i+1, rank <= d")
    'depth i $\\to$ i+1, rank $\\le$ d'
    >>> text_with_math("W'_iᵀ costs $5")
    "${W'}_{i}^{T}$ costs \\$5"
    """
    out, pos = [], 0
    for m in _ASCII_MATH.finditer(text):
        out.append(escape_text(text[pos:m.start()]))
        if m.group("path") is not None:
            out.append(r"\texttt{" + escape_text(m.group("path")).replace(".", r".\allowbreak{}") + "}")
        elif m.group("arrow") is not None:
            out.append(_ARROWS[m.group("arrow")])
        elif m.group("root") is not None:
            out.append(rf"$\sqrt{{{m.group('root')}}}$")
        elif m.group("group") is not None:
            inner = text_with_math(m.group("group")).replace("$", "")
            out.append(f"$({inner})" + text_with_math("x" + m.group("gsup")).replace("$", "")[1:] + "$")
        elif _CODE_NAME.fullmatch(m.group("sym")):
            out.append(r"\texttt{" + escape_text(m.group("sym")) + "}")
        else:
            sym = "".join(_MATH_LETTERS[ch] + " " if ch in _MATH_LETTERS else ch for ch in m.group("sym"))
            sym = _ACCENT.sub(lambda a: ("\\tilde{" if a.group(2) == "\u0303" else "\\hat{") + a.group(1).strip() + "}",
                              sym)
            sym = re.sub(r"\^\(([^()]*)\)", r"^{(\1)}", sym.replace("ᵀ", "^{T}"))
            if "'" in sym and "^" in sym:  # W'_{i}^{T}: a prime is a superscript too
                sym = re.sub(r"^([^_^]*'+)", r"{\1}", sym)
            out.append("$" + _SCRIPT_ARG.sub(r"\1{\2}", sym) + "$")
        pos = m.end()
    out.append(escape_text(text[pos:]))
    return _ADJACENT_MATH.sub(" ", "".join(out))
