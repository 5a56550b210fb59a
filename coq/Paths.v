(* The path expansion of an attention-only residual stack (symuat.expansion.paths; duat:eq10.part1-3, duat:eq11.claim1),
   for every depth and every size.

   Layer l has nH heads with given N x N attention matrices H l h and M x M matrices W l h = W_OV,h^(l) =
   (W_V,h W_O,h)^T, no value or output biases: X_l = X_{l-1} + sum_h H l h X_{l-1} (W l h)^T.  A path is a set of
   layers l_1 < ... < l_k with one head each; its term is (H^(l_k) ... H^(l_1)) (x) (W^(l_k) ... W^(l_1)).  paths L
   lists them: the paths of depth L - 1, then each of them extended by a head of layer L (on the left).
   eq10_heads: one layer without its residual is the sum over the paths of length 1 (Eq. 10's closed form);
   stack_paths: x'_L = (sum over paths L of A_p (x) B_p) x'_0 for every L (the (1 + nH)^L virtual heads);
   A_tilde_paths (duat:eq11.claim1): the DUAT table's A~_L (DUAT.A_tilde) with W'_{l,1} = F_l = I + sum_h H l h (x)
   W l h is that sum. *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype bigop ssralg matrix.
From Symuat Require Import Kronecker DUAT.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Paths.

Variable R : comRingType.
Variables N M nH : nat.
Variable H : nat -> 'I_nH -> 'M[R]_N.
Variable W : nat -> 'I_nH -> 'M[R]_M.
Variable X0 : 'M[R]_(N, M).

Lemma mxvec_index_eq m n (i j : 'I_m) (k l : 'I_n) :
  (mxvec_index i k == mxvec_index j l) = (i == j) && (k == l).
Proof.
apply/eqP/andP => [e | [/eqP-> /eqP->]] //.
by move: (congr1 (@unpair m n) e); rewrite !unpairK => -[-> ->].
Qed.

Lemma kron11 : kron (1%:M : 'M[R]_N) (1%:M : 'M[R]_M) = 1%:M.
Proof.
apply/matrixP=> r c; case/mxvec_indexP: r => i k; case/mxvec_indexP: c => j l.
rewrite kronE !mxE mxvec_index_eq.
by case: (i == j); case: (k == l); rewrite ?mulr1n ?mulr0n ?mulr1 ?mulr0.
Qed.

(* duat:eq10.part1: vec_r(sum_h H_h X W_V,h W_O,h) = (sum_h H_h (x) (W_V,h W_O,h)^T) x', heads with their own
   M x M value and output matrices: Eq. 10's closed form is the sum over the paths of length 1. *)
Theorem eq10_heads (Hh : 'I_nH -> 'M[R]_N) (V O : 'I_nH -> 'M[R]_M) (X : 'M[R]_(N, M)) :
  vec_r (\sum_(h < nH) Hh h *m X *m V h *m O h) = (\sum_(h < nH) kron (Hh h) (V h *m O h)^T) *m vec_r X.
Proof. by rewrite vec_r_sum mulmx_suml; apply: eq_bigr => h _; rewrite -mulmxA vec_r_mul. Qed.

(* Layer l of the stack, the same with W_OV,h = (W_V,h W_O,h)^T given. *)
Theorem eq10_paths1 l (X : 'M[R]_(N, M)) :
  vec_r (\sum_(h < nH) H l h *m X *m (W l h)^T) = (\sum_(h < nH) kron (H l h) (W l h)) *m vec_r X.
Proof. by rewrite vec_r_sum mulmx_suml; apply: eq_bigr => h _; rewrite vec_r_mul trmxK. Qed.

(* X_L = X_{L-1} + sum_h H L h X_{L-1} (W L h)^T, X_0 = X0. *)
Fixpoint stack L : 'M[R]_(N, M) :=
  if L is l.+1 then stack l + \sum_(h < nH) H L h *m stack l *m (W L h)^T else X0.

Fixpoint paths L : seq ('M[R]_N * 'M[R]_M) :=
  if L is l.+1 then paths l ++ [seq (H L h *m p.1, W L h *m p.2) | p <- paths l, h <- index_enum (ordinal_finType nH)]
  else [:: (1%:M, 1%:M)].

Lemma size_paths L : size (paths L) = ((1 + nH) ^ L)%N.
Proof.
elim: L => [|l IH] //=; rewrite size_cat size_allpairs IH.
by rewrite [index_enum _]unlock -enumT -cardT card_ord expnS mulnDl mul1n [(nH * _)%N]mulnC.
Qed.

(* duat:eq10.part2 at every depth: x'_L = (sum over the paths of A_p (x) B_p) x'_0. *)
Theorem stack_paths L : vec_r (stack L) = (\sum_(p <- paths L) kron p.1 p.2) *m vec_r X0.
Proof.
elim: L => [|l IH] /=; first by rewrite big_seq1 /= kron11 mul1mx.
have vD (A B : 'M[R]_(N, M)) : vec_r (A + B) = vec_r A + vec_r B by rewrite /vec_r !linearD.
rewrite vD eq10_paths1 IH big_cat /= mulmxDl mulmxA; congr (_ + _ *m _).
rewrite big_allpairs_dep /= mulmx_suml exchange_big /=; apply: eq_bigr => p _.
by rewrite mulmx_sumr; apply: eq_bigr => h _; rewrite kron_mul.
Qed.

(* duat:eq11.claim1: the DUAT linear term A~_L of the table (DUAT.A_tilde) with W'_{l,1} = F_l = I + sum_h H l h (x)
   W l h, the layer of the attention-only stack, is the sum over the paths, for every depth. *)
Definition F_layer l : 'M[R]_(N * M) := 1%:M + \sum_(h < nH) kron (H l h) (W l h).

Theorem A_tilde_paths L : A_tilde F_layer L = \sum_(p <- paths L) kron p.1 p.2.
Proof.
elim: L => [|l IH] /=; first by rewrite big_seq1 /= kron11.
rewrite IH big_cat /= /F_layer mulmxDl mul1mx; congr (_ + _).
rewrite big_allpairs_dep /= mulmx_suml exchange_big /=; apply: eq_bigr => p _.
by rewrite mulmx_sumr; apply: eq_bigr => h _; rewrite kron_mul.
Qed.

End Paths.
