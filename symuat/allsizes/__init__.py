r"""The all-sizes evidence level: explicit identities decided for every size.

Builders are traced on matrices of symbolic size (:mod:`.tracer`), put in index normal
form with canonically labelled contraction graphs (:mod:`.terms`) and compared
(:mod:`.decide`); a difference is confirmed by the smallest explicit witness.
"""

from .decide import Decision, all_sizes_level, clear_cache, decide, normal_form
from .index_types import Atom, IndexType, Prod, Sum
from .outside import OutsideFragment
from .tracer import Tracer

__all__ = [
    "decide", "all_sizes_level", "Decision", "normal_form", "clear_cache",
    "Tracer", "OutsideFragment", "IndexType", "Atom", "Prod", "Sum",
]
