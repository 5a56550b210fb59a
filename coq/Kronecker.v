(* Row-major vectorisation and Kronecker products of matrices of every size (symuat, all-sizes level).

   vec_r X is MathComp's mxvec X turned into a column: its entry at mxvec_index i j is X i j, and
   mxvec_index_row_major proves that this position is i * n + j, so vec_r is symuat's row-major
   vectorisation (x_11, ..., x_1n, x_21, ...).  kron A B has entry A i j * B k l at row
   mxvec_index i k = i * p + k and column mxvec_index j l = j * q + l: symuat.algebra.matrices.kron.
   MathComp's own tensmx (mxrepresentation) is not used, so no index order is taken on trust. *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype bigop ssralg matrix zmodp.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

(* Row-major order of MathComp's pair enumeration. *)
Lemma index_allpairs (T1 T2 : eqType) (s1 : seq T1) (s2 : seq T2) x1 x2 :
  x1 \in s1 -> x2 \in s2 ->
  index (x1, x2) [seq (a, b) | a <- s1, b <- s2] = (index x1 s1 * size s2 + index x2 s2)%N.
Proof.
elim: s1 => //= a s1 IH; rewrite inE => in1 in2.
have [<-|ne] := eqVneq x1 a.
  rewrite index_cat (map_f (pair x1)) // mul0n add0n index_map //.
  by move=> y z [].
have notin : (x1, x2) \notin [seq (a, b) | b <- s2].
  by apply/mapP=> [[b _ [eq1 _]]]; move: ne; rewrite eq1 eqxx.
rewrite index_cat (negbTE notin) IH //; last by move: in1; rewrite (negbTE ne).
by rewrite size_map mulSn addnA.
Qed.

Lemma mxvec_index_row_major m n (i : 'I_m) (j : 'I_n) : (mxvec_index i j : nat) = (i * n + j)%N.
Proof.
rewrite /mxvec_index /= /enum_rank /enum_rank_in /= insubdK; last first.
  by rewrite -topredE /= cardE index_mem mem_enum.
rewrite enumT unlock /= /prod_enum index_allpairs ?mem_enum //.
by rewrite size_enum_ord !index_enum_ord.
Qed.

Section Kronecker.

Variable R : comRingType.

(* The pair (i, j) of a row-major index k = mxvec_index i j. *)
Definition unpair m n (k : 'I_(m * n)) : 'I_m * 'I_n := enum_val (cast_ord (esym (mxvec_cast m n)) k).

Lemma unpairK m n (i : 'I_m) (j : 'I_n) : unpair (mxvec_index i j) = (i, j).
Proof. by rewrite /unpair /mxvec_index cast_ordK enum_rankK. Qed.

Definition vec_r m n (X : 'M[R]_(m, n)) : 'cV[R]_(m * n) := (mxvec X)^T.

Lemma vec_rE m n (X : 'M[R]_(m, n)) i j : vec_r X (mxvec_index i j) 0 = X i j.
Proof. by rewrite mxE mxvecE. Qed.

Definition kron m1 n1 m2 n2 (A : 'M[R]_(m1, n1)) (B : 'M[R]_(m2, n2)) : 'M[R]_(m1 * m2, n1 * n2) :=
  \matrix_(r, c) (A (unpair r).1 (unpair c).1 * B (unpair r).2 (unpair c).2).

Lemma kronE m1 n1 m2 n2 (A : 'M[R]_(m1, n1)) (B : 'M[R]_(m2, n2)) i j k l :
  kron A B (mxvec_index i k) (mxvec_index j l) = A i j * B k l.
Proof. by rewrite mxE !unpairK. Qed.

(* A sum over the row-major indices of 'I_(m * n) is a double sum over 'I_m and 'I_n. *)
Lemma sum_pairs m n (F : 'I_(m * n) -> R) :
  \sum_(k < m * n) F k = \sum_(i < m) \sum_(j < n) F (mxvec_index i j).
Proof.
rewrite pair_bigA /= (reindex (fun p : 'I_m * 'I_n => mxvec_index p.1 p.2)) //=.
exists (@unpair m n) => [[i j] _ | k _] /=; first by rewrite unpairK.
by case/mxvec_indexP: k => i j; rewrite unpairK.
Qed.

(* vec_r(A X B) = (A (x) B^T) vec_r(X), row-major. *)
Theorem vec_r_mul m n p q (A : 'M[R]_(p, m)) (X : 'M[R]_(m, n)) (B : 'M[R]_(n, q)) :
  vec_r (A *m X *m B) = kron A B^T *m vec_r X.
Proof.
apply/colP=> r; case/mxvec_indexP: r => i j.
rewrite vec_rE !mxE sum_pairs.
under eq_bigr do rewrite mxE big_distrl /=.
rewrite exchange_big /=; apply: eq_bigr => k _; apply: eq_bigr => l _.
by rewrite kronE vec_rE !mxE mulrAC.
Qed.

(* The mixed-product rule. *)
Theorem kron_mul m1 n1 p1 m2 n2 p2 (A : 'M[R]_(m1, n1)) (B : 'M[R]_(m2, n2))
    (C : 'M[R]_(n1, p1)) (D : 'M[R]_(n2, p2)) :
  kron A B *m kron C D = kron (A *m C) (B *m D).
Proof.
apply/matrixP=> r c; case/mxvec_indexP: r => i k; case/mxvec_indexP: c => j l.
rewrite kronE !mxE sum_pairs big_distrl /=; apply: eq_bigr => a _.
rewrite big_distrr /=; apply: eq_bigr => b _.
by rewrite !kronE mulrACA.
Qed.

(* (A (x) B)^T = A^T (x) B^T. *)
Theorem kron_tr m1 n1 m2 n2 (A : 'M[R]_(m1, n1)) (B : 'M[R]_(m2, n2)) : (kron A B)^T = kron A^T B^T.
Proof.
apply/matrixP=> r c; case/mxvec_indexP: r => i k; case/mxvec_indexP: c => j l.
by rewrite mxE !kronE !mxE.
Qed.

(* Token-wise Linear layer Y = X W on x' = vec_r X: (I_N (x) W^T) x' (feature mixing). *)
Corollary vec_r_mulr m n q (X : 'M[R]_(m, n)) (W : 'M[R]_(n, q)) : vec_r (X *m W) = kron 1%:M W^T *m vec_r X.
Proof. by rewrite -vec_r_mul mul1mx. Qed.

(* Token mixing Y = A X on x' = vec_r X: (A (x) I_M) x'. *)
Corollary vec_r_mull m n p (A : 'M[R]_(p, m)) (X : 'M[R]_(m, n)) : vec_r (A *m X) = kron A 1%:M *m vec_r X.
Proof. by rewrite -[A *m X]mulmx1 vec_r_mul trmx1. Qed.

Lemma vec_r_sum m n I (r : seq I) (P : pred I) (F : I -> 'M[R]_(m, n)) :
  vec_r (\sum_(h <- r | P h) F h) = \sum_(h <- r | P h) vec_r (F h).
Proof. by rewrite /vec_r linear_sum /= raddf_sum. Qed.

End Kronecker.
