(* The Diamond product of the UAT papers (seed 004 Eq. 4) for every size: (W <> x)_i = sum_k w_ki x_k. *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype bigop ssralg matrix zmodp.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Diamond.

Variable R : comRingType.

Definition diamond m n (W : 'M[R]_(m, n)) (x : 'cV[R]_m) : 'cV[R]_n := \col_i \sum_(k < m) W k i * x k 0.

(* The Diamond/transpose relation: W <> x = W^T x. *)
Theorem diamond_tr m n (W : 'M[R]_(m, n)) x : diamond W x = W^T *m x.
Proof. by apply/colP=> i; rewrite !mxE; apply: eq_bigr => k _; rewrite mxE. Qed.

(* A right-associated chain: W1 <> (W2 <> x) = (W2 W1) <> x. *)
Theorem diamond_chain m n p (W2 : 'M[R]_(m, n)) (W1 : 'M[R]_(n, p)) x :
  diamond W1 (diamond W2 x) = diamond (W2 *m W1) x.
Proof. by rewrite !diamond_tr trmx_mul mulmxA. Qed.

(* The Diamond product is distributive in both arguments (the paper denies it). *)
Theorem diamond_addl m n (W V : 'M[R]_(m, n)) x : diamond (W + V) x = diamond W x + diamond V x.
Proof. by rewrite !diamond_tr linearD /= mulmxDl. Qed.

Theorem diamond_addr m n (W : 'M[R]_(m, n)) x y : diamond W (x + y) = diamond W x + diamond W y.
Proof. by rewrite !diamond_tr mulmxDr. Qed.

(* The Diamond product is distributive (both sides): the negation of the papers' denial. *)
Theorem diamond_distributive m n :
  (forall (W V : 'M[R]_(m, n)) x, diamond (W + V) x = diamond W x + diamond V x) /\
  (forall (W : 'M[R]_(m, n)) x y, diamond W (x + y) = diamond W x + diamond W y).
Proof. by split=> *; [exact: diamond_addl | exact: diamond_addr]. Qed.

End Diamond.
