(* Figure 3 (seed 001): the matrix W' = W (x) I_M of a token-mixing Linear layer has density 1/M, for every N and M
   (duat:fig3).  nnz counts the non-zero entries; over an integral domain nnz (A (x) B) = nnz A * nnz B, and
   nnz I_M = M, so a W with every entry non-zero gives nnz W' = N^2 M of (NM)^2 entries. *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype bigop ssralg ssrnum rat matrix.
From Symuat Require Import Kronecker.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

(* A sum over the row-major indices of 'I_(m * n), in nat. *)
Lemma sum_pairs_nat m n (F : 'I_(m * n) -> nat) :
  (\sum_(k < m * n) F k = \sum_(i < m) \sum_(j < n) F (mxvec_index i j))%N.
Proof.
rewrite pair_bigA /= (reindex (fun p : 'I_m * 'I_n => mxvec_index p.1 p.2)) //=.
exists (@unpair m n) => [[i j] _ | k _] /=; first by rewrite unpairK.
by case/mxvec_indexP: k => i j; rewrite unpairK.
Qed.

Section Density.

Variable R : idomainType.

(* The number of non-zero entries. *)
Definition nnz m n (A : 'M[R]_(m, n)) : nat := (\sum_(i < m) \sum_(j < n) (A i j != 0%R))%N.

Lemma nnz_kron m1 n1 m2 n2 (A : 'M[R]_(m1, n1)) (B : 'M[R]_(m2, n2)) : nnz (kron A B) = (nnz A * nnz B)%N.
Proof.
rewrite /nnz sum_pairs_nat big_distrl /=; apply: eq_bigr => i _.
under eq_bigr => k _ do rewrite sum_pairs_nat.
under eq_bigr => k _ do under eq_bigr => j _ do under eq_bigr => l _ do rewrite kronE mulf_eq0 negb_or -mulnb.
rewrite big_distrl exchange_big /=; apply: eq_bigr => j _.
rewrite big_distrr /=; apply: eq_bigr => k _.
by rewrite big_distrr.
Qed.

Lemma nnz_1 n : nnz (1%:M : 'M[R]_n) = n.
Proof.
rewrite /nnz -[RHS]card_ord -sum1_card; apply: eq_bigr => i _.
rewrite (bigD1 i) //= big1 => [|j ji]; first by rewrite !mxE eqxx oner_neq0 addn0.
by rewrite !mxE [i == j]eq_sym (negbTE ji) mulr0n eqxx.
Qed.

Lemma nnz_full m n (A : 'M[R]_(m, n)) : (forall i j, A i j != 0) -> nnz A = (m * n)%N.
Proof.
move=> A0; rewrite /nnz (eq_bigr (fun=> n)) => [|i _]; first by rewrite big_const_ord iter_addn_0 mulnC.
by rewrite (eq_bigr (fun=> 1%N)) => [|j _]; [rewrite big_const_ord iter_addn_0 mul1n | rewrite A0].
Qed.

(* Figure 3: W' = W (x) I_M of an N x N matrix W with no zero entry has N^2 M non-zero entries of (NM)^2, the density
   1/M (N, M > 0). *)
Theorem fig3_count (N M : nat) (W : 'M[R]_N) :
  (forall i j, W i j != 0) -> nnz (kron W (1%:M : 'M[R]_M)) = (N * N * M)%N.
Proof. by move=> W0; rewrite nnz_kron nnz_1 nnz_full. Qed.

Theorem fig3_density (N M : nat) (W : 'M[R]_N) : (0 < N)%N -> (0 < M)%N -> (forall i j, W i j != 0) ->
  (nnz (kron W (1%:M : 'M[R]_M)))%:R / ((N * M) * (N * M))%:R = (M%:R)^-1 :> rat.
Proof.
move=> N0 M0 W0; rewrite fig3_count // (_ : (N * M * (N * M) = N * N * M * M)%N); last first.
  by rewrite mulnA [(N * M * N)%N]mulnAC.
rewrite [in X in _ / X]natrM invfM mulrA mulfV ?mul1r // Num.Theory.pnatr_eq0 -lt0n.
by rewrite !muln_gt0 N0 M0.
Qed.

End Density.
