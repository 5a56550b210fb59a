(* Mutant of ext:cross-attention.mv-form: Eq. 10's operator applied to the decoder's own stream x' = vec_r X (the
   self-attention reading) instead of the encoder's e' = vec_r E.  For every size this is ill-typed: H_h is N x N_e,
   so sum_h H_h (x) (W_V,h W_O,h)^T is NM x N_e M and cannot multiply x' (NM rows) unless N_e = N.
   expect: ill-typed (coqc fails on the line marked MUTATED) 
   The same claim refuted by the other levels at N = N_e (tests/test_coq.py):
   symuat-entry-mutant: ext:cross-attention.mv-form | ext_cross_attention.decoder_stream_rhs *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import Kronecker MultiHead Block ExtAttention.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Variable R : comRingType.
Variables N Ne M d nH : nat.

Definition stream_form (H : 'I_nH -> 'M[R]_(N, Ne)) (W_V : 'M[R]_(M, nH * d)) (b_V : 'rV[R]_(nH * d))
    (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M) (X : 'M[R]_(N, M)) : 'cV[R]_(N * M) :=
  (\sum_(h < nH) kron (H h) (head_cols W_V h *m head_rows W_O h)^T) *m vec_r X                           (* MUTATED *)
  + kron (const_mx 1 : 'cV[R]_N) (\sum_(h < nH) head_bias b_V W_O h + b_O^T).

End Mutant.
