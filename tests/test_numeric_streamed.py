"""``symuat.numeric.streamed``: a stack whose blocks are built one at a time gives the same DUAT form, bit for bit, as
the stack holding them, building each block once and holding at most one; what it cannot stream is refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symuat.errors import InvalidValueError, ShapeError, UnsupportedError
from symuat.numeric import duat_form, random_stack
from symuat.numeric.streamed import BlockSource, StreamedStack


def _streamed(stack, gated=False, hidden=None):
    b = stack.blocks[0]
    held = []

    def build(i):
        held.append(source.held)
        return stack.blocks[i]

    source = BlockSource(stack.depth, stack.width, b.attention.n_heads, hidden or b.ffn.hidden, gated, build)
    return StreamedStack(source, stack.kind, stack.activation, final_norm=stack.final_norm), held


@settings(max_examples=8, deadline=None)
@given(depth=st.integers(1, 4), heads=st.sampled_from([1, 2]), n=st.integers(1, 6), gated=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_same_form_bit_for_bit(depth, heads, n, gated, seed):
    rng = np.random.default_rng(seed)
    stack = random_stack(rng, depth, 4 * heads, heads, 6, kind="pre_ln", activation="silu" if gated else "gelu",
                         causal=True, norm="rms", gated=gated)
    streamed, held = _streamed(stack, gated)
    X = rng.standard_normal((n, stack.width))
    a, b = duat_form(stack, X), duat_form(streamed, X)
    assert np.array_equal(a.output, b.output)
    assert streamed.blocks.builds == depth and held == [0] * depth  # each block once, the previous one dropped
    streamed.blocks.release()
    assert streamed.blocks.held == 0
    for i in range(depth):
        assert np.array_equal(a.params.input(i), b.params.input(i))


def test_refusals():
    stack = random_stack(np.random.default_rng(0), 2, 4, 2, 6, kind="pre_ln", causal=True)
    streamed, _ = _streamed(stack)
    with pytest.raises(UnsupportedError, match="read one at a time: index them one by one"):
        streamed.blocks[0:2]
    with pytest.raises(IndexError, match="block index 2 out of range for 2 blocks"):
        streamed.blocks[2]
    with pytest.raises(InvalidValueError, match="a StreamedStack's blocks must be a BlockSource, got tuple"):
        StreamedStack(stack.blocks, "pre_ln")
    with pytest.raises(UnsupportedError, match="a StreamedStack has no input_scale"):
        StreamedStack(streamed.blocks, "pre_ln", input_scale=2.0)
    with pytest.raises(InvalidValueError, match="depth=0: expected a positive int"):
        BlockSource(0, 4, 2, 6, False, lambda i: None)
    wrong, _ = _streamed(stack, hidden=7)
    with pytest.raises(ShapeError, match="block 0 has width 4, 2 heads, FFN width 6, gated False; the source says "
                                         "4, 2, 7, False"):
        wrong.blocks[0]
    bad = BlockSource(2, 4, 2, 6, False, lambda i: "weights")
    with pytest.raises(InvalidValueError, match="block 1 was built as a str, not a BlockWeights"):
        bad[1]
