r"""Structured linear operators acting on row-major vectorised activations.

An activation :math:`X \in \mathbb{R}^{N\times M}` is flattened row by row,
:math:`x' = \operatorname{vec}_r(X)` (seed 001, Figure 3 — the paper's data
transform :math:`T_D`).  The key identity is

.. math::

    \operatorname{vec}_r(A X B) = (A \otimes B^{\mathsf T})\,\operatorname{vec}_r(X),
    \qquad\text{equivalently}\qquad
    (A \otimes B)\,\operatorname{vec}_r(X) = \operatorname{vec}_r(A X B^{\mathsf T}).

The operators below realise the paper's :math:`W'` matrices (Eq. 3, 5, 9, 10)
without ever materialising an :math:`NM \times NM` array.

Operator protocol (shared with the rest of symuat)
--------------------------------------------------
* ``op.shape -> (rows, cols)``;
* ``op.matvec(v)`` for a 1-D ``v`` of length ``cols``, returning a 1-D array of length ``rows``;
* ``op.to_dense()`` only when ``rows * cols <= 4_000_000``, otherwise
  :class:`~symuat.errors.UnsupportedError`.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterable, Iterator, Sequence, Tuple, Union

import numpy as np

from ..errors import InvalidValueError, ShapeError, UnsupportedError
from ..validation import as_finite_array, check_positive_dim, check_real_number
from .backend import as_backend_array, check_backend_array, copy_array, is_array, is_numpy, namespace

__all__ = [
    "DENSE_LIMIT",
    "LinearOperator",
    "IdentityOperator",
    "Diagonal",
    "Centering",
    "Dense",
    "Kron",
    "KronSum",
    "Sum",
    "Compose",
    "Scaled",
    "vec_r",
    "unvec_r",
    "trusted_operators",
]

#: Largest ``rows * cols`` for which :meth:`LinearOperator.to_dense` is allowed.
DENSE_LIMIT = 4_000_000


#: Inside :func:`trusted_operators` constructors skip validation and copies (the arguments were
#: validated once at the API boundary, e.g. by :func:`~symuat.numeric.duat_form.duat_form`).
_TRUSTED: ContextVar[bool] = ContextVar("symuat_trusted_operators", default=False)


@contextmanager
def trusted_operators() -> Iterator[None]:
    r"""Build operators from already validated arrays without re-validating or copying them.

    >>> with trusted_operators():
    ...     Diagonal(np.ones(2)).shape
    (2, 2)
    """
    token = _TRUSTED.set(True)
    try:
        yield
    finally:
        _TRUSTED.reset(token)


def vec_r(X: Any) -> np.ndarray:
    r"""Row-major vectorisation :math:`\operatorname{vec}_r(X) = (x_{11},\dots,x_{1M},x_{21},\dots)^{\mathsf T}`.

    Parameters
    ----------
    X : array_like, shape (N, M)

    Returns
    -------
    numpy.ndarray, shape (N*M,)
    """
    X = as_backend_array("X", X, 2)
    return copy_array(X.reshape(-1))


def unvec_r(v: Any, N: int, M: int) -> np.ndarray:
    r"""Inverse of :func:`vec_r`: reshape a length-:math:`NM` vector into :math:`N \times M`."""
    N = check_positive_dim("N", N)
    M = check_positive_dim("M", M)
    v = as_backend_array("v", v, 1)
    if v.shape[0] != N * M:
        raise ShapeError(f"v must have length N*M = {N}*{M} = {N * M}, got {v.shape[0]}")
    return copy_array(v.reshape(N, M))


class LinearOperator:
    r"""Base class: a linear map :math:`\mathbb{R}^{\text{cols}} \to \mathbb{R}^{\text{rows}}`."""

    shape: Tuple[int, int]

    def _matvec(self, v: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def matvec(self, v: Any) -> np.ndarray:
        r"""Return :math:`\mathrm{op}\, v` for a finite 1-D ``v`` of length ``shape[1]``."""
        v = as_backend_array("v", v, 1)
        if v.shape[0] != self.shape[1]:
            raise ShapeError(
                f"v must have length {self.shape[1]} to match operator shape {self.shape}, got {v.shape[0]}"
            )
        return self._matvec(v)

    def _matvecs(self, V: np.ndarray) -> np.ndarray:
        """Apply to each row of ``V`` (shape ``(B, cols)``); subclasses batch the work."""
        rows = [self._matvec(v) for v in V]
        return np.stack(rows) if is_numpy(V) else namespace(V).stack(rows)

    def _dense(self) -> np.ndarray:
        # generic fallback: apply to the columns of the identity
        return np.stack([self._matvec(e) for e in np.eye(self.shape[1])], axis=1)

    def to_dense(self) -> np.ndarray:
        r"""Materialise the operator (only if ``rows * cols <= DENSE_LIMIT``)."""
        r, c = self.shape
        if r * c > DENSE_LIMIT:
            raise UnsupportedError(
                f"to_dense() of a {r}x{c} operator ({r * c} entries) exceeds the limit of "
                f"{DENSE_LIMIT} entries; use matvec() instead"
            )
        return np.asarray(self._dense(), dtype=np.float64)

    def __matmul__(self, other: Any):
        if isinstance(other, LinearOperator):
            return Compose([self, other])
        return self.matvec(other)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape})"


def _as_operator(name: str, op: Any) -> LinearOperator:
    if not isinstance(op, LinearOperator):
        raise InvalidValueError(f"{name} must be a LinearOperator, got {type(op).__name__}")
    return op


class IdentityOperator(LinearOperator):
    r"""The identity :math:`I_n`."""

    def __init__(self, n: int):
        self.n = check_positive_dim("n", n)
        self.shape = (self.n, self.n)

    def _matvec(self, v):
        return copy_array(v)

    def _matvecs(self, V):
        return copy_array(V)

    def _dense(self):
        return np.eye(self.n)


class Diagonal(LinearOperator):
    r"""The diagonal matrix :math:`\operatorname{diag}(d)`."""

    def __init__(self, d: Any):
        if _TRUSTED.get():
            self.d, self.shape = d, (d.shape[0], d.shape[0])
            return
        if is_array(d) and not is_numpy(d):  # another backend (torch): validated there, kept on its device
            self.d, self.shape = check_backend_array("d", d, 1), (d.shape[0], d.shape[0])
            return
        d = as_finite_array("d", d, ndim=1)
        check_positive_dim("len(d)", d.shape[0])
        self.d = d.copy()
        self.d.setflags(write=False)
        self.shape = (d.shape[0], d.shape[0])

    def _matvec(self, v):
        return self.d * v

    def _matvecs(self, V):
        return V * self.d

    def _dense(self):
        return np.diag(self.d)


class Centering(LinearOperator):
    r"""The centring matrix :math:`C_M = I_M - \tfrac1M\mathbf 1\mathbf 1^{\mathsf T}`, applied as
    :math:`v - \bar v\mathbf 1` (:math:`O(M)`, never as a dense :math:`M\times M` product).

    >>> Centering(3).matvec(np.array([1.0, 2.0, 6.0])).tolist()
    [-2.0, -1.0, 3.0]
    """

    def __init__(self, n: int):
        self.n = check_positive_dim("n", n)
        self.shape = (self.n, self.n)

    def _matvec(self, v):
        return v - v.mean()

    def _dense(self):
        return np.eye(self.n) - np.full((self.n, self.n), 1.0 / self.n)


class Dense(LinearOperator):
    r"""An explicit (small) matrix wrapped as an operator."""

    def __init__(self, A: Any):
        A = as_finite_array("A", A, ndim=2)
        check_positive_dim("A.shape[0]", A.shape[0])
        check_positive_dim("A.shape[1]", A.shape[1])
        self.A = A.copy()
        self.A.setflags(write=False)
        self.shape = (A.shape[0], A.shape[1])

    def _matvec(self, v):
        return self.A @ v

    def _dense(self):
        return self.A.copy()


# ---- Kronecker factors -----------------------------------------------------
# A Kronecker factor is a product of "atoms"; an atom is a 2-D ndarray, an
# IdentityOperator or a Diagonal.  Keeping the product unevaluated lets
# (H ⊗ (W_V W_O)^T) be applied in O(N^2 d + N M d) instead of O(N^2 M + N M^2).

_Atom = Union[np.ndarray, IdentityOperator, Diagonal, "Centering"]
FactorLike = Union[Any, IdentityOperator, Diagonal, Sequence[Any]]


def _atom(name: str, a: Any) -> _Atom:
    if isinstance(a, (IdentityOperator, Diagonal, Centering)) or _TRUSTED.get():
        return a
    if isinstance(a, LinearOperator):
        raise InvalidValueError(
            f"{name}: only ndarray, IdentityOperator or Diagonal may be Kronecker factors, got {type(a).__name__}"
        )
    if is_array(a) and not is_numpy(a):  # another backend (torch): validated there, kept on its device
        return check_backend_array(name, a, 2)
    arr = as_finite_array(name, a, ndim=2)
    check_positive_dim(f"{name}.shape[0]", arr.shape[0])
    check_positive_dim(f"{name}.shape[1]", arr.shape[1])
    arr = arr.copy()
    arr.setflags(write=False)
    return arr


def _factor(name: str, f: FactorLike) -> Tuple[_Atom, ...]:
    # a list/tuple is a product of factors only if its items are arrays/operators;
    # a nested list of numbers such as [[1, 2], [3, 4]] is a single matrix
    if isinstance(f, (list, tuple)) and (
        len(f) == 0 or all(isinstance(a, LinearOperator) or is_array(a) for a in f)
    ):
        if len(f) == 0:
            raise InvalidValueError(f"{name} must be a non-empty product of matrices, got an empty {type(f).__name__}")
        atoms = tuple(_atom(f"{name}[{i}]", a) for i, a in enumerate(f))
    else:
        atoms = (_atom(name, f),)
    for i in range(len(atoms) - 1 if not _TRUSTED.get() else 0):
        if atoms[i].shape[1] != atoms[i + 1].shape[0]:
            raise ShapeError(
                f"{name}: factor {i} has shape {atoms[i].shape} but factor {i + 1} has shape "
                f"{atoms[i + 1].shape}; inner dimensions must agree"
            )
    return atoms


def _atom_dense(a: _Atom) -> np.ndarray:
    return a if is_array(a) else a._dense()


def _left(a: _Atom, Y: np.ndarray) -> np.ndarray:
    """Return a @ Y."""
    if isinstance(a, IdentityOperator):
        return Y
    if isinstance(a, Diagonal):
        return a.d[:, None] * Y
    if isinstance(a, Centering):
        return Y - Y.mean(axis=-2, keepdims=True)
    return a @ Y


def _right_T(Y: np.ndarray, b: _Atom) -> np.ndarray:
    """Return Y @ b.T."""
    if isinstance(b, IdentityOperator):
        return Y
    if isinstance(b, Diagonal):
        return Y * b.d[None, :]
    if isinstance(b, Centering):  # C_M is symmetric
        return Y - Y.mean(axis=-1, keepdims=True)
    return Y @ b.T


def _shape_of(atoms: Tuple[_Atom, ...]) -> Tuple[int, int]:
    return (atoms[0].shape[0], atoms[-1].shape[1])


class Kron(LinearOperator):
    r"""Kronecker product :math:`A \otimes B` applied as :math:`\operatorname{vec}_r(A X B^{\mathsf T})`.

    Parameters
    ----------
    A, B : array_like, IdentityOperator, Diagonal, or a list/tuple of ndarray/IdentityOperator/Diagonal
        A list/tuple of such objects means the (unevaluated) product of its members, e.g.
        ``B = (W_O_h.T, W_V_h.T)`` stands for :math:`B = W_{O,h}^{\mathsf T} W_{V,h}^{\mathsf T}`.

    Notes
    -----
    With :math:`A \in \mathbb{R}^{p\times q}`, :math:`B \in \mathbb{R}^{r\times s}` the
    operator has shape :math:`(pr, qs)` and maps :math:`\operatorname{vec}_r(X)`,
    :math:`X \in \mathbb{R}^{q\times s}`, to :math:`\operatorname{vec}_r(A X B^{\mathsf T})`.
    The left factors are applied when the intermediate has the fewest columns,
    so a low-rank :math:`B` is exploited automatically.
    """

    def __init__(self, A: FactorLike, B: FactorLike):
        self.A_factors = _factor("A", A)
        self.B_factors = _factor("B", B)
        p, q = _shape_of(self.A_factors)
        r, s = _shape_of(self.B_factors)
        self.shape = (p * r, q * s)

    @property
    def A(self) -> np.ndarray:
        """Dense left factor."""
        return _product(self.A_factors)

    @property
    def B(self) -> np.ndarray:
        """Dense right factor."""
        return _product(self.B_factors)

    def apply_matrix(self, X: np.ndarray) -> np.ndarray:
        r"""Return :math:`A X B^{\mathsf T}` for an unflattened ``X`` (no validation)."""
        Y = X
        # widths of the intermediate after applying 0, 1, ... right factors (B^T = B_k^T ... B_1^T)
        rights = list(reversed(self.B_factors))
        widths = [Y.shape[-1]] + [b.shape[0] for b in rights]
        k_best = int(np.argmin(widths))
        for k, b in enumerate(rights):
            if k == k_best:
                Y = self._apply_left(Y)
            Y = _right_T(Y, b)
        if k_best == len(rights):
            Y = self._apply_left(Y)
        return Y

    def _apply_left(self, Y):
        for a in reversed(self.A_factors):
            Y = _left(a, Y)
        return Y

    def _matvec(self, v):
        q, s = _shape_of(self.A_factors)[1], _shape_of(self.B_factors)[1]
        return _flat(self.apply_matrix(v.reshape(q, s)), -1)

    def _matvecs(self, V):
        q, s = _shape_of(self.A_factors)[1], _shape_of(self.B_factors)[1]
        return _flat(self.apply_matrix(V.reshape(V.shape[0], q, s)), V.shape[0], -1)

    def _dense(self):
        return np.kron(self.A, self.B)


def _flat(Y: Any, *shape: int) -> Any:
    """``Y`` reshaped to ``shape`` (row-major; NumPy: through a contiguous copy when ``Y`` is a strided view)."""
    if is_numpy(Y):
        return np.ascontiguousarray(Y).reshape(*shape)
    return Y.reshape(*shape)


def _product(atoms: Tuple[_Atom, ...]) -> np.ndarray:
    out = _atom_dense(atoms[0])
    for a in atoms[1:]:
        out = out @ _atom_dense(a)
    return np.array(out, dtype=np.float64)


def _ops(name: str, ops: Iterable[Any]) -> Tuple[LinearOperator, ...]:
    if isinstance(ops, LinearOperator) or not isinstance(ops, Iterable):
        raise InvalidValueError(f"{name} must be a non-empty sequence of operators, got {type(ops).__name__}")
    out = tuple(_as_operator(f"{name}[{i}]", o) for i, o in enumerate(ops))
    if not out:
        raise InvalidValueError(f"{name} must be a non-empty sequence of operators, got an empty sequence")
    return out


class Sum(LinearOperator):
    r"""Sum :math:`\sum_k \mathrm{op}_k` of operators of one shape."""

    def __init__(self, ops: Iterable[LinearOperator]):
        if _TRUSTED.get():
            self.ops = tuple(ops)
            self.shape = self.ops[0].shape
            return
        self.ops = _ops("ops", ops)
        for i, o in enumerate(self.ops):
            if o.shape != self.ops[0].shape:
                raise ShapeError(f"ops[{i}] has shape {o.shape}, expected {self.ops[0].shape} like ops[0]")
        self.shape = self.ops[0].shape

    def _matvec(self, v):
        out = self.ops[0]._matvec(v)
        for o in self.ops[1:]:
            out = out + o._matvec(v)
        return out

    def _matvecs(self, V):
        out = self.ops[0]._matvecs(V)
        for o in self.ops[1:]:
            out = out + o._matvecs(V)
        return out

    def _dense(self):
        return sum(o._dense() for o in self.ops)


class KronSum(Sum):
    r"""Sum of Kronecker products :math:`\sum_h A_h \otimes B_h`.

    This is the shape of the multi-head attention operator
    :math:`W'_{HVO} = \sum_h H_h \otimes (W_{V,h} W_{O,h})^{\mathsf T}` (seed 001, Eq. 9).

    Parameters
    ----------
    terms : sequence of :class:`Kron` or of ``(A, B)`` pairs
    """

    def __init__(self, terms: Iterable[Any]):
        if isinstance(terms, LinearOperator) or not isinstance(terms, Iterable):
            raise InvalidValueError(f"terms must be a sequence of Kron or (A, B) pairs, got {type(terms).__name__}")
        ops = []
        for i, t in enumerate(terms):
            if isinstance(t, Kron):
                ops.append(t)
            elif isinstance(t, tuple) and len(t) == 2:
                ops.append(Kron(*t))
            else:
                raise InvalidValueError(f"terms[{i}] must be a Kron or an (A, B) pair, got {type(t).__name__}")
        super().__init__(ops)

    @property
    def terms(self) -> Tuple[Kron, ...]:
        return self.ops  # type: ignore[return-value]

    def _matvec(self, v):
        k0 = self.ops[0]
        q = _shape_of(k0.A_factors)[1]
        X = v.reshape(q, -1)
        out = k0.apply_matrix(X)
        for k in self.ops[1:]:
            out = out + k.apply_matrix(X)
        return _flat(out, -1)


class Compose(LinearOperator):
    r"""Product :math:`\mathrm{op}_0 \mathrm{op}_1 \cdots \mathrm{op}_{k-1}` (applied right to left)."""

    def __init__(self, ops: Iterable[LinearOperator]):
        if _TRUSTED.get():
            self.ops = tuple(ops)
            self.shape = (self.ops[0].shape[0], self.ops[-1].shape[1])
            return
        self.ops = _ops("ops", ops)
        for i in range(len(self.ops) - 1):
            if self.ops[i].shape[1] != self.ops[i + 1].shape[0]:
                raise ShapeError(
                    f"ops[{i}] has shape {self.ops[i].shape} and ops[{i + 1}] has shape "
                    f"{self.ops[i + 1].shape}; cannot compose (inner dimensions differ)"
                )
        self.shape = (self.ops[0].shape[0], self.ops[-1].shape[1])

    def _matvec(self, v):
        for o in reversed(self.ops):
            v = o._matvec(v)
        return v

    def _matvecs(self, V):
        for o in reversed(self.ops):
            V = o._matvecs(V)
        return V

    def _dense(self):
        out = self.ops[-1]._dense()
        for o in reversed(self.ops[:-1]):
            out = o._dense() @ out
        return out


class Scaled(LinearOperator):
    r"""Scalar multiple :math:`\alpha\,\mathrm{op}`."""

    def __init__(self, alpha: float, op: LinearOperator):
        self.alpha = check_real_number("alpha", alpha)
        self.op = _as_operator("op", op)
        self.shape = op.shape

    def _matvec(self, v):
        return self.alpha * self.op._matvec(v)

    def _matvecs(self, V):
        return self.alpha * self.op._matvecs(V)

    def _dense(self):
        return self.alpha * self.op._dense()
