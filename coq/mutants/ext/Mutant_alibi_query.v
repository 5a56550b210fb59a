(* Mutant of ext:alibi.closed-form: the bias on the query positions,
     H_h = masked weights of S_h + m_h p 1^T      (1 p^T transposed: a constant per row, which the softmax drops)
   expect: refuted alibi_query_refuted
   The same claim refuted by the other levels (tests/test_coq.py):
   symuat-entry-mutant: ext:alibi.closed-form | ext_attention_variants.alibi_query_rhs *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import Kronecker MultiHead Alibi.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Variable R : comRingType.
Variables N p : nat.

Definition query_bias (sl : R) : 'M[R]_N := \matrix_(n, m) (sl * (n - p)%:R).                           (* MUTATED *)

End Mutant.

(* One head, N = 2 tokens without padding, M = d = 1, over the rationals: e = identity, slope 1, scores 0, z = 1,
   X = W_V = W_O = 1.  Token 2 attends keys 1 and 2 with the biases 0 and 1 (sum 1); the query bias gives 1 and 1. *)
Theorem alibi_query_refuted :
  ~ (forall (e : rat -> rat) (sl : 'I_1 -> rat) (S : 'I_1 -> 'M[rat]_2) (z : 'I_1 -> 'cV[rat]_2)
            (X : 'M[rat]_(2, 1)) (W_V : 'M[rat]_(1, 1 * 1)) (W_O : 'M[rat]_(1 * 1, 1)),
       vec_r (\sum_(h < 1) bloom_weights 0 e (sl h) (S h) (z h) *m X *m head_cols W_V h *m head_rows W_O h)
       = (\sum_(h < 1) kron (masked_weights e (S h + query_bias 2 0 (sl h)) (window_allowed 0 2) (z h))
                            (head_cols W_V h *m head_rows W_O h)^T) *m vec_r X).
Proof.
move/(_ id (fun=> 1) (fun=> 0) (fun=> const_mx 1) (const_mx 1) (const_mx 1) (const_mx 1)).
rewrite alibi_closed_form !big_ord1 -!vec_r_mul => /colP/(_ (mxvec_index (@ord_max 1) (0 : 'I_1))).
rewrite !vec_rE !mxE !big_ord_recr !big_ord0 /= !mxE /= !add0r !big_ord_recr !big_ord0 /= !mxE /= !add0r.
by rewrite subn0 !mulr1 => /esym/eqP; rewrite -subr_eq0 addrK oner_eq0.
Qed.
