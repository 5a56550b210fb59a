"""``symuat.numeric.backend``: the NumPy backend is the identity (arrays kept as they are, no torch import), and the
helpers give the same numbers on torch as on NumPy."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.numeric import (
    ACTIVATIONS,
    FFNWeights,
    LayerNormWeights,
    RMSNormWeights,
    activation_function,
    apply_norm,
    duat_form,
    norm_operator,
    random_stack,
    residual_params,
    stack_output,
)

#: a NumPy array meeting a torch tensor in one operation warns about __array_wrap__: here that is an error (no silent
#: mixing of backends, which would also fail on a GPU)
pytestmark = pytest.mark.filterwarnings("error:__array_wrap__:DeprecationWarning")

from symuat.numeric.attention import _heads  # noqa: E402
from symuat.numeric.backend import (  # noqa: E402
    backend_name,
    copy_array,
    is_numpy,
    on_backend,
    stack,
    tile,
    to_numpy,
    zeros_like_backend,
)
from symuat.numeric.mha_operator import _mha_operator  # noqa: E402


def test_importing_the_numeric_core_imports_no_torch():
    code = "import sys, symuat.numeric.backend, symuat.numeric; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_numpy_backend_needs_no_array_api_compat():
    """Without array-api-compat (the torch extra's) a form is evaluated on NumPy, bit for bit as with it, and another
    backend is refused by name."""
    code = ("import sys; sys.modules['array_api_compat'] = None\n"
            "import numpy as np\n"
            "from symuat.errors import UnsupportedError\n"
            "from symuat.numeric import duat_form, random_stack\n"
            "from symuat.numeric.backend import namespace\n"
            "form = duat_form(random_stack(np.random.default_rng(3), 2, 4, 2, 8), np.ones((3, 4)))\n"
            "np.save(sys.stdout.buffer, form.output)\n"
            "class Foreign: pass\n"
            "try:\n    namespace(Foreign())\nexcept UnsupportedError as e:\n    sys.stderr.write(str(e))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    import io

    without = np.load(io.BytesIO(done.stdout))
    want = duat_form(random_stack(np.random.default_rng(3), 2, 4, 2, 8), np.ones((3, 4))).output
    assert np.array_equal(without, want)
    assert done.stderr.decode() == "a backend other than NumPy needs array-api-compat: pip install 'symuat[torch]'"


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 4), m=st.integers(1, 5), seed=st.integers(0, 10 ** 6))
def test_on_backend_maps_every_array_and_keeps_everything_else(n, m, seed):
    """Every array of a nested weights value is converted (also MoE-style attributes set in __post_init__) and the
    other fields stay; the original is untouched."""
    rng = np.random.default_rng(seed)
    ln = LayerNormWeights(rng.normal(size=m), None, eps=1e-3)
    value = {"ffn": FFNWeights(rng.normal(size=(m, n)), None, rng.normal(size=(n, m)), rng.normal(size=m)),
             "norms": (ln, RMSNormWeights(rng.normal(size=m), offset=1.0)), "k": 3}
    doubled = on_backend(value, lambda a: 2 * a)
    assert np.array_equal(doubled["ffn"].W1, 2 * value["ffn"].W1) and doubled["ffn"].b1 is None
    assert np.array_equal(doubled["norms"][0].beta, 2 * ln.beta) and doubled["norms"][0].has_bias is False
    assert doubled["norms"][1].offset == 1.0 and doubled["k"] == 3
    assert np.array_equal(on_backend(value, lambda a: a)["ffn"].W2, value["ffn"].W2)
    assert not np.shares_memory(doubled["ffn"].W1, value["ffn"].W1)


def test_a_whole_stack_round_trips():
    s = random_stack(np.random.default_rng(1), 2, 4, 2, 6, kind="pre_ln")
    back = on_backend(on_backend(s, lambda a: a.copy()), to_numpy)
    assert all(np.array_equal(a.attention.W_Q, b.attention.W_Q) for a, b in zip(s.blocks, back.blocks))
    assert repr(back) == repr(s)


def test_numpy_helpers_are_numpy_itself():
    x = np.arange(3.0)
    assert is_numpy(x) and backend_name(x) == "numpy" and to_numpy(x) is x and to_numpy(None) is None
    assert np.array_equal(tile(x, 2), np.tile(x, 2)) and np.array_equal(stack([x, x]), np.stack([x, x]))
    c = copy_array(x)
    assert np.array_equal(c, x) and not np.shares_memory(c, x)
    assert zeros_like_backend(x, 4).dtype == np.float64 and zeros_like_backend(None, 2).shape == (2,)


@pytest.mark.xdist_group("models")  # the worker that imports torch
def test_torch_helpers_agree_with_numpy():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).normal(size=5)
    t = torch.from_numpy(x)
    assert backend_name(t) == "torch:cpu" and not is_numpy(t)
    assert np.array_equal(tile(t, 3).numpy(), np.tile(x, 3))
    assert np.array_equal(stack([t, 2 * t]).numpy(), np.stack([x, 2 * x]))
    c = copy_array(t)
    assert np.array_equal(c.numpy(), x) and c.data_ptr() != t.data_ptr()
    z = zeros_like_backend(t, 4)
    assert z.dtype == torch.float64 and z.shape == (4,)
    assert np.array_equal(to_numpy(t), x)


#: every residual layout and the options of random_stack: each evaluated on torch (CPU) and on NumPy
LAYOUT_CASES = {
    "paper-relu-causal": dict(kind="paper", causal=True),
    "standard-sigmoid": dict(kind="standard", activation="sigmoid"),
    "pre_ln-gelu-rotary-interleaved-gqa": dict(kind="pre_ln", activation="gelu", rotary_dim=2,
                                                rotary_style="interleaved", n_kv_heads=1, causal=True),
    "post_ln-gelu_tanh-input-final": dict(kind="post_ln", activation="gelu_tanh", input_norm=True,
                                          position_embeddings=True),
    "parallel-shared-norm": dict(kind="parallel", shared_norm=True, final_norm=True, activation="quick_gelu"),
    "parallel-rms-gated-qknorm": dict(kind="parallel", norm="rms", gated=True, activation="silu", qk_norm="head"),
    "sublayer_post_ln-full-qknorm": dict(kind="sublayer_post_ln", norm="rms", qk_norm="full", activation="relu2"),
    "sandwich-gated-scaled": dict(kind="sandwich", norm="rms", gated=True, activation="gelu_tanh", input_scale=2.0,
                                  final_norm=True),
}


@pytest.mark.xdist_group("models")  # the worker that imports torch
@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_every_layout_evaluates_on_torch_as_on_numpy(case):
    """The form, the direct forward and the Eq. 20 parameters on CPU torch equal NumPy's within 1e-12 for every
    layout (different rounding only: the same operations in another library)."""
    torch = pytest.importorskip("torch")
    s = random_stack(np.random.default_rng(len(case)), 3, 8, 2, 12, **LAYOUT_CASES[case])
    X = np.random.default_rng(7).normal(size=(5, 8))
    t = on_backend(s, lambda a: torch.from_numpy(a.copy()))
    Xt = torch.from_numpy(X)
    want, got = duat_form(s, X), duat_form(t, Xt)
    scale = np.max(np.abs(want.output))
    assert np.max(np.abs(want.output - got.output.numpy())) <= 1e-12 * scale
    assert np.max(np.abs(stack_output(s, X) - stack_output(t, Xt).numpy())) <= 1e-12 * scale
    for p, q in zip(residual_params(s, X), residual_params(t, Xt)):
        assert np.max(np.abs(p.b3 - q.b3.numpy())) <= 1e-12 * max(np.max(np.abs(p.b3)), 1.0)


@pytest.mark.xdist_group("models")  # the worker that imports torch
def test_huge_rows_are_rescaled_on_torch_as_on_numpy():
    """Rows above 2^400 (whose squares overflow) are divided by a power of two first on torch too: LayerNorm and
    RMSNorm of a row of 1e200s stay finite and equal NumPy's; ordinary rows are untouched."""
    torch = pytest.importorskip("torch")
    X = np.random.default_rng(2).normal(size=(3, 6))
    X[1] *= 1e200
    for norm in (LayerNormWeights(np.linspace(0.5, 1.5, 6), np.full(6, 0.1)), RMSNormWeights(np.ones(6))):
        t = on_backend(norm, lambda a: torch.from_numpy(a.copy()))
        Xt = torch.from_numpy(X)
        want, got = apply_norm(X, norm), apply_norm(Xt, t).numpy()
        assert np.all(np.isfinite(got)) and np.max(np.abs(want - got)) <= 1e-13
        (op, b), (opt, bt) = norm_operator(X, norm), norm_operator(Xt, t)
        v = op._matvec(X.reshape(-1)) + b
        vt = (opt._matvec(Xt.reshape(-1)) + bt).numpy()
        assert np.all(np.isfinite(vt)) and np.max(np.abs(v - vt)) <= 1e-13


@pytest.mark.xdist_group("models")  # the worker that imports torch
def test_torch_heads_are_views_of_one_block():
    """On torch, as on NumPy, the H_h of a layer are views of one (H, N, N) block and the MHA operator holds that
    block, not a second stacked copy."""
    torch = pytest.importorskip("torch")

    s = random_stack(np.random.default_rng(0), 1, 8, 2, 4, causal=True)
    s = on_backend(s, lambda a: torch.from_numpy(a.copy()))
    X = torch.from_numpy(np.random.default_rng(1).normal(size=(5, 8)))
    heads = _heads(X, s.blocks[0].attention, None)
    op, _ = _mha_operator(5, s.blocks[0].attention, heads)
    assert op._H.shape == (2, 5, 5) and all(h.data_ptr() == op._H[i].data_ptr() for i, h in enumerate(heads))
    assert torch.allclose(op._H.sum(dim=2), torch.ones(2, 5, dtype=torch.float64), rtol=0, atol=1e-15)


@pytest.mark.xdist_group("models")  # the worker that imports torch
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_every_activation_on_torch_is_numpys(name):
    """Each σ on torch (the same formula with torch's functions; GELU's erf is torch's) equals NumPy's within 1e-14
    (absolute where |σ| < 1, relative above: near the saturation of tanh the two libraries' last bits differ, e.g.
    NumPy's logistic(-38) is 0 and torch's 5.6e-17), over large and tiny arguments of both signs, no NaN."""
    torch = pytest.importorskip("torch")
    x = np.concatenate([np.linspace(-40.0, 40.0, 801), [-800.0, -1e-300, 0.0, 1e-300, 800.0]])
    want = activation_function(name)(x)
    got = activation_function(name)(torch.from_numpy(x))
    assert isinstance(got, torch.Tensor) and bool(torch.all(torch.isfinite(got)))
    assert np.max(np.abs(want - got.numpy()) / np.maximum(np.abs(want), 1.0)) <= 1e-14
