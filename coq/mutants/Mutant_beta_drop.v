(* Mutant "drop-term" of the beta~ row (symuat.soundness.mutants, table mutation):
     beta~_i = W'_{i,2} c~_{i-1} + b'_{i,2}                      (the term W'_{i,2} R_{i-1} dropped)
   Every other row as in DUAT.v.  expect: refuted beta_drop_refuted 
   The same row mutated in SymPy (symuat.soundness.mutants.table_mutants of the depth-3 table, box 3):
   symuat-mutant: \tilde{\beta}_{3} | drop-term | W'_{3,2}*\tilde{c}_{2} + b'_{3,2} *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import DUAT.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Load DUATVariables.

Definition beta_mut j : 'cV[R]_(h j) := W2 j *m c_tilde W1 b3 j.-1 + b2 j.          (* MUTATED *)

Definition mut_form L : 'cV[R]_n :=
  A_tilde W1 L *m x0 + c_tilde W1 b3 L
  + \sum_(1 <= j < L.+1) U_tilde W1 W3 j L *m sigma (V_tilde W1 W2 j *m x0 + beta_mut j).

End Mutant.

(* Depth 2 over the rationals, sizes 1: every W' = 1, b'_{1,2} = 1, other b' = 0, sigma = identity, x'_0 = 0.
   The network gives 2 (x'_1 = 1, x'_2 = 1 + sigma(1) = 2), the mutated table 1 (beta~_2 misses W'_{2,2} R_1 = 1). *)
Definition one_h (i : nat) : 'M[rat]_((fun _ => 1%N) i, 1) := 1%:M.
Definition one_o (i : nat) : 'M[rat]_(1, (fun _ => 1%N) i) := 1%:M.
Definition b2_cx (i : nat) : 'cV[rat]_((fun _ => 1%N) i) := if i == 1%N then 1%:M else 0.
Definition id_sigma (i : nat) (v : 'cV[rat]_((fun _ => 1%N) i)) := v.

Theorem beta_drop_refuted :
  ~ (forall (W1 : nat -> 'M[rat]_1) (b3 : nat -> 'cV[rat]_1) (W2 : forall i, 'M[rat]_((fun _ => 1%N) i, 1))
            (b2 : forall i, 'cV[rat]_((fun _ => 1%N) i)) (W3 : forall i, 'M[rat]_(1, (fun _ => 1%N) i))
            (sigma : forall i, 'cV[rat]_((fun _ => 1%N) i) -> 'cV[rat]_((fun _ => 1%N) i)) (x0 : 'cV[rat]_1),
       net W1 b3 W2 b2 W3 sigma x0 2 = mut_form W1 b3 W2 b2 W3 sigma x0 2).
Proof.
move/(_ (fun _ => 1%:M) (fun _ => 0) one_h b2_cx one_o id_sigma 0).
rewrite /mut_form big_ltn // big_nat1 /= /residual_box /U_tilde /beta_mut /V_tilde /= /id_sigma /one_h /one_o /b2_cx /=.
rewrite ?mul1mx ?mulmx1 ?mulmx0 ?mul0mx ?addr0 ?add0r.
by move/matrixP/(_ 0 0); rewrite !mxE.
Qed.
