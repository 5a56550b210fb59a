(* Mutant of ext:mask.static-value-bias: the value bias counted once per visible key, the causal mask's 0/1 pattern
   C (C_nm = [m <= n]) read as the weights of the bias,
     b' = sum_h (C 1_N) (x) W_O,h^T b_V,h + 1_N (x) b_O        (for 1_N (x) (sum_h W_O,h^T b_V,h + b_O): H_h 1 = 1)
   expect: refuted mask_counts_refuted
   The same claim refuted by the other levels (tests/test_coq.py):
   symuat-entry-mutant: ext:mask.static-value-bias | ext_attention.mask_counts_rhs *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import Kronecker MultiHead Block ExtAttention ExtMasks.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Variable R : comRingType.
Variables N M d nH : nat.

Definition causal : 'M[R]_N := \matrix_(n, m) (m <= n)%:R.

Definition count_bias (b_V : 'rV[R]_(nH * d)) (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M) : 'cV[R]_(N * M) :=
  \sum_(h < nH) kron (causal *m (const_mx 1 : 'cV[R]_N)) (head_bias b_V W_O h) + kron (const_mx 1 : 'cV[R]_N) b_O^T. (* MUTATED *)

End Mutant.

(* One head, N = 2 tokens, M = d = 1, over the rationals: H = I (causal, rows summing to one), X = W_V = b_O = 0,
   b_V = W_O = 1.  Token 2 gets the value bias once (its weights sum to 1); counted per visible key, twice. *)
Theorem mask_counts_refuted :
  ~ (forall (H : 'I_1 -> 'M[rat]_2) (W_V : 'M[rat]_(1, 1 * 1)) (b_V : 'rV[rat]_(1 * 1)) (W_O : 'M[rat]_(1 * 1, 1))
            (b_O : 'rV[rat]_1) (X : 'M[rat]_(2, 1)),
       (forall h, H h *m const_mx 1 = const_mx 1 :> 'cV[rat]_2) -> (forall h (n m : 'I_2), (n < m)%N -> H h n m = 0) ->
       vec_r (attention H W_V b_V W_O b_O X) = A_op H W_V W_O *m vec_r X + count_bias 2 b_V W_O b_O).
Proof.
have H1 : forall h : 'I_1, 1%:M *m const_mx 1 = const_mx 1 :> 'cV[rat]_2 by move=> h; rewrite mul1mx.
have Hc : forall (h : 'I_1) (n m : 'I_2), (n < m)%N -> (1%:M : 'M[rat]_2) n m = 0.
  by move=> h n m; rewrite mxE; case: eqP => // ->; rewrite ltnn.
move/(_ (fun=> 1%:M) 0 (const_mx 1) (const_mx 1) 0 0 H1 Hc).
rewrite (masked_attention_vec _ _ _ _ _ H1) => /addrI; rewrite /count_bias !big_ord1.
have kE m n (u : 'cV[rat]_m) (v : 'cV[rat]_n) i k : kron u v (mxvec_index i k) 0 = u i 0 * v k 0.
  by rewrite mxE unpairK /=; case: (unpair _) => a b; rewrite !ord1.
move/colP/(_ (mxvec_index (1 : 'I_2) (0 : 'I_1))); rewrite kE [RHS]mxE !kE.
rewrite /head_bias !mxE !big_ord_recr !big_ord0 /= !mxE /=.
by rewrite !(mul1r, mulr1, add0r, addr0) => /esym/eqP; rewrite -subr_eq0 addrK oner_eq0.
Qed.
