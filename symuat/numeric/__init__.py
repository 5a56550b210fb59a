r"""NumPy side of symuat: direct Transformer layers and their structured matrix–vector forms.

Row-major vectorisation :math:`x' = \operatorname{vec}_r(X)` throughout (seed 001, Figure 3);
:math:`\operatorname{vec}_r(A X B) = (A \otimes B^{\mathsf T}) \operatorname{vec}_r(X)`.
"""

from symuat.numeric.attention import (
    AttentionWeights,
    attention_weights,
    head_attention_weights,
    mha_operator,
    multi_head_attention,
    resolve_scale,
    softmax_rows,
)
from symuat.numeric.duat_form import DUATForm, duat_form, duat_relative_error
from symuat.numeric.layernorm import LayerNormWeights, layer_norm, layer_norm_operator
from symuat.numeric.operators import (
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
from symuat.numeric.residual_params import (
    DYNAMIC,
    ResidualParams,
    apply_residual,
    layer_residual_params,
    residual_params,
)
from symuat.numeric.stack import (
    ACTIVATIONS,
    KINDS,
    BlockWeights,
    FFNWeights,
    TransformerStack,
    activation_function,
    block_forward,
    ffn,
    forward,
    random_stack,
)

__all__ = [
    # operators
    "DENSE_LIMIT", "LinearOperator", "IdentityOperator", "Diagonal", "Dense", "Kron", "KronSum",
    "Sum", "Compose", "Scaled", "vec_r", "unvec_r",
    # attention
    "AttentionWeights", "softmax_rows", "resolve_scale", "attention_weights",
    "head_attention_weights", "multi_head_attention", "mha_operator",
    # layernorm
    "LayerNormWeights", "layer_norm", "layer_norm_operator",
    # stack
    "KINDS", "ACTIVATIONS", "activation_function", "FFNWeights", "BlockWeights",
    "TransformerStack", "ffn", "block_forward", "forward", "random_stack",
    # residual parameters
    "DYNAMIC", "ResidualParams", "layer_residual_params", "residual_params", "apply_residual",
    # the DUAT form of a stack
    "DUATForm", "duat_form", "duat_relative_error",
]
