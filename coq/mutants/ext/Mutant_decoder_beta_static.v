(* Mutant of ext:cross-attention.induction: e' dropped from the sigma arguments, the table's beta~ of the network
   without the second input (b'_{j,2} in place of b'_{j,2} + W'_{j,2E} e'),
     beta~_j = W'_{j,2} (c~_{j-1} + R_{j-1}) + b'_{j,2}   (Decoder.beta_tilde_ext: + W'_{j,2E} e')
   while c~ keeps its e'-term.
   expect: refuted decoder_beta_static_refuted
   The same claim refuted by the other levels (tests/test_coq.py):
   symuat-entry-mutant: ext:cross-attention.induction | ext_cross_attention.static_beta_rhs *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import DUAT Decoder.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Load DUATVariables.
Variable m : nat.
Variable WE : nat -> 'M[R]_(n, m).
Variable e : 'cV[R]_m.

Definition beta_static j : 'cV[R]_(h j) := beta_tilde W1 (b3e b3 WE e) W2 b2 W3 sigma x0 j.              (* MUTATED *)

End Mutant.

(* One layer, sizes 1, over the rationals, sigma the identity: every weight 0 but W'_{1,3} = W'_{1,2E} = 1, e' = 1.
   The layer outputs W'_{1,3} W'_{1,2E} e' = 1; without e' in beta~_1 the sum is 0. *)
Theorem decoder_beta_static_refuted :
  ~ (forall (h : nat -> nat) (W1 : nat -> 'M[rat]_1) (b3 : nat -> 'cV[rat]_1) (W2 : forall i, 'M[rat]_(h i, 1))
            (b2 : forall i, 'cV[rat]_(h i)) (W3 : forall i, 'M[rat]_(1, h i))
            (sigma : forall i, 'cV[rat]_(h i) -> 'cV[rat]_(h i)) (x0 : 'cV[rat]_1) (WE : nat -> 'M[rat]_1)
            (W2E : forall i, 'M[rat]_(h i, 1)) (e : 'cV[rat]_1) L,
       ext_net W1 b3 W2 b2 W3 sigma x0 WE W2E e L
       = A_tilde W1 L *m x0 + (c_tilde W1 b3 L + E_tilde W1 WE L *m e)
         + \sum_(1 <= j < L.+1) U_tilde W1 W3 j L
             *m sigma j (V_tilde W1 W2 j *m x0 + beta_static W1 b3 W2 b2 W3 sigma x0 WE e j)).
Proof.
move/(_ (fun _ => 1%N) (fun _ => 0) (fun _ => 0) (fun _ => 0) (fun _ => 0) (fun _ => 1%:M) (fun _ v => v) 0
        (fun _ => 0) (fun _ => 1%:M) 1%:M 1%N).
rewrite /= /ext_box big_nat1 U_tilde_new /beta_static beta_tilde_row /V_tilde /=.
rewrite !(mul0mx, mulmx0, mul1mx, addr0, add0r) => /matrixP/(_ 0 0).
by rewrite !mxE /= => /eqP; rewrite oner_eq0.
Qed.
