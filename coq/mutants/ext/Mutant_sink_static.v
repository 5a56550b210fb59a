(* Mutant of ext:attention-sink.mv-form: the paper's static value bias kept with sinks,
     b' = 1_N (x) (sum_h W_O,h^T b_V,h + b_O)                  (the sinks' share - sum_h pi_h (x) W_O,h^T b_V,h dropped)
   expect: refuted sink_static_refuted 
   The same claim refuted by the other levels (tests/test_coq.py):
   symuat-entry-mutant: ext:attention-sink.mv-form | ext_attention_sinks.static_bias_rhs *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import Kronecker MultiHead Block ExtAttention.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Variable R : comRingType.
Variables N M d nH : nat.

Definition static_bias (b_V : 'rV[R]_(nH * d)) (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M) : 'cV[R]_(N * M) :=
  kron (const_mx 1 : 'cV[R]_N) (\sum_(h < nH) head_bias b_V W_O h + b_O^T).                            (* MUTATED *)

End Mutant.

(* One head, sizes 1, over the rationals: H = 0 (the sink takes all the mass, pi = 1), b_V = W_O = 1: the value
   bias never reaches the output, the static bias says it does. *)
Theorem sink_static_refuted :
  ~ (forall (H : 'I_1 -> 'M[rat]_1) (pi : 'I_1 -> 'cV[rat]_1) (W_V : 'M[rat]_(1, 1 * 1)) (b_V : 'rV[rat]_(1 * 1))
            (W_O : 'M[rat]_(1 * 1, 1)) (b_O : 'rV[rat]_1) (X : 'M[rat]_1),
       (forall h, H h *m const_mx 1 = const_mx 1 - pi h) ->
       vec_r (attention H W_V b_V W_O b_O X) = A_op H W_V W_O *m vec_r X + static_bias 1 b_V W_O b_O).
Proof.
have H0 : forall h : 'I_1, (0 : 'M[rat]_1) *m const_mx 1 = const_mx 1 - const_mx 1 :> 'cV[rat]_1 by move=> h; rewrite mul0mx subrr.
move/(_ (fun=> 0) (fun=> const_mx 1) 0 (const_mx 1) (const_mx 1) 0 0 H0).
rewrite (sink_attention_vec _ _ _ _ _ H0) => /addrI; rewrite /sink_bias /static_bias.
move/eqP; rewrite -subr_eq0 addrAC subrr add0r oppr_eq0 big_ord1 => /eqP.
by move/matrixP/(_ 0 0)/eqP; rewrite !mxE big_ord1 !mxE !mul1r oner_eq0.
Qed.
