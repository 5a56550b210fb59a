(* Every block layout of symuat.numeric.residual_params with the paper's FFN or a gated FFN is an Eq. 20 box
   (ext:block-layouts.eq20), for every N, M, number of heads, head width and FFN width.

   The FFN is any map whose vec_r form is  F_o phi(y') + f_o:  the paper's FFN (Block.ffn_vec) with
   phi(y') = s(F_1 y' + f_1), and a gated FFN (gated_ffn_vec) with phi(y') = act(F_g y' + f_g) .* (F_u y' + f_u).
   block_layouts_eq20 shows that each layout is  vec_r(Block X) = W'_1 x' + b'_3 + W'_3 phi(Q x' + q)  with explicit
   W'_1, b'_3, W'_3, Q, q; so W'_2 = F_1 Q, b'_2 = F_1 q + f_1 (Eq. 20) or W'_2 = F_g Q, b'_2 = F_g q + f_g,
   W'_4 = F_u Q, b'_4 = F_u q + f_u (the gated Eq. 20 of Gated.v). *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype ssralg matrix.
From Symuat Require Import Kronecker MultiHead Block.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section GatedFFN.

Variable R : comRingType.
Variables N M K : nat.
Variable act : R -> R.

(* The entrywise (Hadamard) product. *)
Definition hadamard m n (A B : 'M[R]_(m, n)) : 'M[R]_(m, n) := \matrix_(i, j) (A i j * B i j).

Lemma vec_r_hadamard m n (A B : 'M[R]_(m, n)) : vec_r (hadamard A B) = hadamard (vec_r A) (vec_r B).
Proof. by apply/colP=> k; case/mxvec_indexP: k => i j; rewrite [RHS]mxE !vec_rE mxE. Qed.

(* The gate act(a) .* b. *)
Definition gate_act (a b : 'cV[R]_(N * K)) : 'cV[R]_(N * K) := hadamard (map_mx act a) b.

(* A gated FFN: (act(Y W_g + 1 b_g) .* (Y W_u + 1 b_u)) W_d + 1 b_d. *)
Definition gated_ffn (W_g : 'M[R]_(M, K)) (b_g : 'rV[R]_K) (W_u : 'M[R]_(M, K)) (b_u : 'rV[R]_K)
    (W_d : 'M[R]_(K, M)) (b_d : 'rV[R]_M) (Y : 'M[R]_(N, M)) : 'M[R]_(N, M) :=
  hadamard (map_mx act (Y *m W_g + rows N b_g)) (Y *m W_u + rows N b_u) *m W_d + rows N b_d.

(* ext:gated-ffn.mv-form (with biases): vec_r FFN_g(Y) = (I (x) W_d^T) gate((I (x) W_g^T) y' + f_g, (I (x) W_u^T) y' + f_u) + f_d. *)
Theorem gated_ffn_vec W_g b_g W_u b_u W_d b_d Y :
  vec_r (gated_ffn W_g b_g W_u b_u W_d b_d Y)
  = kron 1%:M W_d^T *m gate_act (kron 1%:M W_g^T *m vec_r Y + vec_r (rows N b_g))
                                (kron 1%:M W_u^T *m vec_r Y + vec_r (rows N b_u)) + vec_r (rows N b_d).
Proof. by rewrite /gated_ffn vec_rD vec_r_mulr vec_r_hadamard vec_r_map !vec_rD !vec_r_mulr. Qed.

End GatedFFN.

Section Layouts.

Variable R : comRingType.
Variables N M d nH : nat.
Variable H : 'I_nH -> 'M[R]_N.
Variables (W_V : 'M[R]_(M, nH * d)) (b_V : 'rV[R]_(nH * d)) (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M).
Variables (D1 D2 : 'M[R]_N) (G1 G2 : 'M[R]_M) (beta1 beta2 : 'rV[R]_M).

Let attn := attention H W_V b_V W_O b_O.
Let N1 := affine_norm D1 G1 beta1.
Let N2 := affine_norm D2 G2 beta2.
Let A := A_op H W_V W_O.
Let a := a_vec H b_V W_O b_O.
Let L1 := L_op D1 G1.
Let L2 := L_op D2 G2.
Let beta1' := vec_r (rows N beta1).
Let beta2' := vec_r (rows N beta2).
Let x' X := vec_r (X : 'M[R]_(N, M)).

(* The six layouts of symuat.numeric.residual_params with an arbitrary FFN. *)
Definition paper_with FFN (X : 'M[R]_(N, M)) := let Y := attn X in Y + FFN Y.
Definition standard_with FFN (X : 'M[R]_(N, M)) := let Y := X + attn X in Y + FFN Y.
Definition pre_ln_with FFN (X : 'M[R]_(N, M)) := let Y := X + attn (N1 X) in Y + FFN (N2 Y).
Definition post_ln_with FFN (X : 'M[R]_(N, M)) := let Y := N1 (X + attn X) in N2 (Y + FFN Y).
Definition parallel_with FFN (X : 'M[R]_(N, M)) := X + attn (N1 X) + FFN (N2 X).
Definition sublayer_with FFN (X : 'M[R]_(N, M)) := let Y := X + N1 (attn X) in Y + N2 (FFN Y).

(* P and p of each layout (the affine map before the FFN). *)
Definition std_P' := 1%:M + A.
Definition pre_P' := 1%:M + A *m L1.
Definition pre_p' := A *m beta1' + a.
Definition post_P' := L1 *m (1%:M + A).
Definition post_p' := L1 *m a + beta1'.
Definition sub_P' := 1%:M + L1 *m A.
Definition sub_p' := L1 *m a + beta1'.

Lemma affine_split m (F : 'M[R]_(m, N * M)) (P : 'M[R]_(N * M)) (x p : 'cV[R]_(N * M)) f : F *m (P *m x + p) + f = F *m P *m x + (F *m p + f).
Proof. by rewrite mulmxDr mulmxA addrA. Qed.

(* ext:block-layouts.eq20: every layout, any FFN with vec_r form F_o phi(y') + f_o, is
   W'_1 x' + b'_3 + W'_3 phi(Q x' + q). *)
Theorem block_layouts_eq20 (FFN : 'M[R]_(N, M) -> 'M[R]_(N, M)) k (phi : 'cV[R]_(N * M) -> 'cV[R]_k)
    (Fo : 'M[R]_(N * M, k)) (fo : 'cV[R]_(N * M)) :
  (forall Y, vec_r (FFN Y) = Fo *m phi (vec_r Y) + fo) ->
  forall X,
  [/\ vec_r (paper_with FFN X) = A *m x' X + (a + fo) + Fo *m phi (A *m x' X + a),
      vec_r (standard_with FFN X) = std_P' *m x' X + (a + fo) + Fo *m phi (std_P' *m x' X + a),
      vec_r (pre_ln_with FFN X)
        = pre_P' *m x' X + (pre_p' + fo) + Fo *m phi (L2 *m pre_P' *m x' X + (L2 *m pre_p' + beta2')),
      vec_r (post_ln_with FFN X)
        = L2 *m post_P' *m x' X + (L2 *m (post_p' + fo) + beta2') + L2 *m Fo *m phi (post_P' *m x' X + post_p')
    & vec_r (parallel_with FFN X)
        = (1%:M + A *m L1) *m x' X + (A *m beta1' + a + fo) + Fo *m phi (L2 *m x' X + beta2')
      /\ vec_r (sublayer_with FFN X)
        = sub_P' *m x' X + (sub_p' + L2 *m fo + beta2') + L2 *m Fo *m phi (sub_P' *m x' X + sub_p')].
Proof.
move=> hF X; rewrite /x'; split.
- by rewrite /paper_with vec_rD hF attention_vec -/A -/a !addrA [RHS]addrAC.
- rewrite /standard_with vec_rD hF.
  have -> : vec_r (X + attn X) = std_P' *m vec_r X + a.
    by rewrite vec_rD attention_vec /std_P' mulmxDl mul1mx addrA.
  by rewrite !addrA [RHS]addrAC.
- rewrite /pre_ln_with vec_rD hF affine_norm_vec -/L2 -/beta2'.
  have -> : vec_r (X + attn (N1 X)) = pre_P' *m vec_r X + pre_p'.
    rewrite vec_rD attention_vec affine_norm_vec /pre_P' /pre_p' mulmxDl mul1mx mulmxDr !mulmxA.
    by rewrite !addrA.
  by rewrite (mulmxDr L2) mulmxA -addrA !addrA [RHS]addrAC.
- rewrite /post_ln_with affine_norm_vec vec_rD hF -/L2 -/beta2'.
  have -> : vec_r (N1 (X + attn X)) = post_P' *m vec_r X + post_p'.
    rewrite affine_norm_vec vec_rD attention_vec /post_P' /post_p' -/L1 -/A -/a -/beta1'.
    by move: L1 A a beta1' => L Am av b; rewrite (mulmxDr L (vec_r X)) mulmxDr mulmxDr mulmxDl mulmx1 !mulmxA !addrA.
  set S := phi _; move: post_P' post_p' S => P p S.
  rewrite (mulmxDr L2 (P *m vec_r X + p)) (mulmxDr L2 (Fo *m S)) (mulmxDr L2 (P *m vec_r X)) (mulmxDr L2 p).
  by rewrite !mulmxA !addrA [RHS]addrAC; congr (_ + _); rewrite addrAC.
- split.
 + rewrite /parallel_with (vec_rD (X + _)) vec_rD attention_vec hF !affine_norm_vec -/A -/a -/L1 -/L2 -/beta1' -/beta2'.
   set S := phi _.
   by rewrite mulmxDl mul1mx !mulmxDr !mulmxA !addrA [RHS]addrAC.
 + rewrite /sublayer_with vec_rD affine_norm_vec hF -/L2 -/beta2'.
   have -> : vec_r (X + N1 (attn X)) = sub_P' *m vec_r X + sub_p'.
     rewrite vec_rD affine_norm_vec attention_vec /sub_P' /sub_p' -/L1 -/A -/a -/beta1'.
     by move: L1 A a beta1' => L Am av b; rewrite mulmxDl mul1mx (mulmxDr L) !mulmxA !addrA.
   set S := phi _; move: sub_P' sub_p' S => P p S.
   rewrite (mulmxDr L2 (Fo *m S)) !mulmxA !addrA [RHS]addrAC; congr (_ + _).
   by rewrite addrAC.
Qed.

End Layouts.
