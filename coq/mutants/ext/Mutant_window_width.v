(* Mutant of ext:sliding-window.mask: the value bias counted once per key of a full window, w times,
     b' = 1_N (x) (w sum_h W_O,h^T b_V,h + b_O)               (for 1_N (x) (sum_h W_O,h^T b_V,h + b_O): H_h 1 = 1)
   expect: refuted window_width_refuted
   The same claim refuted by the other levels (tests/test_coq.py):
   symuat-entry-mutant: ext:sliding-window.mask | ext_attention_variants.window_width_rhs *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import Kronecker MultiHead Block ExtAttention ExtMasks Alibi.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Variable R : comRingType.
Variables N M d nH : nat.

Definition width_bias (w : nat) (b_V : 'rV[R]_(nH * d)) (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M)
    : 'cV[R]_(N * M) :=
  kron (const_mx 1 : 'cV[R]_N) (w%:R *: \sum_(h < nH) head_bias b_V W_O h + b_O^T).                   (* MUTATED *)

End Mutant.

(* One head, N = 2 tokens, window w = 2 without padding, M = d = 1, over the rationals: H = I (inside the window,
   rows summing to one), X = W_V = b_O = 0, b_V = W_O = 1.  Token 1 has one key in its window and gets the value
   bias once; w times says twice. *)
Theorem window_width_refuted :
  ~ (forall (H : 'I_1 -> 'M[rat]_2) (W_V : 'M[rat]_(1, 1 * 1)) (b_V : 'rV[rat]_(1 * 1)) (W_O : 'M[rat]_(1 * 1, 1))
            (b_O : 'rV[rat]_1) (X : 'M[rat]_(2, 1)),
       (forall h, H h *m const_mx 1 = const_mx 1 :> 'cV[rat]_2) ->
       (forall h (n m : 'I_2), ~~ window_allowed 0 2 n m -> H h n m = 0) ->
       vec_r (attention H W_V b_V W_O b_O X) = A_op H W_V W_O *m vec_r X + width_bias 2 2 b_V W_O b_O).
Proof.
have H1 : forall h : 'I_1, 1%:M *m const_mx 1 = const_mx 1 :> 'cV[rat]_2 by move=> h; rewrite mul1mx.
have Hw : forall (h : 'I_1) (n m : 'I_2), ~~ window_allowed 0 2 n m -> (1%:M : 'M[rat]_2) n m = 0.
  by move=> h n m; rewrite mxE /window_allowed /=; case: eqP => // ->; rewrite leqnn subnn.
move/(_ (fun=> 1%:M) 0 (const_mx 1) (const_mx 1) 0 0 H1 Hw).
rewrite (masked_attention_vec _ _ _ _ _ H1) => /addrI; rewrite /width_bias !big_ord1.
have kE m n (u : 'cV[rat]_m) (v : 'cV[rat]_n) i k : kron u v (mxvec_index i k) 0 = u i 0 * v k 0.
  by rewrite mxE unpairK /=; case: (unpair _) => a b; rewrite !ord1.
move/colP/(_ (mxvec_index (0 : 'I_2) (0 : 'I_1))); rewrite !kE /head_bias !mxE !big_ord1 !mxE /=.
by rewrite !(mul1r, mulr1, addr0) => /eqP; rewrite -[X in X == _]/(1%:R) Num.Theory.eqr_nat.
Qed.
