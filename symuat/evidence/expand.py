r"""``expand(deep=True)`` that expands each shared sub-expression once.

An entry of a layer's matrix–vector form repeats the same sub-expressions across
entries and across both sides, e.g. every :math:`\sigma(q_n\cdot k_m)` of an
attention head.  SymPy's deep expansion walks the expanded *tree* and redoes them
each time; :func:`expand_shared` walks the expression *DAG* bottom-up, expanding each
distinct node once (``memo``) with its arguments already expanded, so a memo shared
by all entries of an instance expands every common sub-expression once.

The result is SymPy's own expansion (``expand(node, deep=False)`` at every node), so
``expand_shared(a, m) - expand_shared(b, m)`` is 0 exactly when
``expand(a - b, deep=True)`` is (both are sums of canonical monomials; SymPy's ``Add``
collects equal monomials); ``tests/test_evidence_expand.py`` checks this on the
ledger's claims and their mutants.
"""

from __future__ import annotations

import sympy
from sympy.core.function import AppliedUndef

__all__ = ["expand_shared"]


def expand_shared(expr: sympy.Basic, memo: dict | None = None) -> sympy.Basic:
    r"""``expand(expr, deep=True)``, each distinct sub-expression expanded once (cached in ``memo``).

    An uninterpreted function application (e.g. :math:`\sigma`) keeps its head and gets
    expanded arguments.

    >>> from symuat.names import SIGMA
    >>> x, y = sympy.symbols("x y")
    >>> expand_shared((x + y) ** 2 * SIGMA((x + y) * (x - y)))
    x**2*sigma(x**2 - y**2) + 2*x*y*sigma(x**2 - y**2) + y**2*sigma(x**2 - y**2)
    """
    memo = {} if memo is None else memo
    stack = [expr]
    while stack:  # iterative post-order: deep expressions do not hit the recursion limit
        node = stack[-1]
        if node in memo:
            stack.pop()
            continue
        if node.is_Atom or not node.args:
            memo[node] = node
            stack.pop()
            continue
        pending = [a for a in node.args if a not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        rebuilt = node.func(*[memo[a] for a in node.args])
        keep = isinstance(rebuilt, AppliedUndef) or not isinstance(rebuilt, sympy.Expr)
        memo[node] = rebuilt if keep else sympy.expand(rebuilt, deep=False)
    return memo[expr]
