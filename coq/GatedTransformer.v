(* A pre-LN Transformer with gated FFNs (Llama-style blocks, given attention matrices and norm normalisers) of any
   depth and size equals its gated DUAT sum (Gated.gated_duat_expansion).  Each block is the gated Eq. 20 box of
   Layouts.block_layouts_eq20 with W'_1 = P, b'_3 = p + f_d, W'_2 = F_g L_2 P, b'_2 = F_g (L_2 p + beta'_2) + f_g,
   W'_4 = F_u L_2 P, b'_4 = F_u (L_2 p + beta'_2) + f_u, W'_3 = F_d. *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype ssralg matrix.
From Symuat Require Import Kronecker MultiHead DUAT Block Gated Layouts.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Record gated_params (R : comRingType) (N M : nat) := GatedParams {
  g_heads : nat; g_head_width : nat; g_width : nat;
  g_H : 'I_g_heads -> 'M[R]_N;
  g_W_V : 'M[R]_(M, g_heads * g_head_width); g_b_V : 'rV[R]_(g_heads * g_head_width);
  g_W_O : 'M[R]_(g_heads * g_head_width, M); g_b_O : 'rV[R]_M;
  g_D_1 : 'M[R]_N; g_G_1 : 'M[R]_M; g_beta_1 : 'rV[R]_M;
  g_D_2 : 'M[R]_N; g_G_2 : 'M[R]_M; g_beta_2 : 'rV[R]_M;
  W_g : 'M[R]_(M, g_width); b_g : 'rV[R]_g_width;
  W_u : 'M[R]_(M, g_width); b_u : 'rV[R]_g_width;
  W_d : 'M[R]_(g_width, M); b_d : 'rV[R]_M }.

Arguments g_H {R N M} g _.
Arguments g_W_V {R N M} g.
Arguments g_b_V {R N M} g.
Arguments g_W_O {R N M} g.
Arguments W_g {R N M} g.
Arguments b_g {R N M} g.
Arguments W_u {R N M} g.
Arguments b_u {R N M} g.
Arguments W_d {R N M} g.

Section GatedTransformer.

Variable R : comRingType.
Variables N M : nat.
Variable act : R -> R.
Variable layer : nat -> gated_params R N M.
Variable X0 : 'M[R]_(N, M).

Let P i := layer i.

Definition g_hidden i := (N * g_width (P i))%N.
Definition g_gate i : 'cV[R]_(g_hidden i) -> 'cV[R]_(g_hidden i) -> 'cV[R]_(g_hidden i) := gate_act act.

Definition gated_block (p : gated_params R N M) (X : 'M[R]_(N, M)) : 'M[R]_(N, M) :=
  pre_ln_with (g_H p) (g_W_V p) (g_b_V p) (g_W_O p) (g_b_O p) (g_D_1 p) (g_D_2 p) (g_G_1 p) (g_G_2 p) (g_beta_1 p)
    (g_beta_2 p) (gated_ffn act (W_g p) (b_g p) (W_u p) (b_u p) (W_d p) (b_d p)) X.

Fixpoint gated_stack L : 'M[R]_(N, M) := if L is L'.+1 then gated_block (P L) (gated_stack L') else X0.

(* P, p, and the FFN argument's Q, q of block i. *)
Definition gP i := let p := P i in pre_P' (g_H p) (g_W_V p) (g_W_O p) (g_D_1 p) (g_G_1 p).
Definition gp i := let p := P i in pre_p' (g_H p) (g_W_V p) (g_b_V p) (g_W_O p) (g_b_O p) (g_beta_1 p).
Definition gQ i := L_op (g_D_2 (P i)) (g_G_2 (P i)) *m gP i.
Definition gq i := L_op (g_D_2 (P i)) (g_G_2 (P i)) *m gp i + vec_r (rows N (g_beta_2 (P i))).

Definition gW1 i := gP i.
Definition gb3 i := gp i + vec_r (rows N (b_d (P i))).
Definition gW2 i : 'M[R]_(g_hidden i, N * M) := kron 1%:M (W_g (P i))^T *m gQ i.
Definition gb2 i : 'cV[R]_(g_hidden i) := kron 1%:M (W_g (P i))^T *m gq i + vec_r (rows N (b_g (P i))).
Definition gW4 i : 'M[R]_(g_hidden i, N * M) := kron 1%:M (W_u (P i))^T *m gQ i.
Definition gb4 i : 'cV[R]_(g_hidden i) := kron 1%:M (W_u (P i))^T *m gq i + vec_r (rows N (b_u (P i))).
Definition gW3 i : 'M[R]_(N * M, g_hidden i) := kron 1%:M (W_d (P i))^T.

(* Each gated pre-LN block is a gated Eq. 20 box (Gated.gated_box). *)
Lemma gated_block_box i X :
  vec_r (gated_block (P i) X)
  = gW1 i *m vec_r X + gb3 i + gW3 i *m g_gate (gW2 i *m vec_r X + gb2 i) (gW4 i *m vec_r X + gb4 i).
Proof.
have hF := @gated_ffn_vec _ N _ _ act (W_g (P i)) (b_g (P i)) (W_u (P i)) (b_u (P i)) (W_d (P i)) (b_d (P i)).
have [_ _ E _ _] := @block_layouts_eq20 _ _ _ _ _ (g_H (P i)) (g_W_V (P i)) (g_b_V (P i)) (g_W_O (P i))
  (g_b_O (P i)) (g_D_1 (P i)) (g_D_2 (P i)) (g_G_1 (P i)) (g_G_2 (P i)) (g_beta_1 (P i)) (g_beta_2 (P i))
  _ _ (fun y => gate_act act (kron 1%:M (W_g (P i))^T *m y + vec_r (rows N (b_g (P i))))
                             (kron 1%:M (W_u (P i))^T *m y + vec_r (rows N (b_u (P i))))) _ _ hF X.
rewrite /gated_block E /gW1 /gb3 /gW3 /g_gate /gW2 /gb2 /gW4 /gb4 /gQ /gq /gP /gp.
by rewrite !affine_split -!mulmxA.
Qed.

Lemma gated_stack_net L :
  vec_r (gated_stack L) = gated_net gW1 gb3 gW2 gb2 gW4 gb4 gW3 g_gate (vec_r X0) L.
Proof. by elim: L => [|L IH] //=; rewrite gated_block_box IH. Qed.

(* For every depth L: vec_r X_L = A~_L x'_0 + c~_L + sum_(j<=L) U~_j^(L) g(V~_j x'_0 + beta~_j, P~_j x'_0 + gamma~_j). *)
Theorem gated_transformer_duat L :
  vec_r (gated_stack L)
  = A_tilde gW1 L *m vec_r X0 + c_tilde gW1 gb3 L
    + \sum_(1 <= j < L.+1) U_tilde gW1 gW3 j L
        *m g_gate (V_tilde gW1 gW2 j *m vec_r X0 + beta_g gW1 gb3 gW2 gb2 gW4 gb4 gW3 g_gate (vec_r X0) j)
                  (P_tilde gW1 gW4 j *m vec_r X0 + gamma_tilde gW1 gb3 gW2 gb2 gW4 gb4 gW3 g_gate (vec_r X0) j).
Proof. by rewrite gated_stack_net gated_duat_expansion. Qed.

End GatedTransformer.
