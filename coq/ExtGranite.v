(* Beyond the paper: the Granite residual multiplier r folded into the pre-LN box (ext:granite.eq20; docs/coq.md).

   Granite's block is Y = X + r MHA(N_1 X), X_out = Y + r FFN(N_2 Y).  Since r (C W_O + 1 b_O) = C (r W_O) + 1 (r b_O),
   it is Block.pre_ln_block with W_O, b_O, W_out, b_out scaled by r (granite_fold), hence the Eq. 20 box of
   Block.pre_ln_eq20 with those folded parameters (granite_eq20), and a Granite Transformer is a pre-LN one. *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype ssralg matrix.
From Symuat Require Import Kronecker MultiHead Block.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Granite.

Load GraniteVariables.  (* coq/shared/GraniteVariables.v: the block's variables *)

Lemma attention_scale (X : 'M[R]_(N, M)) :
  r *: attention H W_V b_V W_O b_O X = attention H W_V b_V (r *: W_O) (r *: b_O) X.
Proof. by rewrite /attention /rows scalerDr !scalemxAr. Qed.

Lemma ffn_scale (Y : 'M[R]_(N, M)) :
  r *: ffn s W_in b_in W_out b_out Y = ffn s W_in b_in (r *: W_out) (r *: b_out) Y.
Proof. by rewrite /ffn /rows scalerDr !scalemxAr. Qed.

Definition granite_block (X : 'M[R]_(N, M)) : 'M[R]_(N, M) :=
  let Y := X + r *: attention H W_V b_V W_O b_O (affine_norm D1 G1 beta1 X) in
  Y + r *: ffn s W_in b_in W_out b_out (affine_norm D2 G2 beta2 Y).

Theorem granite_fold (X : 'M[R]_(N, M)) :
  granite_block X
  = pre_ln_block s H W_V b_V (r *: W_O) (r *: b_O) D1 D2 G1 G2 beta1 beta2 W_in b_in (r *: W_out) (r *: b_out) X.
Proof. by rewrite /granite_block /pre_ln_block attention_scale ffn_scale. Qed.

(* ext:granite.eq20: the pre-LN box with A -> r A, a -> r a, F_2 -> r F_2, f_2 -> r f_2. *)
Theorem granite_eq20 (X : 'M[R]_(N, M)) :
  vec_r (granite_block X)
  = pre_W1 H W_V (r *: W_O) D1 G1 *m vec_r X
    + pre_b3 H W_V b_V (r *: W_O) (r *: b_O) beta1 (r *: b_out)
    + pre_W3 N (r *: W_out) *m sigma_s s (pre_W2 H W_V (r *: W_O) D1 D2 G1 G2 W_in *m vec_r X
                                    + pre_b2 H W_V b_V (r *: W_O) (r *: b_O) D2 G2 beta1 beta2 W_in b_in).
Proof. by rewrite granite_fold pre_ln_eq20. Qed.

End Granite.
