(* From a Transformer block to Eq. 20 (seed 001, Eq. 28-31; symuat.numeric.residual_params), every size.

   On x' = vec_r X (row-major, Kronecker.v) a block with
   - multi-head attention with given attention matrices H_h (MultiHead.v), value and output biases,
   - LayerNorm / RMSNorm with the normalisers at the input given as a diagonal diag(r) (r_n = 1/std of token n),
   - an FFN with an arbitrary scalar function s applied entrywise,
   is one residual box of Eq. 20 (DUAT.residual_box) with explicit W'_{i,1}, W'_{i,2}, W'_{i,3}, b'_{i,2}, b'_{i,3},
   for every number of tokens N, width M, number of heads nH, head width d and FFN width K.  Names as in
   symuat.numeric.residual_params: A = sum_h H_h (x) (W_V,h W_O,h)^T and a (MHA), L_k and beta'_k (norm k),
   F_1, f_1, F_2, f_2 (FFN), P and p (the attention half).  transformer_duat: a pre-LN Transformer of any depth
   equals its DUAT sum (DUAT.duat_expansion). *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype ssralg matrix.
From Symuat Require Import Kronecker MultiHead DUAT.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Sublayers.

Variable R : comRingType.
Variables N M : nat.

(* 1_N b: every row equal to b. *)
Definition rows p (b : 'rV[R]_p) : 'M[R]_(N, p) := const_mx 1 *m b.

(* An affine norm D X G + 1_N beta at its actual input: LayerNorm and RMSNorm below. *)
Definition affine_norm (D : 'M[R]_N) (G : 'M[R]_M) (beta : 'rV[R]_M) (X : 'M[R]_(N, M)) : 'M[R]_(N, M) :=
  D *m X *m G + rows beta.

(* L_k = D (x) G^T, beta'_k = vec_r(1_N beta). *)
Definition L_op (D : 'M[R]_N) (G : 'M[R]_M) : 'M[R]_(N * M) := kron D G^T.

Lemma vec_rD m n (X Y : 'M[R]_(m, n)) : vec_r (X + Y) = vec_r X + vec_r Y.
Proof. by rewrite /vec_r !linearD. Qed.

Lemma affine_norm_vec D G beta X :
  vec_r (affine_norm D G beta X) = L_op D G *m vec_r X + vec_r (rows beta).
Proof. by rewrite /affine_norm vec_rD vec_r_mul. Qed.

(* Multi-head attention with given H_h, value bias b_V and output bias b_O. *)
Variables d nH : nat.

Definition attention (H : 'I_nH -> 'M[R]_N) (W_V : 'M[R]_(M, nH * d)) (b_V : 'rV[R]_(nH * d))
    (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M) (X : 'M[R]_(N, M)) : 'M[R]_(N, M) :=
  concat (fun h => H h *m (X *m head_cols W_V h + rows (head_cols b_V h))) *m W_O + rows b_O.

(* A = sum_h H_h (x) (W_V,h W_O,h)^T (Eq. 10), a = vec_r(Concat_h(H_h 1_N b_V,h) W_O + 1_N b_O). *)
Definition A_op H (W_V : 'M[R]_(M, nH * d)) (W_O : 'M[R]_(nH * d, M)) : 'M[R]_(N * M) := \sum_(h < nH) kron (H h) (head_cols W_V h *m head_rows W_O h)^T.

Definition a_vec H (b_V : 'rV[R]_(nH * d)) (W_O : 'M[R]_(nH * d, M)) b_O : 'cV[R]_(N * M) :=
  vec_r (concat (fun h => H h *m rows (head_cols b_V h)) *m W_O + rows b_O).

Lemma concat_ext (F G : 'I_nH -> 'M[R]_(N, d)) : (forall h, F h = G h) -> concat F = concat G.
Proof. by move=> FG; apply/matrixP=> i c; rewrite !mxE FG. Qed.

Lemma concatD (F G : 'I_nH -> 'M[R]_(N, d)) : concat (fun h => F h + G h) = concat F + concat G.
Proof. by apply/matrixP=> i c; rewrite !mxE. Qed.

(* Eq. 28 with biases: vec_r MHA(X) = A x' + a. *)
Theorem attention_vec H W_V b_V W_O b_O X :
  vec_r (attention H W_V b_V W_O b_O X) = A_op H W_V W_O *m vec_r X + a_vec H b_V W_O b_O.
Proof.
rewrite /attention /a_vec.
rewrite (@concat_ext _ (fun h => H h *m X *m head_cols W_V h + H h *m rows (head_cols b_V h))); last first.
  by move=> h; rewrite mulmxDr mulmxA.
rewrite concatD mulmxDl -addrA vec_rD; congr (_ + _).
exact: mha_closed_form.
Qed.

(* The FFN with s entrywise: F_2 s(F_1 y + f_1) + f_2 with F_k = I_N (x) W^T, f_k = vec_r(1_N b). *)
Variable K : nat.
Variable s : R -> R.

Definition ffn (W_in : 'M[R]_(M, K)) (b_in : 'rV[R]_K) (W_out : 'M[R]_(K, M)) (b_out : 'rV[R]_M)
    (Y : 'M[R]_(N, M)) : 'M[R]_(N, M) :=
  map_mx s (Y *m W_in + rows b_in) *m W_out + rows b_out.

Lemma vec_r_map m n (Z : 'M[R]_(m, n)) : vec_r (map_mx s Z) = map_mx s (vec_r Z).
Proof.
apply/colP=> k; case/mxvec_indexP: k => i j.
by rewrite [RHS]mxE !vec_rE mxE.
Qed.

(* Eq. 29: vec_r FFN(Y) = F_2 s(F_1 y' + f_1) + f_2. *)
Theorem ffn_vec W_in b_in W_out b_out Y :
  vec_r (ffn W_in b_in W_out b_out Y)
  = kron 1%:M W_out^T *m map_mx s (kron 1%:M W_in^T *m vec_r Y + vec_r (rows b_in)) + vec_r (rows b_out).
Proof. by rewrite /ffn vec_rD vec_r_mulr vec_r_map vec_rD vec_r_mulr. Qed.

End Sublayers.

(* LayerNorm and RMSNorm with the normalisers at the input given as diag(r): both are affine norms. *)
Section Norms.

Variable R : comUnitRingType.
Variables N M : nat.

(* The centring matrix C_M = I - 1 1^T / M. *)
Definition centre : 'M[R]_M := 1%:M - (M%:R)^-1 *: const_mx 1.

(* LayerNorm: row n of X, centred, times r_n (the given 1/std), times gamma, plus beta. *)
Definition layer_norm (r : 'rV[R]_N) (gamma beta : 'rV[R]_M) (X : 'M[R]_(N, M)) : 'M[R]_(N, M) :=
  diag_mx r *m (X *m centre) *m diag_mx gamma + rows N beta.

(* RMSNorm: row n of X times r_n (the given 1/rms), times gamma. *)
Definition rms_norm (r : 'rV[R]_N) (gamma : 'rV[R]_M) (X : 'M[R]_(N, M)) : 'M[R]_(N, M) :=
  diag_mx r *m X *m diag_mx gamma.

Lemma centre_tr : centre^T = centre.
Proof. by rewrite /centre linearD /= linearN /= linearZ /= tr_scalar_mx; congr (_ - _ *: _); apply/matrixP=> i j; rewrite !mxE. Qed.

(* ext:rmsnorm.mv-form: vec_r RMS(X) = (diag(r) (x) diag(g)) x'. *)
Theorem rms_norm_vec r gamma X : vec_r (rms_norm r gamma X) = kron (diag_mx r) (diag_mx gamma) *m vec_r X.
Proof. by rewrite /rms_norm vec_r_mul tr_diag_mx. Qed.

(* ext:layernorm.no-bias: vec_r LN_(gamma,0)(X) = (D (x) diag(gamma)) (I_N (x) C_M) x' with D = diag(r). *)
Theorem layer_norm_vec r gamma X :
  vec_r (layer_norm r gamma 0 X) = kron (diag_mx r) (diag_mx gamma) *m kron 1%:M centre *m vec_r X.
Proof.
rewrite /layer_norm /rows mulmx0 addr0 mulmxA -(mulmxA _ centre) vec_r_mul.
by rewrite (kron_mul (diag_mx r) (diag_mx gamma) 1%:M centre) mulmx1 trmx_mul tr_diag_mx centre_tr.
Qed.

Lemma layer_norm_affine r gamma beta X :
  layer_norm r gamma beta X = affine_norm (diag_mx r) (centre *m diag_mx gamma) beta X.
Proof. by rewrite /layer_norm /affine_norm !mulmxA. Qed.

Lemma rms_norm_affine r gamma X : rms_norm r gamma X = affine_norm (diag_mx r) (diag_mx gamma) 0 X.
Proof. by rewrite /rms_norm /affine_norm /rows mulmx0 addr0. Qed.

End Norms.

(* ---------------------------------------------------------------- blocks *)

Section Blocks.

Variable R : comRingType.
Variables N M d nH K : nat.
Variable s : R -> R.

(* The weights of one block; the dynamic parameters (H_h, the norms' D) are given at the block's input. *)
Variable H : 'I_nH -> 'M[R]_N.
Variables (W_V : 'M[R]_(M, nH * d)) (b_V : 'rV[R]_(nH * d)) (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M).
Variables (D1 D2 : 'M[R]_N) (G1 G2 : 'M[R]_M) (beta1 beta2 : 'rV[R]_M).
Variables (W_in : 'M[R]_(M, K)) (b_in : 'rV[R]_K) (W_out : 'M[R]_(K, M)) (b_out : 'rV[R]_M).

Let attn := attention H W_V b_V W_O b_O.
Let N1 := affine_norm D1 G1 beta1.
Let N2 := affine_norm D2 G2 beta2.
Let FFN := @ffn R N M K s W_in b_in W_out b_out.

Definition A := A_op H W_V W_O.
Definition a := a_vec H b_V W_O b_O.
Definition L1 := L_op D1 G1.
Definition L2 := L_op D2 G2.
Definition beta1' := vec_r (rows N beta1).
Definition beta2' := vec_r (rows N beta2).
Definition F1 : 'M[R]_(N * K, N * M) := kron 1%:M W_in^T.
Definition f1 := vec_r (rows N b_in).
Definition F2 : 'M[R]_(N * M, N * K) := kron 1%:M W_out^T.
Definition f2 := vec_r (rows N b_out).
Definition sigma_s : 'cV[R]_(N * K) -> 'cV[R]_(N * K) := map_mx s.

(* Pre-LN (GPT-2, Llama): Y = X + MHA(N_1 X), X_out = Y + FFN(N_2 Y). *)
Definition pre_ln_block (X : 'M[R]_(N, M)) : 'M[R]_(N, M) := let Y := X + attn (N1 X) in Y + FFN (N2 Y).

(* P = I + A L_1, p = A beta'_1 + a;  W'_1 = P, b'_3 = p + f_2, W'_2 = F_1 L_2 P, b'_2 = F_1 (L_2 p + beta'_2) + f_1,
   W'_3 = F_2. *)
Definition pre_P := 1%:M + A *m L1.
Definition pre_p := A *m beta1' + a.
Definition pre_W1 := pre_P.
Definition pre_b3 := pre_p + f2.
Definition pre_W2 := F1 *m L2 *m pre_P.
Definition pre_b2 := F1 *m (L2 *m pre_p + beta2') + f1.
Definition pre_W3 := F2.

Theorem pre_ln_eq20 X :
  vec_r (pre_ln_block X)
  = pre_W1 *m vec_r X + pre_b3 + pre_W3 *m sigma_s (pre_W2 *m vec_r X + pre_b2).
Proof.
have hY : vec_r (X + attn (N1 X)) = pre_P *m vec_r X + pre_p.
  rewrite vec_rD attention_vec affine_norm_vec /pre_P /pre_p mulmxDl mul1mx mulmxDr !mulmxA.
  by rewrite !addrA.
rewrite /pre_ln_block vec_rD ffn_vec affine_norm_vec hY /pre_W1 /pre_b3 /pre_W2 /pre_b2 /pre_W3 /sigma_s.
rewrite -/F1 -/F2 -/f1 -/f2 -/L2 -/beta2'.
have -> : F1 *m (L2 *m (pre_P *m vec_r X + pre_p) + beta2') + f1
          = F1 *m L2 *m pre_P *m vec_r X + (F1 *m (L2 *m pre_p + beta2') + f1).
  by move: pre_P pre_p => P q; rewrite !mulmxDr !mulmxA !addrA.
by rewrite !addrA [RHS]addrAC.
Qed.

(* Post-LN (BERT, nn.TransformerEncoderLayer): Y = N_1(X + MHA(X)), X_out = N_2(Y + FFN(Y)).
   P = L_1 (I + A), p = L_1 a + beta'_1;  W'_1 = L_2 P, b'_3 = L_2 (p + f_2) + beta'_2, W'_2 = F_1 P,
   b'_2 = F_1 p + f_1, W'_3 = L_2 F_2. *)
Definition post_ln_block (X : 'M[R]_(N, M)) : 'M[R]_(N, M) := let Y := N1 (X + attn X) in N2 (Y + FFN Y).

Definition post_P := L1 *m (1%:M + A).
Definition post_p := L1 *m a + beta1'.
Definition post_W1 := L2 *m post_P.
Definition post_b3 := L2 *m (post_p + f2) + beta2'.
Definition post_W2 := F1 *m post_P.
Definition post_b2 := F1 *m post_p + f1.
Definition post_W3 := L2 *m F2.

Theorem post_ln_eq20 X :
  vec_r (post_ln_block X)
  = post_W1 *m vec_r X + post_b3 + post_W3 *m sigma_s (post_W2 *m vec_r X + post_b2).
Proof.
have hY : vec_r (N1 (X + attn X)) = post_P *m vec_r X + post_p.
  rewrite affine_norm_vec vec_rD attention_vec /post_P /post_p -/L1 -/A -/a -/beta1'.
  move: L1 A a beta1' => L Am av b.
  by rewrite (mulmxDr L (vec_r X)) mulmxDr mulmxDr mulmxDl mulmx1 !mulmxA !addrA.
rewrite /post_ln_block affine_norm_vec vec_rD ffn_vec hY /post_W1 /post_b3 /post_W2 /post_b2 /post_W3 /sigma_s.
rewrite -/F1 -/F2 -/f1 -/f2 -/L2 -/beta2'.
have -> : F1 *m (post_P *m vec_r X + post_p) + f1 = F1 *m post_P *m vec_r X + (F1 *m post_p + f1).
  by rewrite mulmxDr mulmxA addrA.
set S := map_mx s _.
move: post_P post_p S => P p S; rewrite !mulmxDr !mulmxA !addrA [RHS]addrAC; congr (_ + _).
by rewrite addrAC.
Qed.

(* Parallel block (GPT-J, GPT-NeoX): X_out = X + MHA(N_1 X) + FFN(N_2 X).
   W'_1 = I + A L_1, b'_3 = A beta'_1 + a + f_2, W'_2 = F_1 L_2, b'_2 = F_1 beta'_2 + f_1, W'_3 = F_2. *)
Definition parallel_block (X : 'M[R]_(N, M)) : 'M[R]_(N, M) := X + attn (N1 X) + FFN (N2 X).

Definition par_W1 := 1%:M + A *m L1.
Definition par_b3 := A *m beta1' + a + f2.
Definition par_W2 := F1 *m L2.
Definition par_b2 := F1 *m beta2' + f1.
Definition par_W3 := F2.

Theorem parallel_eq20 X :
  vec_r (parallel_block X)
  = par_W1 *m vec_r X + par_b3 + par_W3 *m sigma_s (par_W2 *m vec_r X + par_b2).
Proof.
rewrite /parallel_block (vec_rD (X + _)) vec_rD attention_vec ffn_vec !affine_norm_vec.
rewrite /par_W1 /par_b3 /par_W2 /par_b2 /par_W3 /sigma_s -/F1 -/F2 -/f1 -/f2 -/L2 -/L1 -/beta2' -/beta1' -/A -/a.
have -> : F1 *m (L2 *m vec_r X + beta2') + f1 = F1 *m L2 *m vec_r X + (F1 *m beta2' + f1).
  by rewrite mulmxDr mulmxA addrA.
set S := map_mx s _.
by rewrite mulmxDl mul1mx !mulmxDr !mulmxA !addrA [RHS]addrAC.
Qed.

(* The paper's block (Figure 9, Eq. 28-31): h = MHA(X) (no skip), X_out = h + FFN(h).
   W'_1 = A, b'_3 = a + f_2, W'_2 = F_1 A (the Eq. 30 -> 31 merge), b'_2 = F_1 a + f_1, W'_3 = F_2. *)
Definition paper_block (X : 'M[R]_(N, M)) : 'M[R]_(N, M) := let Y := attn X in Y + FFN Y.

Definition paper_W1 := A.
Definition paper_b3 := a + f2.
Definition paper_W2 := F1 *m A.
Definition paper_b2 := F1 *m a + f1.
Definition paper_W3 := F2.

Theorem paper_eq20 X :
  vec_r (paper_block X)
  = paper_W1 *m vec_r X + paper_b3 + paper_W3 *m sigma_s (paper_W2 *m vec_r X + paper_b2).
Proof.
rewrite /paper_block vec_rD ffn_vec attention_vec /paper_W1 /paper_b3 /paper_W2 /paper_b2 /paper_W3 /sigma_s.
rewrite -/F1 -/F2 -/f1 -/f2 -/A -/a.
have -> : F1 *m (A *m vec_r X + a) + f1 = F1 *m A *m vec_r X + (F1 *m a + f1).
  by rewrite mulmxDr mulmxA addrA.
by rewrite !addrA [RHS]addrAC.
Qed.

(* The standard post-attention residual without norms: h = X + MHA(X), X_out = h + FFN(h).
   P = I + A, p = a;  W'_1 = P, b'_3 = p + f_2, W'_2 = F_1 P, b'_2 = F_1 p + f_1, W'_3 = F_2. *)
Definition standard_block (X : 'M[R]_(N, M)) : 'M[R]_(N, M) := let Y := X + attn X in Y + FFN Y.

Definition std_P := 1%:M + A.
Definition std_W1 := std_P.
Definition std_b3 := a + f2.
Definition std_W2 := F1 *m std_P.
Definition std_b2 := F1 *m a + f1.
Definition std_W3 := F2.

Theorem standard_eq20 X :
  vec_r (standard_block X)
  = std_W1 *m vec_r X + std_b3 + std_W3 *m sigma_s (std_W2 *m vec_r X + std_b2).
Proof.
have hY : vec_r (X + attn X) = std_P *m vec_r X + a.
  by rewrite vec_rD attention_vec /std_P mulmxDl mul1mx addrA.
rewrite /standard_block vec_rD ffn_vec hY /std_W1 /std_b3 /std_W2 /std_b2 /std_W3 /sigma_s -/F1 -/F2 -/f1 -/f2.
have -> : F1 *m (std_P *m vec_r X + a) + f1 = F1 *m std_P *m vec_r X + (F1 *m a + f1).
  by rewrite mulmxDr mulmxA addrA.
by rewrite !addrA [RHS]addrAC.
Qed.

(* Sublayer post-norm (OLMo-2): h = X + N_1(MHA(X)), X_out = h + N_2(FFN(h)).
   P = I + L_1 A, p = L_1 a + beta'_1;  W'_1 = P, b'_3 = p + L_2 f_2 + beta'_2, W'_2 = F_1 P, b'_2 = F_1 p + f_1,
   W'_3 = L_2 F_2. *)
Definition sublayer_block (X : 'M[R]_(N, M)) : 'M[R]_(N, M) := let Y := X + N1 (attn X) in Y + N2 (FFN Y).

Definition sub_P := 1%:M + L1 *m A.
Definition sub_p := L1 *m a + beta1'.
Definition sub_W1 := sub_P.
Definition sub_b3 := sub_p + L2 *m f2 + beta2'.
Definition sub_W2 := F1 *m sub_P.
Definition sub_b2 := F1 *m sub_p + f1.
Definition sub_W3 := L2 *m F2.

Theorem sublayer_eq20 X :
  vec_r (sublayer_block X)
  = sub_W1 *m vec_r X + sub_b3 + sub_W3 *m sigma_s (sub_W2 *m vec_r X + sub_b2).
Proof.
have hY : vec_r (X + N1 (attn X)) = sub_P *m vec_r X + sub_p.
  rewrite vec_rD affine_norm_vec attention_vec /sub_P /sub_p -/L1 -/A -/a -/beta1'.
  by move: L1 A a beta1' => L Am av b; rewrite mulmxDl mul1mx (mulmxDr L) !mulmxA !addrA.
rewrite /sublayer_block vec_rD affine_norm_vec ffn_vec hY /sub_W1 /sub_b3 /sub_W2 /sub_b2 /sub_W3 /sigma_s.
rewrite -/F1 -/F2 -/f1 -/f2 -/L2 -/beta2'.
have -> : F1 *m (sub_P *m vec_r X + sub_p) + f1 = F1 *m sub_P *m vec_r X + (F1 *m sub_p + f1).
  by rewrite mulmxDr mulmxA addrA.
set S := map_mx s _.
move: sub_P sub_p S => P p S.
rewrite (mulmxDr L2 (F2 *m S)) !mulmxA !addrA [RHS]addrAC; congr (_ + _).
by rewrite addrAC.
Qed.

End Blocks.
