(* Beyond the paper: a mask or a static additive bias inside H_h (sliding and symmetric windows, causal and padding
   masks, T5's relative position buckets, ALiBi) leaves rows summing to one, so the block keeps Eq. 10 with the paper's
   static value bias (ext:symmetric-window.mask, ext:sliding-window.mask, ext:mask.static-value-bias; docs/coq.md).
   Block.attention is ExtAttention.cross_attention on E = X, and cross_attention_vec states the box. *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype ssralg matrix.
From Symuat Require Import Kronecker MultiHead Block ExtAttention.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Masked.

Variable R : comRingType.
Variables N M d nH : nat.

(* Any H_h with rows summing to one (whatever mask and static bias went into its softmax):
   vec_r MHA(X) = W'_HVO x' + 1_N (x) (sum_h W_O,h^T b_V,h + b_O). *)
Theorem masked_attention_vec (H : 'I_nH -> 'M[R]_N) (W_V : 'M[R]_(M, nH * d)) (b_V : 'rV[R]_(nH * d))
    (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M) (X : 'M[R]_(N, M)) :
  (forall h, H h *m const_mx 1 = const_mx 1 :> 'cV[R]_N) ->
  vec_r (attention H W_V b_V W_O b_O X)
  = A_op H W_V W_O *m vec_r X + kron (const_mx 1 : 'cV[R]_N) (\sum_(h < nH) head_bias b_V W_O h + b_O^T).
Proof. exact: cross_attention_vec. Qed.

(* So the attention bias a of every block of Block.v is the static one: each such block is the Eq. 20 box of its
   theorem with b' = 1_N (x) (sum_h W_O,h^T b_V,h + b_O). *)
Corollary masked_a_vec (H : 'I_nH -> 'M[R]_N) (b_V : 'rV[R]_(nH * d)) (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M) :
  (forall h, H h *m const_mx 1 = const_mx 1 :> 'cV[R]_N) ->
  a_vec H b_V W_O b_O = kron (const_mx 1 : 'cV[R]_N) (\sum_(h < nH) head_bias b_V W_O h + b_O^T).
Proof.
move=> H1; have := masked_attention_vec 0 b_V W_O b_O (0 : 'M[R]_(N, M)) H1.
by rewrite attention_vec => /addrI.
Qed.

End Masked.
