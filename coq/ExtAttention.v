(* Beyond the paper: attention sinks, multi-head latent attention and cross-attention as Eq. 10 / Eq. 20 boxes, for
   every size (ext:attention-sink.mv-form, ext:mla.mv-form, ext:cross-attention.mv-form; docs/coq.md).

   attention_rows_vec is Eq. 10 with biases (Block.attention_vec) for N x N_e attention matrices H_h whose rows sum
   to any given rho_h (H_h 1 = rho_h): the value bias reaches the output through rho_h.  Its instances:
   - sinks: N_e = N, rho_h = 1 - pi_h (the sink's mass): Block.attention itself, so every block of Block.v with
     sinks is the Eq. 20 box of its theorem, with the dynamic bias of sink_attention_vec;
   - MLA: Block.attention with H~_h = H_h D(x) and the low-rank value map W_DKV Gamma W_UV (mla_attention), rows
     summing to H_h d;
   - cross-attention: rho_h = 1, values from the external E; decoder_eq20 is the Eq. 20 box with the second input
     e' = vec_r E.  The attention matrices, D and pi are given matrices (the values at the actual input). *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype bigop ssralg matrix zmodp.
From Symuat Require Import Kronecker MultiHead Block.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Kron.

Variable R : comRingType.

(* u (x) v^T = vec_r (u v) for a column u and a row v. *)
Lemma kron_col m n (u : 'cV[R]_m) (v : 'rV[R]_n) : vec_r (u *m v) = kron u v^T.
Proof.
apply/colP=> k; case/mxvec_indexP: k => i j.
by rewrite vec_rE !mxE big_ord1 unpairK /= !ord1.
Qed.

Lemma kronBl m1 n1 m2 n2 (A B : 'M[R]_(m1, n1)) (C : 'M[R]_(m2, n2)) : kron (A - B) C = kron A C - kron B C.
Proof. by apply/matrixP=> r c; rewrite !mxE mulrBl. Qed.

Lemma kronDr m1 n1 m2 n2 (A : 'M[R]_(m1, n1)) (B C : 'M[R]_(m2, n2)) : kron A (B + C) = kron A B + kron A C.
Proof. by apply/matrixP=> r c; rewrite !mxE mulrDr. Qed.

Lemma kron_sumr m1 n1 m2 n2 k (A : 'M[R]_(m1, n1)) (B : 'I_k -> 'M[R]_(m2, n2)) :
  kron A (\sum_(h < k) B h) = \sum_(h < k) kron A (B h).
Proof.
apply/matrixP=> r c; rewrite mxE !summxE big_distrr /=.
by apply: eq_bigr => h _; rewrite mxE.
Qed.

End Kron.

Section Rectangular.

Variable R : comRingType.
Variables N Ne M d nH : nat.

(* Concat_h(F_h) W_O = sum_h F_h W_O,h (Eq. 7 for any head outputs F_h). *)
Lemma concat_mul p (F : 'I_nH -> 'M[R]_(p, d)) (W : 'M[R]_(nH * d, M)) :
  concat F *m W = \sum_(h < nH) F h *m head_rows W h.
Proof.
apply/matrixP=> i c; rewrite !mxE summxE sum_pairs; apply: eq_bigr => h _.
rewrite !mxE; apply: eq_bigr => j _.
by rewrite !mxE unpairK.
Qed.

(* Attention with N x N_e matrices H_h: queries from N tokens, keys and values from the N_e rows of E. *)
Definition cross_attention (H : 'I_nH -> 'M[R]_(N, Ne)) (W_V : 'M[R]_(M, nH * d)) (b_V : 'rV[R]_(nH * d))
    (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M) (E : 'M[R]_(Ne, M)) : 'M[R]_(N, M) :=
  concat (fun h => H h *m (E *m head_cols W_V h + rows Ne (head_cols b_V h))) *m W_O + rows N b_O.

(* W_O,h^T b_V,h: the value bias of head h after the output projection (a column). *)
Definition head_bias (b_V : 'rV[R]_(nH * d)) (W_O : 'M[R]_(nH * d, M)) h : 'cV[R]_M :=
  (head_rows W_O h)^T *m (head_cols b_V h)^T.

(* Eq. 10 with biases, rows of H_h summing to rho_h:
   vec_r MHA(E) = (sum_h H_h (x) (W_V,h W_O,h)^T) e' + sum_h rho_h (x) W_O,h^T b_V,h + 1_N (x) b_O. *)
Theorem attention_rows_vec (H : 'I_nH -> 'M[R]_(N, Ne)) (rho : 'I_nH -> 'cV[R]_N) W_V b_V W_O b_O E :
  (forall h, H h *m const_mx 1 = rho h) ->
  vec_r (cross_attention H W_V b_V W_O b_O E)
  = (\sum_(h < nH) kron (H h) (head_cols W_V h *m head_rows W_O h)^T) *m vec_r E
    + \sum_(h < nH) kron (rho h) (head_bias b_V W_O h) + kron (const_mx 1 : 'cV[R]_N) b_O^T.
Proof.
move=> Hrho; rewrite /cross_attention concat_mul vec_rD vec_r_sum mulmx_suml -big_split /=.
rewrite [vec_r (rows N b_O)]kron_col; congr (_ + _); apply: eq_bigr => h _.
rewrite mulmxDr mulmxDl vec_rD /head_bias; congr (_ + _).
  by rewrite mulmxA -mulmxA vec_r_mul.
by rewrite /rows mulmxA -Hrho -mulmxA kron_col trmx_mul.
Qed.

End Rectangular.

(* ---------------------------------------------------------------- attention sinks (ext:attention-sink.mv-form) *)

Section Sinks.

Variable R : comRingType.
Variables N M d nH : nat.

(* b'(x) = 1_N (x) (sum_h W_O,h^T b_V,h + b_O) - sum_h pi_h (x) W_O,h^T b_V,h: dynamic through the sink masses pi_h. *)
Definition sink_bias (pi : 'I_nH -> 'cV[R]_N) (b_V : 'rV[R]_(nH * d)) (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M)
    : 'cV[R]_(N * M) :=
  kron (const_mx 1 : 'cV[R]_N) (\sum_(h < nH) head_bias b_V W_O h + b_O^T)
  - \sum_(h < nH) kron (pi h) (head_bias b_V W_O h).

(* A sink takes the mass pi_h of every row (H_h 1 = 1 - pi_h): Eq. 10's W'_HVO x' (Block.A_op) plus the dynamic bias. *)
Theorem sink_attention_vec (H : 'I_nH -> 'M[R]_N) pi W_V b_V W_O b_O X :
  (forall h, H h *m const_mx 1 = const_mx 1 - pi h) ->
  vec_r (attention H W_V b_V W_O b_O X) = A_op H W_V W_O *m vec_r X + sink_bias pi b_V W_O b_O.
Proof.
move=> Hpi; rewrite (attention_rows_vec (rho := fun h => const_mx 1 - pi h)) //.
rewrite /A_op /sink_bias -addrA kronDr kron_sumr; congr (_ + _).
under eq_bigr do rewrite kronBl.
by rewrite sumrB addrAC.
Qed.

(* So the attention bias a of every block of Block.v (attention_vec, pre_ln_eq20, ...) is the sink bias: with sinks
   each block is the Eq. 20 box of its theorem, W'(x) x' + b'(x). *)
Corollary sink_a_vec (H : 'I_nH -> 'M[R]_N) pi b_V W_O b_O :
  (forall h, H h *m const_mx 1 = const_mx 1 - pi h) -> a_vec H b_V W_O b_O = sink_bias pi b_V W_O b_O.
Proof.
move=> Hpi; have := sink_attention_vec 0 b_V W_O b_O 0 Hpi.
by rewrite attention_vec => /addrI.
Qed.

End Sinks.

(* ---------------------------------------------------------------- latent attention (ext:mla.mv-form) *)

Section Latent.

Variable R : comRingType.
Variables N M r v nH : nat.

(* MLA (DeepSeek-V2/V3): one latent C = D (X W_DKV + 1_N b) Gamma of rank r, D = diag(dn) the latent RMSNorm's given
   inverse RMS per token, Gamma = diag(g) its gain; head h's values C W_UV,h (width v), then W_O,h.  Queries, keys and
   the decoupled rotary key enter the given H_h only. *)
Definition mla (H : 'I_nH -> 'M[R]_N) (dn : 'rV[R]_N) (g : 'rV[R]_r) (W_DKV : 'M[R]_(M, r)) (b : 'rV[R]_r)
    (W_UV : 'M[R]_(r, nH * v)) (W_O : 'M[R]_(nH * v, M)) (b_O : 'rV[R]_M) (X : 'M[R]_(N, M)) : 'M[R]_(N, M) :=
  \sum_(h < nH) H h *m (diag_mx dn *m (X *m W_DKV + rows N b) *m diag_mx g) *m head_cols W_UV h *m head_rows W_O h
  + rows N b_O.

Lemma head_cols_mull p q (A : 'M[R]_(p, q)) (W : 'M[R]_(q, nH * v)) h : head_cols (A *m W) h = A *m head_cols W h.
Proof. by apply/matrixP=> i j; rewrite !mxE; apply: eq_bigr => k _; rewrite mxE. Qed.

Lemma diag_mx_ones (dn : 'rV[R]_N) : diag_mx dn *m const_mx 1 = dn^T.
Proof. by apply/matrixP=> i j; rewrite mul_diag_mx !mxE mulr1 (ord1 j). Qed.

(* MLA is Block's attention with H~_h = H_h D(x) and the low-rank value map W_DKV Gamma W_UV (bias b Gamma W_UV): every
   block of Block.v with MLA is the Eq. 20 box of its theorem. *)
Theorem mla_attention H dn g W_DKV b W_UV W_O b_O X :
  mla H dn g W_DKV b W_UV W_O b_O X
  = attention (fun h => H h *m diag_mx dn) (W_DKV *m diag_mx g *m W_UV) (b *m diag_mx g *m W_UV) W_O b_O X.
Proof.
rewrite /attention concat_mul; congr (_ + _); apply: eq_bigr => h _.
by rewrite !head_cols_mull /rows !(mulmxDl, mulmxDr) !mulmxA.
Qed.

(* ext:mla.mv-form: vec_r MLA(X) = sum_h (H_h D) (x) (W_DKV Gamma W_UV,h W_O,h)^T x'
                                   + sum_h (H_h d) (x) W_O,h^T W_UV,h^T Gamma b + 1_N (x) b_O. *)
Theorem mla_vec H dn g W_DKV b W_UV W_O b_O X :
  vec_r (mla H dn g W_DKV b W_UV W_O b_O X)
  = (\sum_(h < nH) kron (H h *m diag_mx dn) (W_DKV *m diag_mx g *m head_cols W_UV h *m head_rows W_O h)^T)
      *m vec_r X
    + \sum_(h < nH) kron (H h *m dn^T) ((head_rows W_O h)^T *m (head_cols W_UV h)^T *m diag_mx g *m b^T)
    + kron (const_mx 1 : 'cV[R]_N) b_O^T.
Proof.
rewrite mla_attention (attention_rows_vec (rho := fun h => H h *m dn^T)); last first.
  by move=> h; rewrite -mulmxA diag_mx_ones.
have -> : \sum_(h < nH) kron (H h *m dn^T) (head_bias (b *m diag_mx g *m W_UV) W_O h)
          = \sum_(h < nH) kron (H h *m dn^T) ((head_rows W_O h)^T *m (head_cols W_UV h)^T *m diag_mx g *m b^T).
  by apply: eq_bigr => h _; rewrite /head_bias head_cols_mull !trmx_mul tr_diag_mx !mulmxA.
by under eq_bigr do rewrite head_cols_mull.
Qed.

End Latent.

(* ---------------------------------------------------------------- cross-attention (ext:cross-attention.mv-form) *)

Section Cross.

Variable R : comRingType.
Variables N Ne M d nH : nat.

(* Queries from the decoder's N tokens, keys and values from the encoder's output E (N_e rows), rows of the given
   H_h (N x N_e) summing to one: Eq. 10 on the external e' = vec_r E, static bias with the decoder's N rows. *)
Theorem cross_attention_vec (H : 'I_nH -> 'M[R]_(N, Ne)) (W_V : 'M[R]_(M, nH * d)) (b_V : 'rV[R]_(nH * d))
    (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M) (E : 'M[R]_(Ne, M)) :
  (forall h, H h *m const_mx 1 = const_mx 1 :> 'cV[R]_N) ->
  vec_r (cross_attention H W_V b_V W_O b_O E)
  = (\sum_(h < nH) kron (H h) (head_cols W_V h *m head_rows W_O h)^T) *m vec_r E
    + kron (const_mx 1 : 'cV[R]_N) (\sum_(h < nH) head_bias b_V W_O h + b_O^T).
Proof. by move=> H1; rewrite (attention_rows_vec (rho := fun=> const_mx 1)) // -addrA kronDr kron_sumr. Qed.

End Cross.

(* A pre-LN decoder block with cross-attention (T5's decoder): Y = X + MHA(N_1 X), Z = Y + MHA_c(Y, E),
   X_out = Z + FFN(N_3 Z); the cross-attention's queries (from N_2 Y) enter its given H_c,h only.  It is Eq. 20 with a
   second input e' = vec_r E:  x'_out = W'_1 x' + W'_E e' + b'_3 + W'_3 s(W'_2 x' + W'_{2,E} e' + b'_2). *)
Section Decoder.

Variable R : comRingType.
Variables N Ne M d nH dc nHc K : nat.
Variable s : R -> R.
Variable H : 'I_nH -> 'M[R]_N.
Variables (W_V : 'M[R]_(M, nH * d)) (b_V : 'rV[R]_(nH * d)) (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M).
Variable Hc : 'I_nHc -> 'M[R]_(N, Ne).
Variables (Wc_V : 'M[R]_(M, nHc * dc)) (bc_V : 'rV[R]_(nHc * dc)) (Wc_O : 'M[R]_(nHc * dc, M)) (bc_O : 'rV[R]_M).
Variables (D1 D3 : 'M[R]_N) (G1 G3 : 'M[R]_M) (beta1 beta3 : 'rV[R]_M).
Variables (W_in : 'M[R]_(M, K)) (b_in : 'rV[R]_K) (W_out : 'M[R]_(K, M)) (b_out : 'rV[R]_M).

Definition decoder_block (X : 'M[R]_(N, M)) (E : 'M[R]_(Ne, M)) : 'M[R]_(N, M) :=
  let Y := X + attention H W_V b_V W_O b_O (affine_norm D1 G1 beta1 X) in
  let Z := Y + cross_attention Hc Wc_V bc_V Wc_O bc_O E in
  Z + ffn s W_in b_in W_out b_out (affine_norm D3 G3 beta3 Z).

(* P = I + A L_1, p = A beta'_1 + a (the self-attention half, as pre-LN); C = sum_h H_c,h (x) (W_V,h W_O,h)^T and c
   its bias (attention_rows_vec with rho_h = H_c,h 1). *)
Definition dec_P : 'M[R]_(N * M) := 1%:M + A_op H W_V W_O *m L_op D1 G1.
Definition dec_p : 'cV[R]_(N * M) := A_op H W_V W_O *m vec_r (rows N beta1) + a_vec H b_V W_O b_O.
Definition dec_C : 'M[R]_(N * M, Ne * M) := \sum_(h < nHc) kron (Hc h) (head_cols Wc_V h *m head_rows Wc_O h)^T.
Definition dec_c : 'cV[R]_(N * M) :=
  \sum_(h < nHc) kron (Hc h *m const_mx 1) (head_bias bc_V Wc_O h) + kron (const_mx 1 : 'cV[R]_N) bc_O^T.
Definition dec_F1 : 'M[R]_(N * K, N * M) := kron 1%:M W_in^T.
Definition dec_W1 := dec_P.
Definition dec_WE := dec_C.
Definition dec_b3 := dec_p + dec_c + vec_r (rows N b_out).
Definition dec_W2 := dec_F1 *m L_op D3 G3 *m dec_P.
Definition dec_W2E := dec_F1 *m L_op D3 G3 *m dec_C.
Definition dec_b2 := dec_F1 *m (L_op D3 G3 *m (dec_p + dec_c) + vec_r (rows N beta3)) + vec_r (rows N b_in).
Definition dec_W3 : 'M[R]_(N * M, N * K) := kron 1%:M W_out^T.

Theorem decoder_eq20 X E :
  vec_r (decoder_block X E)
  = dec_W1 *m vec_r X + dec_WE *m vec_r E + dec_b3
    + dec_W3 *m map_mx s (dec_W2 *m vec_r X + dec_W2E *m vec_r E + dec_b2).
Proof.
have hY : vec_r (X + attention H W_V b_V W_O b_O (affine_norm D1 G1 beta1 X)) = dec_P *m vec_r X + dec_p.
  rewrite vec_rD attention_vec affine_norm_vec /dec_P /dec_p mulmxDl mul1mx mulmxDr !mulmxA.
  by rewrite !addrA.
have hZ : vec_r (X + attention H W_V b_V W_O b_O (affine_norm D1 G1 beta1 X)
                 + cross_attention Hc Wc_V bc_V Wc_O bc_O E)
          = dec_P *m vec_r X + dec_C *m vec_r E + (dec_p + dec_c).
  rewrite vec_rD hY (attention_rows_vec (rho := fun h => Hc h *m const_mx 1)) // -/dec_C -addrA -/dec_c.
  by rewrite addrACA.
rewrite /decoder_block; cbv zeta; rewrite vec_rD ffn_vec affine_norm_vec hZ /dec_W1 /dec_WE /dec_b3 /dec_W2 /dec_W2E /dec_b2 /dec_W3.
rewrite -/dec_F1; move: dec_P dec_C (dec_p + dec_c) => P C q.
have -> : dec_F1 *m (L_op D3 G3 *m (P *m vec_r X + C *m vec_r E + q) + vec_r (rows N beta3)) + vec_r (rows N b_in)
          = dec_F1 *m L_op D3 G3 *m P *m vec_r X + dec_F1 *m L_op D3 G3 *m C *m vec_r E
            + (dec_F1 *m (L_op D3 G3 *m q + vec_r (rows N beta3)) + vec_r (rows N b_in)).
  by rewrite !mulmxDr !mulmxA !addrA.
by rewrite !addrA [RHS]addrAC.
Qed.

End Decoder.
