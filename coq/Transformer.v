(* A Transformer of any depth and size equals its DUAT sum (seed 001, Eq. 11/33 with the corrected table).

   Layer i has its own number of heads, head width and FFN width; its dynamic parameters (the attention
   matrices H_h and the norms' normaliser matrices D_k) are given matrices, the values they take on the actual
   input.  vec_r of the stack is DUAT.net of the Eq. 20 boxes of Block.v (pre_ln_net, post_ln_net), hence the
   DUAT sum of DUAT.duat_expansion (pre_ln_transformer_duat, post_ln_transformer_duat). *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype ssralg matrix.
From Symuat Require Import Kronecker MultiHead DUAT Block.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

(* The weights of one block, with its dynamic parameters at the block's input. *)
Record block_params (R : comRingType) (N M : nat) := BlockParams {
  heads : nat; head_width : nat; ffn_width : nat;
  H_att : 'I_heads -> 'M[R]_N;
  W_V : 'M[R]_(M, heads * head_width); b_V : 'rV[R]_(heads * head_width);
  W_O : 'M[R]_(heads * head_width, M); b_O : 'rV[R]_M;
  D_1 : 'M[R]_N; G_1 : 'M[R]_M; beta_1 : 'rV[R]_M;
  D_2 : 'M[R]_N; G_2 : 'M[R]_M; beta_2 : 'rV[R]_M;
  W_in : 'M[R]_(M, ffn_width); b_in : 'rV[R]_ffn_width;
  W_out : 'M[R]_(ffn_width, M); b_out : 'rV[R]_M }.

Arguments H_att {R N M} b _.
Arguments W_V {R N M} b.
Arguments b_V {R N M} b.
Arguments W_O {R N M} b.
Arguments W_in {R N M} b.
Arguments b_in {R N M} b.
Arguments W_out {R N M} b.

Section Transformer.

Variable R : comRingType.
Variables N M : nat.
Variable s : R -> R.
Variable layer : nat -> block_params R N M.
Variable X0 : 'M[R]_(N, M).

Let P i := layer i.

(* The hidden width of box i: N times the FFN width. *)
Definition hidden i := (N * ffn_width (P i))%N.
Definition sig i : 'cV[R]_(hidden i) -> 'cV[R]_(hidden i) := sigma_s s.

(* ---------------------------------------------------------------- pre-LN *)

Fixpoint pre_ln_stack L : 'M[R]_(N, M) :=
  if L is L'.+1 then
    let p := P L in
    pre_ln_block s (H_att p) (W_V p) (b_V p) (W_O p) (b_O p) (D_1 p) (D_2 p) (G_1 p) (G_2 p) (beta_1 p)
      (beta_2 p) (W_in p) (b_in p) (W_out p) (b_out p) (pre_ln_stack L')
  else X0.

Definition preW1 i := let p := P i in pre_W1 (H_att p) (W_V p) (W_O p) (D_1 p) (G_1 p).
Definition preb3 i := let p := P i in pre_b3 (H_att p) (W_V p) (b_V p) (W_O p) (b_O p) (beta_1 p) (b_out p).
Definition preW2 i : 'M[R]_(hidden i, N * M) :=
  let p := P i in pre_W2 (H_att p) (W_V p) (W_O p) (D_1 p) (D_2 p) (G_1 p) (G_2 p) (W_in p).
Definition preb2 i : 'cV[R]_(hidden i) :=
  let p := P i in pre_b2 (H_att p) (W_V p) (b_V p) (W_O p) (b_O p) (D_2 p) (G_2 p) (beta_1 p) (beta_2 p) (W_in p) (b_in p).
Definition preW3 i : 'M[R]_(N * M, hidden i) := pre_W3 N (W_out (P i)).

Lemma pre_ln_net L : vec_r (pre_ln_stack L) = net preW1 preb3 preW2 preb2 preW3 sig (vec_r X0) L.
Proof. by elim: L => [|L IH] //=; rewrite pre_ln_eq20 IH. Qed.

Theorem pre_ln_transformer_duat L :
  vec_r (pre_ln_stack L)
  = A_tilde preW1 L *m vec_r X0 + c_tilde preW1 preb3 L
    + \sum_(1 <= j < L.+1) U_tilde preW1 preW3 j L
        *m sig (V_tilde preW1 preW2 j *m vec_r X0 + beta_tilde preW1 preb3 preW2 preb2 preW3 sig (vec_r X0) j).
Proof. by rewrite pre_ln_net duat_expansion. Qed.

(* ---------------------------------------------------------------- post-LN *)

Fixpoint post_ln_stack L : 'M[R]_(N, M) :=
  if L is L'.+1 then
    let p := P L in
    post_ln_block s (H_att p) (W_V p) (b_V p) (W_O p) (b_O p) (D_1 p) (D_2 p) (G_1 p) (G_2 p) (beta_1 p)
      (beta_2 p) (W_in p) (b_in p) (W_out p) (b_out p) (post_ln_stack L')
  else X0.

Definition postW1 i := let p := P i in post_W1 (H_att p) (W_V p) (W_O p) (D_1 p) (D_2 p) (G_1 p) (G_2 p).
Definition postb3 i :=
  let p := P i in post_b3 (H_att p) (b_V p) (W_O p) (b_O p) (D_1 p) (D_2 p) (G_1 p) (G_2 p) (beta_1 p)
                    (beta_2 p) (b_out p).
Definition postW2 i : 'M[R]_(hidden i, N * M) :=
  let p := P i in post_W2 (H_att p) (W_V p) (W_O p) (D_1 p) (G_1 p) (W_in p).
Definition postb2 i : 'cV[R]_(hidden i) :=
  let p := P i in post_b2 (H_att p) (b_V p) (W_O p) (b_O p) (D_1 p) (G_1 p) (beta_1 p) (W_in p) (b_in p).
Definition postW3 i : 'M[R]_(N * M, hidden i) := let p := P i in post_W3 (D_2 p) (G_2 p) (W_out p).

Lemma post_ln_net L : vec_r (post_ln_stack L) = net postW1 postb3 postW2 postb2 postW3 sig (vec_r X0) L.
Proof. by elim: L => [|L IH] //=; rewrite post_ln_eq20 IH. Qed.

Theorem post_ln_transformer_duat L :
  vec_r (post_ln_stack L)
  = A_tilde postW1 L *m vec_r X0 + c_tilde postW1 postb3 L
    + \sum_(1 <= j < L.+1) U_tilde postW1 postW3 j L
        *m sig (V_tilde postW1 postW2 j *m vec_r X0
                + beta_tilde postW1 postb3 postW2 postb2 postW3 sig (vec_r X0) j).
Proof. by rewrite post_ln_net duat_expansion. Qed.

(* ---------------------------------------------------------------- parallel (GPT-J, GPT-NeoX) *)

Fixpoint parallel_stack L : 'M[R]_(N, M) :=
  if L is L'.+1 then
    let p := P L in
    parallel_block s (H_att p) (W_V p) (b_V p) (W_O p) (b_O p) (D_1 p) (D_2 p) (G_1 p) (G_2 p) (beta_1 p)
      (beta_2 p) (W_in p) (b_in p) (W_out p) (b_out p) (parallel_stack L')
  else X0.

Definition parW1 i := let p := P i in par_W1 (H_att p) (W_V p) (W_O p) (D_1 p) (G_1 p).
Definition parb3 i := let p := P i in par_b3 (H_att p) (W_V p) (b_V p) (W_O p) (b_O p) (beta_1 p) (b_out p).
Definition parW2 i : 'M[R]_(hidden i, N * M) := let p := P i in par_W2 (D_2 p) (G_2 p) (W_in p).
Definition parb2 i : 'cV[R]_(hidden i) := let p := P i in par_b2 N (beta_2 p) (W_in p) (b_in p).
Definition parW3 i : 'M[R]_(N * M, hidden i) := par_W3 N (W_out (P i)).

Lemma parallel_net L : vec_r (parallel_stack L) = net parW1 parb3 parW2 parb2 parW3 sig (vec_r X0) L.
Proof. by elim: L => [|L IH] //=; rewrite parallel_eq20 IH. Qed.

(* ext:parallel-block.table: V~_i = F_1 L_2 A~_{i-1}, beta~_i = F_1 L_2 (c~_{i-1} + R_{i-1}) + F_1 beta'_2 + f_1. *)
Lemma parallel_table i :
  V_tilde parW1 parW2 i.+1 = F1 N (W_in (P i.+1)) *m L2 (D_2 (P i.+1)) (G_2 (P i.+1)) *m A_tilde parW1 i /\
  beta_tilde parW1 parb3 parW2 parb2 parW3 sig (vec_r X0) i.+1
  = F1 N (W_in (P i.+1)) *m L2 (D_2 (P i.+1)) (G_2 (P i.+1))
      *m (c_tilde parW1 parb3 i + R_tilde parW1 parb3 parW2 parb2 parW3 sig (vec_r X0) i)
    + (F1 N (W_in (P i.+1)) *m beta2' N (beta_2 (P i.+1)) + f1 N (b_in (P i.+1))).
Proof. by split=> //; rewrite beta_tilde_row mulmxDr addrAC. Qed.

(* ext:parallel-block.induction: a parallel Transformer of any depth equals its DUAT sum. *)
Theorem parallel_transformer_duat L :
  vec_r (parallel_stack L)
  = A_tilde parW1 L *m vec_r X0 + c_tilde parW1 parb3 L
    + \sum_(1 <= j < L.+1) U_tilde parW1 parW3 j L
        *m sig (V_tilde parW1 parW2 j *m vec_r X0 + beta_tilde parW1 parb3 parW2 parb2 parW3 sig (vec_r X0) j).
Proof. by rewrite parallel_net duat_expansion. Qed.

End Transformer.
