r"""The numeric core: direct Transformer layers, their structured matrix–vector forms and the DUAT form's data.

What is done *with* a form (attribution, the held network, interventions, views, export, plots) is the layer above,
:mod:`symuat.analysis`.

Row-major vectorisation :math:`x' = \operatorname{vec}_r(X)` throughout (seed 001, Figure 3);
:math:`\operatorname{vec}_r(A X B) = (A \otimes B^{\mathsf T}) \operatorname{vec}_r(X)`.
"""

from .attention import (
    AttentionWeights,
    attention_weights,
    check_attention_mask,
    head_attention_weights,
    multi_head_attention,
    resolve_scale,
    softmax_rows,
)
from .duat_form import DUATForm, duat_form, duat_relative_error
from .ffn import ACTIVATIONS, FFNWeights, GatedFFNWeights, activation_function, ffn, ffn_operators
from .head import Head, HeadTransform
from .latent import LatentQK
from .layernorm import LayerNormWeights, layer_norm, layer_norm_operator
from .mha_operator import mha_operator
from .moe import MoEFFNWeights, routing_gates
from .norms import RMSNormWeights, apply_norm, norm_operator, rms_norm
from .operators import (
    DENSE_LIMIT,
    Compose,
    Dense,
    Diagonal,
    IdentityOperator,
    Kron,
    KronSum,
    LinearOperator,
    Scaled,
    Sum,
    unvec_r,
    vec_r,
)
from .random_stacks import random_stack
from .residual_params import (
    DYNAMIC,
    ResidualParams,
    apply_residual,
    dynamic_parameters,
    layer_residual_params,
    residual_params,
)
from .rotary import ROTARY_STYLES, Rotary, apply_rotary
from .stack import (
    KINDS,
    LAYOUTS,
    BlockWeights,
    TransformerStack,
    block_forward,
    forward,
    hidden_states,
    prepare_input,
    stack_output,
)

__all__ = [
    # operators
    "DENSE_LIMIT", "LinearOperator", "IdentityOperator", "Diagonal", "Dense", "Kron", "KronSum",
    "Sum", "Compose", "Scaled", "vec_r", "unvec_r",
    # attention
    "AttentionWeights", "softmax_rows", "resolve_scale", "attention_weights", "check_attention_mask",
    "head_attention_weights", "multi_head_attention", "mha_operator", "LatentQK",
    # norms and rotary
    "LayerNormWeights", "layer_norm", "layer_norm_operator", "RMSNormWeights", "rms_norm", "apply_norm",
    "norm_operator", "ROTARY_STYLES", "Rotary", "apply_rotary",
    # FFN
    "ACTIVATIONS", "activation_function", "FFNWeights", "GatedFFNWeights", "MoEFFNWeights", "routing_gates", "ffn",
    "ffn_operators",
    # stack
    "KINDS", "LAYOUTS", "BlockWeights", "TransformerStack", "block_forward", "forward", "prepare_input",
    "hidden_states", "stack_output", "random_stack",
    # residual parameters
    "DYNAMIC", "ResidualParams", "dynamic_parameters", "layer_residual_params", "residual_params",
    "apply_residual",
    # the output head (logits)
    "Head", "HeadTransform",
    # the DUAT form of a stack
    "DUATForm", "duat_form", "duat_relative_error",
]
