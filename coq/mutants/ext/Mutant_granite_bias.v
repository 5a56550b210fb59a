(* Mutant of ext:granite.eq20: the residual multiplier folded into the projection weights only, the attention's
   output bias left unscaled (b_O for r b_O in the box, so a -> a where the entry has a -> r a),
     b'_{i,3} = r A beta'_1 + a + r f_2,  b'_{i,2} = F_1 (L_2 (r A beta'_1 + a) + beta'_2) + f_1
   expect: refuted granite_bias_refuted
   The same claim refuted by the other levels (tests/test_coq.py):
   symuat-entry-mutant: ext:granite.eq20 | ext_granite.unfolded_bias_rhs *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import Kronecker MultiHead Block ExtGranite.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Load GraniteVariables.  (* coq/shared/GraniteVariables.v: the block's variables *)

Definition unfolded_box (X : 'M[R]_(N, M)) : 'cV[R]_(N * M) :=
  pre_W1 H W_V (r *: W_O) D1 G1 *m vec_r X
  + pre_b3 H W_V b_V (r *: W_O) b_O beta1 (r *: b_out)                                              (* MUTATED *)
  + pre_W3 N (r *: W_out) *m sigma_s s (pre_W2 H W_V (r *: W_O) D1 D2 G1 G2 W_in *m vec_r X
                                  + pre_b2 H W_V b_V (r *: W_O) b_O D2 G2 beta1 beta2 W_in b_in).  (* MUTATED *)

End Mutant.

(* Sizes 1, over the rationals, s the identity, r = 0 (the sublayers switched off): every weight 0 but b_O = 1.
   The block is the identity, X = 0 gives 0; the unscaled output bias gives 1. *)
Theorem granite_bias_refuted :
  ~ (forall (H : 'I_1 -> 'M[rat]_1) (W_V : 'M[rat]_(1, 1 * 1)) (b_V : 'rV[rat]_(1 * 1)) (W_O : 'M[rat]_(1 * 1, 1))
            (b_O : 'rV[rat]_1) (D1 D2 G1 G2 : 'M[rat]_1) (beta1 beta2 : 'rV[rat]_1) (W_in : 'M[rat]_1)
            (b_in : 'rV[rat]_1) (W_out : 'M[rat]_1) (b_out : 'rV[rat]_1) (r : rat) (X : 'M[rat]_1),
       vec_r (granite_block id H W_V b_V W_O b_O D1 D2 G1 G2 beta1 beta2 W_in b_in W_out b_out r X)
       = unfolded_box id H W_V b_V W_O b_O D1 D2 G1 G2 beta1 beta2 W_in b_in W_out b_out r X).
Proof.
move/(_ (fun=> 0) 0 0 0 (const_mx 1) 0 0 0 0 0 0 0 0 0 0 0 0).
rewrite /granite_block /unfolded_box !scale0r !addr0.
have v0 m n : vec_r (0 : 'M[rat]_(m, n)) = 0 by rewrite /vec_r linear0 trmx0.
have W30 : pre_W3 1 (0 : 'M[rat]_1) = 0 by apply/matrixP=> i j; rewrite !mxE mulr0.
have k0 m n p q (B : 'M[rat]_(p, q)) : kron (0 : 'M[rat]_(m, n)) B = 0 by apply/matrixP=> i j; rewrite !mxE mul0r.
rewrite v0 mulmx0 add0r W30 mul0mx addr0 /pre_b3 /pre_p /a /A /f2 /a_vec /A_op.
rewrite big_ord1 k0 mul0mx add0r mulmx0 add0r /rows mulmx0 v0 addr0.
by move/colP/(_ (mxvec_index 0 0)); rewrite vec_rE !mxE big_ord1 !mxE mul1r => /eqP; rewrite eq_sym oner_eq0.
Qed.
