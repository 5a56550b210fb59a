r"""Pieces every transformers family shares: norms, rotary tables, config checks.

Rotary embeddings are copied from the model's own rotary module: its ``cos``/``sin`` tables for
positions :math:`0..P-1` (computed in float64, see :mod:`symuat.models.precision`), so every static
RoPE variant (``default``, ``linear``, ``llama3``, ``yarn`` with its attention scaling) is reproduced
exactly.  :math:`P` is the smaller of ``max_position_embeddings`` and :data:`MAX_POSITIONS`.  Two types change
their angles with the sequence length, and only above a length the config names: ``longrope`` uses its short
factors for :math:`N \le` ``original_max_position_embeddings`` and its long ones (for every position) beyond;
``dynamic`` NTK scaling keeps the base frequency for :math:`N <` ``max_position_embeddings`` and rescales it
beyond (at :math:`N =` ``max_position_embeddings`` the module's cached state decides).  For them :math:`P` is cut
to the lengths whose angles are static (``original_max_position_embeddings``, resp. ``max_position_embeddings``
:math:`- 1`), so a longer input is refused by the position limit instead of being given the short-sequence angles.
Sliding windows are masks per layer (:func:`layer_windows`, from the config's ``layer_types`` where a family has them).
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from ..errors import UnsupportedError
from ..numeric import LayerNormWeights, Rotary
from ..numeric.norms import RMSNormWeights
from ._torch import array, require_torch
from .precision import library_float64

__all__ = ["TESTED_TRANSFORMERS", "layout_message", "MAX_POSITIONS", "probe_norm", "layer_norm", "rms_norm",
           "rotary", "check_config", "sliding_window", "centred_norm", "layer_windows", "attention_scale",
           "static_rope_positions"]

#: The transformers releases the importers are tested with (oldest, newest); pyproject's ``torch`` extra and CI
#: (``.ci/run``) use the same two ends.
TESTED_TRANSFORMERS = ("5.23.0", "5.24.0")


def layout_message(family: str) -> str:
    r"""The tail of an error for a module layout symuat does not know: the installed and the tested releases.

    >>> "tested with transformers 5.23.0 to 5.24.0" in layout_message("gptj")
    True
    """
    try:
        import transformers

        installed = transformers.__version__
    except ImportError:  # pragma: no cover - the caller imported it already
        installed = "?"
    lo, hi = TESTED_TRANSFORMERS
    return (f"the {family} modules of transformers {installed} are laid out differently from what symuat reads "
            f"(tested with transformers {lo} to {hi})")


#: Longest input an imported stack covers when the config names no shorter limit.
MAX_POSITIONS = 8192



def probe_norm(name: str, module: Any, weights: Any) -> Any:
    r"""Check that the norm module computes ``weights``' norm on a probe input (else ``UnsupportedError``)."""
    import numpy as np

    from ..numeric import apply_norm

    torch = require_torch()
    X = np.random.default_rng(0).standard_normal((3, weights.width)) * np.array([[1.0], [30.0], [1e-3]])
    with torch.no_grad(), library_float64():
        got = module(torch.from_numpy(X)).detach().double().numpy()
    want = apply_norm(X, weights)
    err = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-300))
    if not err <= 1e-12:
        raise UnsupportedError(f"{name} ({type(module).__name__}) does not compute the norm its weights describe "
                               f"(relative difference {err:.1e} on a probe input)")
    return weights


def layer_norm(name: str, ln: Any) -> LayerNormWeights:
    r"""``nn.LayerNorm`` (bias optional) → :class:`~symuat.numeric.LayerNormWeights` (checked on a probe)."""
    torch = require_torch()
    if not isinstance(ln, torch.nn.LayerNorm):
        raise UnsupportedError(f"{name} is a {type(ln).__name__}, not an nn.LayerNorm: the module differs from "
                               "what the family uses")
    if getattr(ln, "weight", None) is None:
        raise UnsupportedError(f"{name} is a LayerNorm without elementwise_affine")
    beta = None if getattr(ln, "bias", None) is None else array(f"{name}.bias", ln.bias)
    return probe_norm(name, ln, LayerNormWeights(array(f"{name}.weight", ln.weight), beta, eps=float(ln.eps)))


def centred_norm(name: str, norm: Any, width: int, eps: Any = None) -> LayerNormWeights:
    r"""A LayerNorm module that is not ``nn.LayerNorm``: Cohere's (gain, no bias, ``variance_epsilon``) or OLMo's
    (no parameters; ``eps`` given by the caller) → ``LayerNormWeights`` (checked on a probe)."""
    import numpy as np

    weight = getattr(norm, "weight", None)
    if getattr(norm, "bias", None) is not None or "LayerNorm" not in type(norm).__name__:
        raise UnsupportedError(f"{name} ({type(norm).__name__}) is not a LayerNorm symuat can read")
    gamma = np.ones(width) if weight is None else array(f"{name}.weight", weight)
    eps = getattr(norm, "variance_epsilon", None) if eps is None else eps
    if eps is None or gamma.shape != (width,):
        raise UnsupportedError(f"{name} ({type(norm).__name__}) is not a LayerNorm over the {width} features")
    return probe_norm(name, norm, LayerNormWeights(gamma, None, eps=float(eps)))


def rms_norm(name: str, norm: Any, offset: float = 0.0) -> RMSNormWeights:
    r"""A transformers RMSNorm (``variance_epsilon`` or ``eps``; Gemma: ``offset=1``) → ``RMSNormWeights``
    (checked on a probe)."""
    eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", None))
    if (eps is None or getattr(norm, "weight", None) is None or "RMSNorm" not in type(norm).__name__
            or getattr(norm, "bias", None) is not None):
        raise UnsupportedError(f"{name} ({type(norm).__name__}) is not an RMSNorm symuat can read")
    return probe_norm(name, norm, RMSNormWeights(array(f"{name}.weight", norm.weight), eps=float(eps), offset=offset))


def sliding_window(config: Any) -> Optional[int]:
    r"""The sliding-window length the library applies, or ``None``.

    >>> from types import SimpleNamespace as C
    >>> sliding_window(C(sliding_window=4096)), sliding_window(C(sliding_window=8, layer_types=["full_attention"]))
    (4096, None)
    """
    window = getattr(config, "sliding_window", None)
    layer_types = getattr(config, "layer_types", None)
    if layer_types is not None:
        return window if "sliding_attention" in layer_types else None
    if getattr(config, "use_sliding_window", True) is False:
        return None
    return window


def layer_windows(config: Any, n_layers: int, per_layer: bool = True) -> Tuple[Optional[int], ...]:
    r"""The sliding window of each layer (``None``: full attention), as the library's masks apply it.

    With ``per_layer`` and ``config.layer_types`` (Qwen2, Gemma-2/3, …): ``sliding_window`` on
    ``"sliding_attention"`` layers; any other layer type than ``"full_attention"`` is refused by name.
    Otherwise (Mistral, Starcoder2, whose masks ignore ``layer_types``) every layer gets
    :func:`sliding_window`.

    >>> from types import SimpleNamespace as C
    >>> layer_windows(C(sliding_window=3, layer_types=["sliding_attention", "full_attention"]), 2)
    (3, None)
    """
    layer_types = getattr(config, "layer_types", None) if per_layer else None
    if layer_types is None:
        w = sliding_window(config)
        return (None if w is None else int(w),) * n_layers
    if len(layer_types) != n_layers:
        raise UnsupportedError(f"config.layer_types has {len(layer_types)} entries for {n_layers} layers")
    out = []
    for i, t in enumerate(layer_types):
        if t not in ("full_attention", "sliding_attention"):
            raise UnsupportedError(f"unsupported attention layer type {t!r} (config.layer_types[{i}]): symuat "
                                   "models full and sliding-window attention only")
        w = getattr(config, "sliding_window", None) if t == "sliding_attention" else None
        if t == "sliding_attention" and w is None:
            raise UnsupportedError(f"config.layer_types[{i}] is 'sliding_attention' but config.sliding_window is None "
                                   f"(use_sliding_window={getattr(config, 'use_sliding_window', None)!r}): the "
                                   "library cannot run a sliding layer without a window; make the config consistent")
        out.append(None if w is None else int(w))
    return tuple(out)


def rotary(base: Any, config: Any, head_dim: int, style: str = "half", layer_type: Optional[str] = None) -> Rotary:
    r"""The model's rotary embedding as a :class:`~symuat.numeric.Rotary` with the library's own tables
    (``style="interleaved"``: the library repeats each angle twice, Cohere; ``layer_type``: Gemma-3's tables per
    attention type, e.g. a local base frequency on sliding layers)."""
    torch = require_torch()
    emb = getattr(base, "rotary_emb", None)
    inv_freq = getattr(emb, "inv_freq" if layer_type is None else f"{layer_type}_inv_freq", None)
    if emb is None or inv_freq is None:
        raise UnsupportedError(f"{type(base).__name__} has no rotary_emb with inv_freq")
    rope_type = getattr(emb, "rope_type", "default")
    if isinstance(rope_type, dict):
        rope_type = rope_type.get(layer_type, "default")
    k = int(inv_freq.shape[-1])
    if 2 * k > head_dim:
        raise UnsupportedError(f"rotary dim {2 * k} exceeds head_dim {head_dim}")
    P = int(min(MAX_POSITIONS, getattr(config, "max_position_embeddings", None) or MAX_POSITIONS))
    P = min(P, static_rope_positions(emb, config, rope_type, layer_type))
    with torch.no_grad(), library_float64():
        x = torch.zeros(1, 1, 1, dtype=torch.float64, device=inv_freq.device)
        args = () if layer_type is None else (layer_type,)
        cos, sin = emb(x, torch.arange(P, device=inv_freq.device)[None], *args)
    # read after the call: a dynamic module resets its frequencies to the original ones for a short input
    inv_freq = getattr(emb, "inv_freq" if layer_type is None else f"{layer_type}_inv_freq")
    cos, sin = array("rotary_emb cos", cos[0]), array("rotary_emb sin", sin[0])
    pick = slice(0, 2 * k, 2) if style == "interleaved" else slice(0, k)
    return Rotary(2 * k, style=style, inv_freq=array("rotary_emb.inv_freq", inv_freq), cos=cos[:, pick],
                  sin=sin[:, pick])


def static_rope_positions(emb: Any, config: Any, rope_type: str, layer_type: Optional[str] = None) -> int:
    r"""How many positions :math:`0..P-1` the rotary module ``emb`` gives length-independent angles
    (module docstring): ``longrope``: ``original_max_position_embeddings``; ``dynamic``: the module's
    ``original_max_seq_len`` :math:`- 1`; any other type: :data:`MAX_POSITIONS`.

    >>> from types import SimpleNamespace as C
    >>> static_rope_positions(C(), C(rope_parameters={"original_max_position_embeddings": 64}), "longrope")
    64
    >>> static_rope_positions(C(original_max_seq_len=32), C(), "dynamic"), static_rope_positions(C(), C(), "yarn")
    (31, 8192)
    """
    if rope_type == "longrope":
        params = getattr(config, "rope_parameters", None) or {}
        if layer_type is not None:
            params = params.get(layer_type) or {}
        limit = params.get("original_max_position_embeddings")
        if not isinstance(limit, int) or limit < 1:
            raise UnsupportedError(f"rope type 'longrope' without a valid original_max_position_embeddings "
                                   f"({limit!r}): the length where it switches to its long factors is unknown")
        return limit
    if "dynamic" in rope_type:
        limit = getattr(emb, "original_max_seq_len", None)
        if not isinstance(limit, int) or limit < 2:
            raise UnsupportedError(f"rope type {rope_type!r} without original_max_seq_len on its rotary module: "
                                   "the length where its angles start to depend on the sequence is unknown")
        return limit - 1
    return MAX_POSITIONS


def attention_scale(attn: Any, head_dim: int) -> float:
    r"""The score multiplier the module uses (``scaling``), default :math:`1/\sqrt d`.

    >>> from types import SimpleNamespace as A
    >>> attention_scale(A(scaling=0.125), 64), attention_scale(A(), 16)
    (0.125, 0.25)
    """
    s = getattr(attn, "scaling", None)
    return float(head_dim ** -0.5 if s is None else s)


#: Config options that change the computation in ways symuat does not model (option → when it is active).
_UNSUPPORTED = {
    "attn_logit_softcapping": lambda v: v is not None,  # read by the Gemma-2/3 importers (_READ_BY)
    "final_logit_softcapping": lambda v: False,  # logits only, not hidden states
    "alibi": lambda v: bool(v),
    "add_cross_attention": lambda v: bool(v),
    "is_encoder_decoder": lambda v: bool(v),
    "position_embedding_type": lambda v: v not in (None, "absolute", "rope"),
    "scale_attn_by_inverse_layer_idx": lambda v: False,  # read per layer by the GPT-2 importer
    "use_bidirectional_attention": lambda v: bool(v),  # Gemma-1/2/3: a causal decoder made bidirectional
}


#: Options of :data:`_UNSUPPORTED` that these families' importers read (they are part of the stack there).
_READ_BY = {"attn_logit_softcapping": ("gemma2", "gemma3_text"), "alibi": ("falcon",),
            "is_encoder_decoder": ("t5", "mt5", "umt5")}  # their importers read the encoder and refuse the rest


def check_config(config: Any) -> None:
    r"""Raise :class:`UnsupportedError` naming the first active option of :data:`_UNSUPPORTED`."""
    for option, active in _UNSUPPORTED.items():
        if getattr(config, "model_type", None) in _READ_BY.get(option, ()):
            continue
        if hasattr(config, option) and active(getattr(config, option)):
            raise UnsupportedError(f"unsupported config option {option}={getattr(config, option)!r} "
                                   f"({config.model_type})")
