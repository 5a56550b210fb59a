r"""The prose claims of §4–6 (seed 001), §3.5/§4 (seeds 000, 004): what can be measured, and what cannot.

Pruning (§4.3) and LoRA (§4.4) live in :mod:`derivations.pruning` and :mod:`derivations.lora`; the density
of :math:`W'_{HVO}` (§4.2) is ``duat:sec4.2.claim1`` in :mod:`derivations.attention_softmax`.

§4.1's mechanism claim — "MHA allows for the dynamic adjustment of the weight parameters in UAT, while
the residual mechanism supports the dynamic approximation of bias terms" — is measured on the derived
DUAT table (:func:`input_dependence`): which of :math:`\tilde V_j` (weights) and :math:`\tilde\beta_j`
(biases) depend on :math:`\mathbf x'_0`, with and without attention, and with the skip path removed.
"""

from __future__ import annotations

import sympy

from symuat import Entry, Evidence, Level, Prose, Status
from symuat.expansion import INPUT, V_name, beta_name, layer_symbols, nc_symbol

from ._duat_common import table
from .attention_softmax import density, density_proxy
from .uat_theory import eq4_proxy

__all__ = ["input_dependence", "conv_density", "entries"]

_DEPTH = 3


def input_dependence(dynamic: frozenset, no_skip: bool = False, depth: int = _DEPTH) -> dict[str, bool]:
    r"""For :math:`\tilde V_j`, :math:`\tilde\beta_j` (j = 1..depth): does the unfolded value depend on
    :math:`\mathbf x'_0`?

    A layer parameter in ``dynamic`` (subset of W1, W2, W3, b2, b3) counts as a function of the input;
    ``no_skip`` sets :math:`\mathbf W'_{i,1}=0` (the block without its residual path).
    """
    t = table(depth)
    dyn = {getattr(layer_symbols(i), k) for i in range(1, depth + 1) for k in dynamic}
    zero = {layer_symbols(i).W1: sympy.S.Zero for i in range(1, depth + 1)} if no_skip else {}
    out = {}
    for j in range(1, depth + 1):
        for label, name in ((f"V{j}", V_name(j)), (f"beta{j}", beta_name(j))):
            value = t.unfold(nc_symbol(name)).xreplace(zero)
            out[label] = bool(value.free_symbols & (dyn | {INPUT}))
    return out


def _fmt(dep: dict[str, bool]) -> str:
    return ", ".join(f"{k.replace('beta', 'β̃_').replace('V', 'Ṽ_')}" for k, v in dep.items() if v) or "none"


def _mechanism_proxy(seed: int) -> tuple[Evidence, ...]:
    attn = input_dependence(frozenset({"W1", "W2"}))
    mlp = input_dependence(frozenset())
    noskip = input_dependence(frozenset(), no_skip=True)
    d = _DEPTH
    weights_from_mha = all(attn[f"V{j}"] for j in range(1, d + 1)) and not any(mlp[f"V{j}"] for j in range(1, d + 1))
    bias_from_depth = all(mlp[f"beta{j}"] and noskip[f"beta{j}"] for j in range(2, d + 1))
    return (
        Evidence(Level.SYMBOLIC, weights_from_mha,
                 f"depth {d}: with attention (W'_{{i,1}}, W'_{{i,2}} dynamic) the input-dependent weights/biases are "
                 f"{_fmt(attn)}; with static layers (no attention) only {_fmt(mlp)}: the weights Ṽ_j are dynamic only "
                 f"through MHA, as claimed"),
        Evidence(Level.SYMBOLIC, bias_from_depth,
                 f"static layers WITHOUT the skip path (W'_{{i,1}} = 0): input-dependent {_fmt(noskip)}: β̃_j (j ≥ 2) "
                 f"depends on x'_0 through R_{{j-1}}, the earlier layers, with or without the residual connection; "
                 f"the residual is not what makes the biases dynamic, depth is"),
    )


def conv_density(N: int, M: int, kernel: int = 3) -> float:
    r"""Density of :math:`W'` for a 1D convolution over tokens (kernel ``kernel``, dense channel mixing)."""
    band = sum(1 for i in range(N) for j in range(N) if abs(i - j) <= kernel // 2)
    return band * M * M / (N * M) ** 2


def _global_proxy(seed: int) -> tuple[Evidence, ...]:
    N, M = 8, 8
    attn = density(seed, N, M)
    conv = conv_density(N, M)
    return (Evidence(Level.FLOAT, attn["generic"] > conv,
                     f"N={N}, M={M}, seed {seed}: W'_HVO (softmax attention) has density {attn['generic']:.3f} "
                     f"(every output entry depends on every input entry), {attn['causal']:.3f} with a causal mask "
                     f"(only on preceding tokens); a kernel-3 1D convolution over tokens has density {conv:.3f}"),)


_MECH = ("Whether the 'weights' and 'biases' of the DUAT form depend on the input is measured symbolically on the "
         "derived table (a quantity is dynamic iff its unfolded value contains $x'_0$ or a dynamic layer parameter). "
         "'Powerful' and 'handles a wide range of tasks' are not measurable here.")
_GLOBAL = ("'Captures global information' is read as: each entry of the output depends on every entry of the input, "
           "i.e. $W'$ is dense. Measured: density of $W'_{HVO}$ vs a 1D convolution's banded $W'$. 'Fragmented "
           "learning' is not measurable.")
_RETHINK = ("A comparison between human cognition and LLMs (the brain as a cluster of DUATs/UATs, memory retrieval as "
            "function fitting, hallucinations): not a mathematical statement, no measurable proxy within this audit.")
_CONCL = ("The conclusion restates §4; its 'rigorous theoretical grounding' for LoRA and pruning is audited by the "
          "equations: the pruning chain holds but never uses its hypothesis and is about terms, not layers "
          "(duat:eq15–16, duat:sec4.3.claim2); Eq. 18 (LoRA) is an erratum (duat:eq18).")


def entries() -> list[Entry]:
    mech_tex = (r"\text{MHA allows for the dynamic adjustment of the weight parameters in UAT, while the residual "
                r"mechanism supports the dynamic approximation of bias terms}")
    glob_tex = (r"\text{each element in the output } \mathring{\mathbf{H}}' \text{ contains global information}")
    dense_tex = r"\mathbf{W}' \text{ is a dense matrix (almost devoid of zero elements)}"
    density_reason = (r"Density is not an equation; proxy: non-zero fraction of $\sum_h H_h \otimes(W_{Vh} W_{Oh})^T$ "
                      "with real softmax (~1 generic, (N+1)/(2N) with a causal mask). Same claim as "
                      "duat:sec4.2.claim1.")
    return [
        Entry("duat:sec4.1.claim1", "§4.1", mech_tex, Status.PROSE, Prose(_MECH, _mechanism_proxy),
              note=r"MHA half confirmed ($\tilde{V}_j$ dynamic only through attention). Residual half imprecise: "
                   r"$\tilde{\beta}_j$ depends on the input through the earlier layers' $\sigma-terms$ even without "
                   "the skip path."),
        Entry("duat:sec4.1.claim2", "§4.1, third paragraph", glob_tex, Status.PROSE, Prose(_GLOBAL, _global_proxy),
              note="With a causal mask (decoder LLMs) an output token sees only preceding tokens, not 'global' ones."),
        Entry("duat:sec5.claim1", "§5", r"\text{a rigorous theoretical grounding for key techniques (LoRA, pruning)}",
              Status.PROSE, Prose(_CONCL)),
        Entry("duat:sec6.claim1", "§6", r"\text{the human brain can be considered as a combination of DUAT models}",
              Status.PROSE, Prose(_RETHINK)),
        Entry("uat-aaai:sec4.1.claim1", "§4.1 and Figure 6", mech_tex, Status.PROSE, Prose(_MECH, _mechanism_proxy),
              note="The UAT conference version also says Transformers 'approximate any Borel measurable function' "
                   "(Hornik et al.): an existence statement about MLPs, not proved for Transformers here."),
        Entry("uat-aaai:sec4.1.claim2", "§4.1, third paragraph", glob_tex.replace(r"\mathring{\mathbf{H}}'", "H'"),
              Status.PROSE, Prose(_GLOBAL, _global_proxy)),
        Entry("uat-aaai:sec4.2.claim1", "§4.2", dense_tex, Status.PROSE, Prose(density_reason, density_proxy),
              note="The UAT conference version writes $H = W'x'$ with $W'$ for $(W'_{HVO})^T$."),
        Entry("uat-aaai:sec4.5.claim1", "§4.5", r"\text{the human brain can be considered as a cluster of UATs}",
              Status.PROSE, Prose(_RETHINK)),
        Entry("uat-arxiv:sec3.5.claim1", "§3.5 and Figure 6",
              r"\text{unlike linear operations, the parameters of MHA are dynamic } (\mathbf{H}'_i)", Status.PROSE,
              Prose("Measured: which Eq. 20 parameters of real Transformer stacks change between two inputs.",
                    eq4_proxy)),
        Entry("uat-arxiv:sec4.1.claim1", "§4.1",
              r"\text{MHA mechanism allows for the dynamic adjustment of UAT's parameters according to the input}",
              Status.PROSE, Prose(_MECH, _mechanism_proxy),
              note="The UAT arXiv version credits MHA alone (no residual/bias statement, unlike the DUAT and UAT "
                   "conference versions)."),
        Entry("uat-arxiv:sec4.2.claim1", "§4.2", dense_tex.replace(r"\mathbf{W}'", r"(\mathbf{W}_{HVO}')^T"),
              Status.PROSE, Prose(density_reason, density_proxy)),
        Entry("uat-arxiv:sec4.5.claim1", "§4.5",
              r"\text{LLMs use patterns of parameter activation to approximate corresponding functions}",
              Status.PROSE, Prose(_RETHINK + " the UAT arXiv version ends with open questions (head splitting, "
                                             "computing the weights directly from data) rather than claims.")),
    ]
