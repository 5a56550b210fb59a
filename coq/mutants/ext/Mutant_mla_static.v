(* Mutant of ext:mla.mv-form: Eq. 10 read with the paper's static value bias (rows of H~_h = H_h D summing to one),
     sum_h 1_N (x) W_O,h^T W_UV,h^T Gamma b                    (for sum_h (H_h d) (x) W_O,h^T W_UV,h^T Gamma b)
   expect: refuted mla_static_refuted 
   The same claim refuted by the other levels (tests/test_coq.py):
   symuat-entry-mutant: ext:mla.mv-form | ext_mla.static_bias_rhs *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import Kronecker MultiHead Block ExtAttention.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Variable R : comRingType.
Variables N M r v nH : nat.

Definition static_bias (g : 'rV[R]_r) (b : 'rV[R]_r) (W_UV : 'M[R]_(r, nH * v)) (W_O : 'M[R]_(nH * v, M))
    (b_O : 'rV[R]_M) : 'cV[R]_(N * M) :=
  \sum_(h < nH) kron (const_mx 1 : 'cV[R]_N) ((head_rows W_O h)^T *m (head_cols W_UV h)^T *m diag_mx g *m b^T)
  + kron (const_mx 1 : 'cV[R]_N) b_O^T.                                                                 (* MUTATED *)

End Mutant.

(* One head, sizes 1, over the rationals: H = 0, d = g = b = W_UV = W_O = 1, the rest 0: the latent bias reaches the
   output through H d = 0, the static bias says it reaches it whole. *)
Theorem mla_static_refuted :
  ~ (forall (H : 'I_1 -> 'M[rat]_1) (dn g : 'rV[rat]_1) (W_DKV : 'M[rat]_1) (b : 'rV[rat]_1)
            (W_UV : 'M[rat]_(1, 1 * 1)) (W_O : 'M[rat]_(1 * 1, 1)) (b_O : 'rV[rat]_1) (X : 'M[rat]_1),
       vec_r (mla H dn g W_DKV b W_UV W_O b_O X)
       = (\sum_(h < 1) kron (H h *m diag_mx dn) (W_DKV *m diag_mx g *m head_cols W_UV h *m head_rows W_O h)^T)
           *m vec_r X
         + static_bias 1 g b W_UV W_O b_O).
Proof.
move/(_ (fun=> 0) (const_mx 1) (const_mx 1) 0 (const_mx 1) (const_mx 1) (const_mx 1) 0 0).
rewrite mla_vec /static_bias -!addrA => /addrI /addIr; rewrite !big_ord1 !mul0mx.
by move/matrixP/(_ 0 0)/eqP; rewrite !mxE mul0r !(big_ord1, mxE, mul1r, mulr1, eqxx) eq_sym oner_eq0.
Qed.
