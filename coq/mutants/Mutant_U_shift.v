(* Mutant "shift-index" of the carried U~ row (symuat.soundness.mutants, table mutation):
     U~_j^(i) = W'_{i-1,1} U~_j^(i-1)  for j < i                 (W'_{i,1} shifted to W'_{i-1,1})
   Every other row as in DUAT.v (R and beta~ use the mutated U~).  expect: refuted U_shift_refuted 
   The same row mutated in SymPy (symuat.soundness.mutants.table_mutants of the depth-3 table, box 3):
   symuat-mutant: \tilde{U}_{1}^{(3)} | shift-index | W'_{2,1}*\tilde{U}_{1}^{(2)} *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import DUAT.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Load DUATVariables.

Fixpoint U_carry_mut j d : 'M[R]_(n, h j) :=
  if d is d'.+1 then W1 (j + d') *m U_carry_mut j d' else W3 j.                        (* MUTATED *)
Definition U_mut j i : 'M[R]_(n, h j) := if (j <= i)%N then U_carry_mut j (i - j) else 0.

Definition mut_form L : 'cV[R]_n :=
  A_tilde W1 L *m x0 + c_tilde W1 b3 L
  + \sum_(1 <= j < L.+1) U_mut j L *m sigma (V_tilde W1 W2 j *m x0 + beta_U W1 b3 W2 b2 sigma x0 U_mut j).

End Mutant.

(* Depth 2 over the rationals, sizes 1: W'_{1,1} = 0, W'_{2,1} = 1, W'_{i,2} = W'_{i,3} = 1, b' = 0, sigma = 1,
   x'_0 = 0: the network gives 2, the mutated table 1. *)
Definition one_h (i : nat) : 'M[rat]_((fun _ => 1%N) i, 1) := 1%:M.
Definition one_o (i : nat) : 'M[rat]_(1, (fun _ => 1%N) i) := 1%:M.
Definition zero_h (i : nat) : 'cV[rat]_((fun _ => 1%N) i) := 0.
Definition const_sigma (k : rat) (i : nat) (v : 'cV[rat]_((fun _ => 1%N) i)) : 'cV[rat]_((fun _ => 1%N) i) := k%:M.

Definition W1_cx (i : nat) : 'M[rat]_1 := if i == 1%N then 0 else 1%:M.

Theorem U_shift_refuted :
  ~ (forall (W1 : nat -> 'M[rat]_1) (b3 : nat -> 'cV[rat]_1) (W2 : forall i, 'M[rat]_((fun _ => 1%N) i, 1))
            (b2 : forall i, 'cV[rat]_((fun _ => 1%N) i)) (W3 : forall i, 'M[rat]_(1, (fun _ => 1%N) i))
            (sigma : forall i, 'cV[rat]_((fun _ => 1%N) i) -> 'cV[rat]_((fun _ => 1%N) i)) (x0 : 'cV[rat]_1),
       net W1 b3 W2 b2 W3 sigma x0 2 = mut_form W1 b3 W2 b2 W3 sigma x0 2).
Proof.
move/(_ W1_cx (fun _ => 0) one_h zero_h one_o (const_sigma 1) 0).
rewrite /mut_form big_ltn // big_nat1 /= /residual_box /const_sigma /U_mut /W1_cx /=.
rewrite ?mul1mx ?mulmx1 ?mulmx0 ?mul0mx ?addr0 ?add0r.
by move/matrixP/(_ 0 0); rewrite !mxE.
Qed.
