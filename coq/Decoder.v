(* A stack of decoder blocks with cross-attention (T5's decoder) of any depth and size equals its DUAT sum, with the
   encoder's output e' = vec_r E as a second input (ext:cross-attention.induction; docs/coq.md).

   Section External, over any ring: the Eq. 20 box with a second input,
     x'_i = W'_{i,1} x'_{i-1} + W'_{i,E} e' + b'_{i,3} + W'_{i,3} sigma_i(W'_{i,2} x'_{i-1} + W'_{i,2E} e' + b'_{i,2}),
   is DUAT.net with the e'-terms in the biases, b'_{i,3} + W'_{i,E} e' and b'_{i,2} + W'_{i,2E} e' (ext_net_net), so
   duat_expansion applies.  A~, U~, V~ do not depend on e' (their rules read W'_{i,1}, W'_{i,2}, W'_{i,3} only);
   e' enters
     c~_i = W'_{i,1} c~_{i-1} + b'_{i,3} + W'_{i,E} e',  i.e.  c~_i(e') = c~_i(0) + E~_i e'  (c_tilde_ext),
       E~_0 = 0, E~_i = W'_{i,1} E~_{i-1} + W'_{i,E}  (linear in e'),
     beta~_i = W'_{i,2} (c~_{i-1} + R_{i-1}) + b'_{i,2} + W'_{i,2E} e'  (beta_tilde_ext),
   and through R_{i-1} (the earlier sigma terms, whose arguments hold e' the same way).

   Section Decoder: the layer family of ExtAttention.decoder_block (each block its own heads, widths and weights;
   its dynamic parameters, the attention matrices H_h, H_{c,h} and the norms' D_k, given matrices: their values at
   the actual input, which also depends on E), all blocks reading the same E.  decoder_net: vec_r of the stack is
   ext_net of the boxes of ExtAttention.decoder_eq20; decoder_duat: its DUAT sum. *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype ssralg matrix.
From Symuat Require Import Kronecker MultiHead DUAT Block ExtAttention.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section External.

Load DUATVariables.
Variable m : nat.                                   (* the size of e' = vec_r E (N_e * M for a decoder) *)
Variable WE : nat -> 'M[R]_(n, m).                  (* W'_{i,E} *)
Variable W2E : forall i, 'M[R]_(h i, m).            (* W'_{i,2E} *)
Variable e : 'cV[R]_m.                              (* e' *)

(* Eq. 20 with the second input e'. *)
Definition ext_box i (x : 'cV[R]_n) : 'cV[R]_n :=
  W1 i *m x + WE i *m e + b3 i + W3 i *m sigma (W2 i *m x + W2E i *m e + b2 i).

Fixpoint ext_net L : 'cV[R]_n := if L is L'.+1 then ext_box L (ext_net L') else x0.

(* The biases with the e'-terms absorbed. *)
Definition b3e i : 'cV[R]_n := b3 i + WE i *m e.
Definition b2e i : 'cV[R]_(h i) := b2 i + W2E i *m e.

(* The network with a second input is the generic Eq. 20 network of DUAT.v. *)
Lemma ext_net_net L : ext_net L = net W1 b3e W2 b2e W3 sigma x0 L.
Proof.
elim: L => [|L IH] //=; rewrite IH /ext_box /residual_box /b3e /b2e.
by rewrite -[_ + WE L.+1 *m e + _]addrA [WE L.+1 *m e + _]addrC -[_ + W2E L.+1 *m e + _]addrA [W2E _ *m e + _]addrC !addrA.
Qed.

(* E~_i: the coefficient of e' in c~_i. *)
Fixpoint E_tilde i : 'M[R]_(n, m) := if i is i'.+1 then W1 i *m E_tilde i' + WE i else 0.

(* c~_i(e') = c~_i(0) + E~_i e': the main bias is affine in e', the rest of the table's c~ unchanged. *)
Lemma c_tilde_ext i : c_tilde W1 b3e i = c_tilde W1 b3 i + E_tilde i *m e.
Proof.
elim: i => [|i IH] /=; first by rewrite mul0mx addr0.
by rewrite IH /b3e mulmxDr mulmxDl mulmxA addrACA addrC addrA [_ + b3 _]addrC addrA.
Qed.

Let R_e := R_tilde W1 b3e W2 b2e W3 sigma x0.
Let beta_e := beta_tilde W1 b3e W2 b2e W3 sigma x0.

(* beta~_{i+1} = W'_{i+1,2} (c~_i + R_i) + b'_{i+1,2} + W'_{i+1,2E} e': e' enters linearly through the rule, and
   through c~_i (c_tilde_ext) and R_i. *)
Lemma beta_tilde_ext i :
  beta_e i.+1 = W2 i.+1 *m (c_tilde W1 b3e i + R_e i) + b2 i.+1 + W2E i.+1 *m e.
Proof. by rewrite /beta_e beta_tilde_row /b2e mulmxDr addrAC addrA. Qed.

(* The same rule with c~_i(e') written out: the e'-coefficient of the rule is W'_{i+1,2} E~_i + W'_{i+1,2E}. *)
Lemma beta_tilde_ext_split i :
  beta_e i.+1 = W2 i.+1 *m (c_tilde W1 b3 i + R_e i) + b2 i.+1 + (W2 i.+1 *m E_tilde i + W2E i.+1) *m e.
Proof.
rewrite beta_tilde_ext c_tilde_ext !mulmxDr mulmxDl mulmxA.
by rewrite -!addrA; congr (_ + _); rewrite addrCA; congr (_ + _); rewrite addrCA.
Qed.

(* The DUAT theorem with a second input, every depth L:
   x'_L = A~_L x'_0 + (c~_L(0) + E~_L e') + sum_(1<=j<=L) U~_j^(L) sigma_j(V~_j x'_0 + beta~_j(e')). *)
Theorem ext_duat_expansion L :
  ext_net L = A_tilde W1 L *m x0 + (c_tilde W1 b3 L + E_tilde L *m e)
              + \sum_(1 <= j < L.+1) U_tilde W1 W3 j L *m sigma (V_tilde W1 W2 j *m x0 + beta_e j).
Proof. by rewrite ext_net_net duat_expansion c_tilde_ext. Qed.

End External.

(* The weights of one decoder block (self-attention, cross-attention on E, FFN), with its dynamic parameters at the
   block's input. *)
Record decoder_params (R : comRingType) (N Ne M : nat) := DecoderParams {
  d_heads : nat; d_head_width : nat; c_heads : nat; c_head_width : nat; d_ffn_width : nat;
  d_H : 'I_d_heads -> 'M[R]_N;
  d_W_V : 'M[R]_(M, d_heads * d_head_width); d_b_V : 'rV[R]_(d_heads * d_head_width);
  d_W_O : 'M[R]_(d_heads * d_head_width, M); d_b_O : 'rV[R]_M;
  c_H : 'I_c_heads -> 'M[R]_(N, Ne);
  c_W_V : 'M[R]_(M, c_heads * c_head_width); c_b_V : 'rV[R]_(c_heads * c_head_width);
  c_W_O : 'M[R]_(c_heads * c_head_width, M); c_b_O : 'rV[R]_M;
  d_D_1 : 'M[R]_N; d_G_1 : 'M[R]_M; d_beta_1 : 'rV[R]_M;
  d_D_3 : 'M[R]_N; d_G_3 : 'M[R]_M; d_beta_3 : 'rV[R]_M;
  d_W_in : 'M[R]_(M, d_ffn_width); d_b_in : 'rV[R]_d_ffn_width;
  d_W_out : 'M[R]_(d_ffn_width, M); d_b_out : 'rV[R]_M }.

Arguments d_H {R N Ne M} d _.
Arguments d_W_V {R N Ne M} d.
Arguments d_b_V {R N Ne M} d.
Arguments d_W_O {R N Ne M} d.
Arguments c_H {R N Ne M} d _.
Arguments c_W_V {R N Ne M} d.
Arguments c_b_V {R N Ne M} d.
Arguments c_W_O {R N Ne M} d.
Arguments d_W_in {R N Ne M} d.
Arguments d_b_in {R N Ne M} d.
Arguments d_W_out {R N Ne M} d.

Section Decoder.

Variable R : comRingType.
Variables N Ne M : nat.
Variable s : R -> R.
Variable layer : nat -> decoder_params R N Ne M.
Variable X0 : 'M[R]_(N, M).
Variable E : 'M[R]_(Ne, M).                         (* the encoder's output, read by every block *)

Let P i := layer i.

Definition dblock (p : decoder_params R N Ne M) (X : 'M[R]_(N, M)) : 'M[R]_(N, M) :=
  decoder_block s (d_H p) (d_W_V p) (d_b_V p) (d_W_O p) (d_b_O p) (c_H p) (c_W_V p) (c_b_V p) (c_W_O p) (c_b_O p)
    (d_D_1 p) (d_D_3 p) (d_G_1 p) (d_G_3 p) (d_beta_1 p) (d_beta_3 p) (d_W_in p) (d_b_in p) (d_W_out p) (d_b_out p)
    X E.

Fixpoint decoder_stack L : 'M[R]_(N, M) := if L is L'.+1 then dblock (P L) (decoder_stack L') else X0.

(* The hidden width of box i: N times the FFN width. *)
Definition d_hidden i := (N * d_ffn_width (P i))%N.
Definition d_sig i : 'cV[R]_(d_hidden i) -> 'cV[R]_(d_hidden i) := sigma_s s.

(* The parameters of box i (ExtAttention.decoder_eq20). *)
Definition dW1 i := let p := P i in dec_W1 (d_H p) (d_W_V p) (d_W_O p) (d_D_1 p) (d_G_1 p).
Definition dWE i := let p := P i in dec_WE (c_H p) (c_W_V p) (c_W_O p).
Definition db3 i :=
  let p := P i in dec_b3 (d_H p) (d_W_V p) (d_b_V p) (d_W_O p) (d_b_O p) (c_H p) (c_b_V p) (c_W_O p) (c_b_O p)
                    (d_beta_1 p) (d_b_out p).
Definition dW2 i : 'M[R]_(d_hidden i, N * M) :=
  let p := P i in dec_W2 (d_H p) (d_W_V p) (d_W_O p) (d_D_1 p) (d_D_3 p) (d_G_1 p) (d_G_3 p) (d_W_in p).
Definition dW2E i : 'M[R]_(d_hidden i, Ne * M) :=
  let p := P i in dec_W2E (c_H p) (c_W_V p) (c_W_O p) (d_D_3 p) (d_G_3 p) (d_W_in p).
Definition db2 i : 'cV[R]_(d_hidden i) :=
  let p := P i in dec_b2 (d_H p) (d_W_V p) (d_b_V p) (d_W_O p) (d_b_O p) (c_H p) (c_b_V p) (c_W_O p) (c_b_O p)
                    (d_D_3 p) (d_G_3 p) (d_beta_1 p) (d_beta_3 p) (d_W_in p) (d_b_in p).
Definition dW3 i : 'M[R]_(N * M, d_hidden i) := dec_W3 N (d_W_out (P i)).

(* Every block reads e' = vec_r E: the stack is the network with a second input. *)
Lemma decoder_ext_net L :
  vec_r (decoder_stack L) = ext_net dW1 db3 dW2 db2 dW3 d_sig (vec_r X0) dWE dW2E (vec_r E) L.
Proof. by elim: L => [|L IH] //=; rewrite /dblock decoder_eq20 IH. Qed.

(* (a) The decoder stack is the generic Eq. 20 network of DUAT.v with b'_{i,3} + W'_{i,E} e', b'_{i,2} + W'_{i,2E} e'. *)
Theorem decoder_net L :
  vec_r (decoder_stack L) = net dW1 (b3e db3 dWE (vec_r E)) dW2 (b2e db2 dW2E (vec_r E)) dW3 d_sig (vec_r X0) L.
Proof. by rewrite decoder_ext_net ext_net_net. Qed.

(* (b) ext:cross-attention.induction: for every depth L,
   x'_L = A~_L x'_0 + (c~_L(0) + E~_L e') + sum_(1<=j<=L) U~_j^(L) s(V~_j x'_0 + beta~_j(e')),
   c~ and beta~ as in c_tilde_ext, beta_tilde_ext (the table of the biases with W'_{i,E} e', W'_{i,2E} e'). *)
Theorem decoder_duat L :
  vec_r (decoder_stack L)
  = A_tilde dW1 L *m vec_r X0 + (c_tilde dW1 db3 L + E_tilde dW1 dWE L *m vec_r E)
    + \sum_(1 <= j < L.+1) U_tilde dW1 dW3 j L
        *m d_sig (V_tilde dW1 dW2 j *m vec_r X0
                  + beta_tilde dW1 (b3e db3 dWE (vec_r E)) dW2 (b2e db2 dW2E (vec_r E)) dW3 d_sig (vec_r X0) j).
Proof. by rewrite decoder_ext_net ext_duat_expansion. Qed.

End Decoder.
