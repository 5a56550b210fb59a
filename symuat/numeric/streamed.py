r"""A stack whose blocks are read one at a time: :class:`StreamedStack` over a :class:`BlockSource`.

For a model bigger than memory (issue 30) the weights of a block exist only while the block is used.  A
:class:`BlockSource` is a sequence of :class:`~symuat.numeric.stack.BlockWeights` whose item :math:`i` is *built*
when it is asked for (by a function, e.g. one that reads layer :math:`i` from memory-mapped files) and kept only
until another block is asked for or :meth:`BlockSource.release` is called: at most one block is held.  The DUAT
evaluation (:func:`~symuat.numeric.duat_form`) walks the blocks in order and releases each box's operators after
it, so its peak is one block's weights plus the form's own :math:`O(L\cdot N\cdot M)`; a view of the form (its
:class:`~symuat.numeric.layer_params.LayerParams`, an attribution) asks for a block again and it is read again.

What the evaluation needs to know about *every* block before it starts (the FFN kind, the most heads, the widest
FFN, the backend) a :class:`StreamedStack` answers from its source's description, without building a block.

>>> import numpy as np
>>> from symuat.numeric import duat_form, random_stack
>>> small = random_stack(np.random.default_rng(0), 3, 8, 2, 12, kind="pre_ln")
>>> source = BlockSource(3, 8, 2, 12, False, lambda i: small.blocks[i])
>>> streamed = StreamedStack(source, "pre_ln", small.activation)
>>> streamed.depth, streamed.width, source.held
(3, 8, 0)
>>> X = np.random.default_rng(1).standard_normal((5, 8))
>>> bool(np.array_equal(duat_form(streamed, X).output, duat_form(small, X).output)), source.held
(True, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ..errors import InvalidValueError, ShapeError, UnsupportedError
from .ffn import activation_function
from .norms import check_norm
from .stack import BlockWeights, TransformerStack, check_kind

__all__ = ["BlockSource", "StreamedStack"]


class BlockSource(Sequence):
    r"""``depth`` blocks of width ``width`` (``heads`` attention heads, FFN width ``hidden``, ``gated`` FFNs), block
    ``i`` made by ``build(i)`` when it is asked for (module docstring).  ``rotary`` is the blocks' shared
    :class:`~symuat.numeric.Rotary` (or None), readable without building a block; ``origin`` says where the blocks are
    read from (e.g. the checkpoint's directory)."""

    def __init__(self, depth: int, width: int, heads: int, hidden: int, gated: bool,
                 build: Callable[[int], BlockWeights], rotary: Any = None, origin: Any = None):
        for name, v in (("depth", depth), ("width", width), ("heads", heads), ("hidden", hidden)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InvalidValueError(f"{name}={v!r}: expected a positive int")
        if not callable(build):
            raise InvalidValueError(f"build must be a function of the block index, got {type(build).__name__}")
        self.depth, self.width, self.heads, self.hidden = int(depth), int(width), int(heads), int(hidden)
        self.gated, self.rotary, self._build, self.origin = bool(gated), rotary, build, origin
        self._last: Tuple[Optional[int], Optional[BlockWeights]] = (None, None)
        #: blocks built so far (a block asked for again after another is built again)
        self.builds = 0

    def __len__(self) -> int:
        return self.depth

    def __getitem__(self, i: Any) -> BlockWeights:
        if isinstance(i, slice):
            raise UnsupportedError("a streamed stack's blocks are read one at a time: index them one by one")
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not -self.depth <= i < self.depth:
            raise IndexError(f"block index {i!r} out of range for {self.depth} blocks")
        k = int(i) % self.depth
        if self._last[0] == k:
            return self._last[1]
        self._last = (None, None)  # the previous block is dropped before the next is read
        block = self._build(k)
        if not isinstance(block, BlockWeights):
            raise InvalidValueError(f"block {k} was built as a {type(block).__name__}, not a BlockWeights")
        if (block.width, block.attention.n_heads, block.ffn.hidden, block.ffn.gated) != \
                (self.width, self.heads, self.hidden, self.gated):
            raise ShapeError(f"block {k} has width {block.width}, {block.attention.n_heads} heads, FFN width "
                             f"{block.ffn.hidden}, gated {block.ffn.gated}; the source says {self.width}, "
                             f"{self.heads}, {self.hidden}, {self.gated}")
        self.builds += 1
        self._last = (k, block)
        return block

    def __iter__(self):
        for i in range(self.depth):
            yield self[i]  # no local name: the block yielded is not kept by the generator

    @property
    def held(self) -> int:
        """How many blocks are held now (0 or 1)."""
        return int(self._last[0] is not None)

    def release(self) -> None:
        """Drop the block held, if any."""
        self._last = (None, None)

    def __repr__(self) -> str:
        return f"BlockSource({self.depth} blocks, width {self.width}, read on demand, {self.held} held)"


@dataclass(frozen=True)
class StreamedStack(TransformerStack):
    r"""A :class:`~symuat.numeric.TransformerStack` whose ``blocks`` are a :class:`BlockSource` (module docstring).

    Every block shares the stack's ``activation``; the static input transform (scale, positions, input norm) is not
    streamed and not supported here; ``final_norm`` is held.
    """

    def __post_init__(self) -> None:
        if not isinstance(self.blocks, BlockSource):
            raise InvalidValueError(f"a StreamedStack's blocks must be a BlockSource, got {type(self.blocks).__name__}")
        check_kind(self.kind)
        activation_function(self.activation)
        for name in ("input_scale", "position_embeddings", "input_norm"):
            if getattr(self, name) is not None:
                raise UnsupportedError(f"a StreamedStack has no {name}: its input is the first block's")
        check_norm("final_norm", self.final_norm, self.blocks.width)

    @property
    def width(self) -> int:
        return self.blocks.width

    def block_activation(self, i: int) -> str:
        return self.activation

    def blocks_shape(self) -> Tuple[frozenset, int, int]:
        s = self.blocks
        return frozenset((s.gated,)), s.heads, s.hidden

    def weights_backend(self) -> str:
        return "numpy"

    def __repr__(self) -> str:
        return (f"StreamedStack(depth={self.depth}, width={self.width}, kind={self.kind!r}, "
                f"activation={self.activation!r}, blocks read on demand)")
