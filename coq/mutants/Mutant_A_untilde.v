(* Mutant "untilde" of the A~ row (symuat.soundness.mutants; the paper's 'original' reading of Eq. 26 rule 1):
     A~_i = W'_{i,1} W'_{i-1,1}                (layer i-1's own matrix instead of the transformed A~_{i-1})
   Every other row as in DUAT.v (V~ uses the mutated A~).  expect: refuted A_untilde_refuted 
   The same row mutated in SymPy (symuat.soundness.mutants.table_mutants of the depth-3 table, box 3):
   symuat-mutant: \tilde{A}_{3} | untilde | W'_{3,1}*W'_{2,1} *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import DUAT.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Load DUATVariables.

Definition A_mut i : 'M[R]_n :=
  if i is i'.+1 then W1 i *m (if i' is 0 then 1%:M else W1 i') else 1%:M.            (* MUTATED *)
Definition c_mut := c_tilde W1 b3.
Definition V_mut j : 'M[R]_(h j, n) := W2 j *m A_mut j.-1.
Fixpoint R_fuel_mut fuel i : 'cV[R]_n :=
  if fuel is f.+1 then
    \sum_(1 <= j < i.+1) U_tilde W1 W3 j i
       *m sigma (V_mut j *m x0 + (W2 j *m c_mut j.-1 + b2 j + W2 j *m R_fuel_mut f j.-1))
  else 0.
Definition R_mut i := R_fuel_mut i i.
Definition beta_mut j : 'cV[R]_(h j) := W2 j *m c_mut j.-1 + b2 j + W2 j *m R_mut j.-1.

Definition mut_form L : 'cV[R]_n :=
  A_mut L *m x0 + c_mut L + \sum_(1 <= j < L.+1) U_tilde W1 W3 j L *m sigma (V_mut j *m x0 + beta_mut j).

End Mutant.

(* Depth 3 over the rationals, sizes 1: W'_{1,1} = 0, W'_{2,1} = W'_{3,1} = 1, W'_{i,2} = W'_{i,3} = 1, b' = 0,
   sigma = 0, x'_0 = 1: the network gives 0, the mutated table 1 (smallest depth: 3, as for symuat). *)
Definition one_h (i : nat) : 'M[rat]_((fun _ => 1%N) i, 1) := 1%:M.
Definition one_o (i : nat) : 'M[rat]_(1, (fun _ => 1%N) i) := 1%:M.
Definition zero_h (i : nat) : 'cV[rat]_((fun _ => 1%N) i) := 0.
Definition const_sigma (k : rat) (i : nat) (v : 'cV[rat]_((fun _ => 1%N) i)) : 'cV[rat]_((fun _ => 1%N) i) := k%:M.

Definition W1_cx (i : nat) : 'M[rat]_1 := if i == 1%N then 0 else 1%:M.

Theorem A_untilde_refuted :
  ~ (forall (W1 : nat -> 'M[rat]_1) (b3 : nat -> 'cV[rat]_1) (W2 : forall i, 'M[rat]_((fun _ => 1%N) i, 1))
            (b2 : forall i, 'cV[rat]_((fun _ => 1%N) i)) (W3 : forall i, 'M[rat]_(1, (fun _ => 1%N) i))
            (sigma : forall i, 'cV[rat]_((fun _ => 1%N) i) -> 'cV[rat]_((fun _ => 1%N) i)) (x0 : 'cV[rat]_1),
       net W1 b3 W2 b2 W3 sigma x0 3 = mut_form W1 b3 W2 b2 W3 sigma x0 3).
Proof.
move/(_ W1_cx (fun _ => 0) one_h zero_h one_o (const_sigma 0) 1%:M).
rewrite /mut_form big_ltn // big_ltn // big_nat1 /= /residual_box /const_sigma /A_mut /W1_cx /=.
rewrite ?mul1mx ?mulmx1 ?mulmx0 ?mul0mx ?addr0 ?add0r.
rewrite ?mul_mx_scalar ?scale0r ?addr0 ?add0r.
by move/matrixP/(_ 0 0); rewrite !mxE.
Qed.
