(* Mutant of ext:symmetric-window.mask: the value bias dropped, as if the keys outside the symmetric window took it
   with them (only the output bias left),
     b' = 1_N (x) b_O                                         (for 1_N (x) (sum_h W_O,h^T b_V,h + b_O): H_h 1 = 1)
   expect: refuted symmetric_dropped_refuted
   The same claim refuted by the other levels (tests/test_coq.py):
   symuat-entry-mutant: ext:symmetric-window.mask | ext_local_global.dropped_value_bias_rhs *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import Kronecker MultiHead Block ExtAttention ExtMasks.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Variable R : comRingType.
Variables N M : nat.

(* symuat's symmetric_window_mask N w 0: query n sees key m iff |n - m| < w. *)
Definition symmetric_allowed (w : nat) (n m : 'I_N) : bool := ((n - m < w) && (m - n < w))%N.

Definition dropped_bias (b_O : 'rV[R]_M) : 'cV[R]_(N * M) := kron (const_mx 1 : 'cV[R]_N) b_O^T.     (* MUTATED *)

End Mutant.

(* One head, N = 2 tokens, window w = 2, M = d = 1, over the rationals: H = I (inside the window, rows summing to
   one), X = W_V = b_O = 0, b_V = W_O = 1.  Token 1 gets the value bias 1 through its own key; dropped, 0. *)
Theorem symmetric_dropped_refuted :
  ~ (forall (H : 'I_1 -> 'M[rat]_2) (W_V : 'M[rat]_(1, 1 * 1)) (b_V : 'rV[rat]_(1 * 1)) (W_O : 'M[rat]_(1 * 1, 1))
            (b_O : 'rV[rat]_1) (X : 'M[rat]_(2, 1)),
       (forall h, H h *m const_mx 1 = const_mx 1 :> 'cV[rat]_2) ->
       (forall h (n m : 'I_2), ~~ symmetric_allowed 2 n m -> H h n m = 0) ->
       vec_r (attention H W_V b_V W_O b_O X) = A_op H W_V W_O *m vec_r X + dropped_bias 2 b_O).
Proof.
have H1 : forall h : 'I_1, 1%:M *m const_mx 1 = const_mx 1 :> 'cV[rat]_2 by move=> h; rewrite mul1mx.
have Hs : forall (h : 'I_1) (n m : 'I_2), ~~ symmetric_allowed 2 n m -> (1%:M : 'M[rat]_2) n m = 0.
  by move=> h n m; rewrite mxE /symmetric_allowed; case: eqP => // ->; rewrite subnn.
move/(_ (fun=> 1%:M) 0 (const_mx 1) (const_mx 1) 0 0 H1 Hs).
rewrite (masked_attention_vec _ _ _ _ _ H1) => /addrI; rewrite /dropped_bias !big_ord1.
have kE m n (u : 'cV[rat]_m) (v : 'cV[rat]_n) i k : kron u v (mxvec_index i k) 0 = u i 0 * v k 0.
  by rewrite mxE unpairK /=; case: (unpair _) => a b; rewrite !ord1.
move/colP/(_ (mxvec_index (0 : 'I_2) (0 : 'I_1))); rewrite !kE /head_bias !mxE !big_ord1 !mxE /=.
by rewrite !(mul1r, mulr1, addr0) => /eqP; rewrite oner_eq0.
Qed.
