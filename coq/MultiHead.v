(* The closed form of multi-head attention on x' = vec_r X, for every size (symuat, seed 001 Eq. 9-10).

   Head h uses the columns h*d .. h*d+d-1 of W_V and the same rows of W_O (mxvec_index h j = h * d + j,
   Kronecker.mxvec_index_row_major), the attention matrices H_h are parameters:
     vec_r (Concat_h (H_h X W_V,h) W_O) = (sum_h H_h (x) (W_V,h W_O,h)^T) vec_r X. *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype bigop ssralg matrix.
From Symuat Require Import Kronecker.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section MultiHead.

Variable R : comRingType.
Variables N M d P nH : nat.

(* W_V,h: the columns of head h. *)
Definition head_cols (W : 'M[R]_(M, nH * d)) (h : 'I_nH) : 'M[R]_(M, d) :=
  \matrix_(i, j) W i (mxvec_index h j).

(* W_O,h: the rows of head h. *)
Definition head_rows (W : 'M[R]_(nH * d, P)) (h : 'I_nH) : 'M[R]_(d, P) :=
  \matrix_(j, c) W (mxvec_index h j) c.

(* Concat(F_1, ..., F_H): head h fills the columns h*d .. h*d+d-1. *)
Definition concat (F : 'I_nH -> 'M[R]_(N, d)) : 'M[R]_(N, nH * d) :=
  \matrix_(i, c) F (unpair c).1 i (unpair c).2.

Definition mha (H : 'I_nH -> 'M[R]_N) (X : 'M[R]_(N, M)) W_V W_O : 'M[R]_(N, P) :=
  concat (fun h => H h *m X *m head_cols W_V h) *m W_O.

(* Eq. 7: the concatenated heads times W_O is the sum of the per-head products. *)
Theorem mha_sum H X W_V W_O :
  mha H X W_V W_O = \sum_(h < nH) H h *m X *m head_cols W_V h *m head_rows W_O h.
Proof.
apply/matrixP=> i c; rewrite !mxE summxE sum_pairs; apply: eq_bigr => h _.
rewrite !mxE; apply: eq_bigr => j _.
by rewrite !mxE unpairK.
Qed.

(* Eq. 9-10: the closed form W'_HVO = sum_h H_h (x) (W_V,h W_O,h)^T. *)
Theorem mha_closed_form H X W_V W_O :
  vec_r (mha H X W_V W_O) = (\sum_(h < nH) kron (H h) (head_cols W_V h *m head_rows W_O h)^T) *m vec_r X.
Proof.
rewrite mha_sum vec_r_sum mulmx_suml; apply: eq_bigr => h _.
by rewrite -mulmxA vec_r_mul.
Qed.

End MultiHead.
