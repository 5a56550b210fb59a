(* Mutant "drop-term" of the c~ row (symuat.soundness.mutants, table mutation):
     c~_i = W'_{i,1} c~_{i-1}                                   (the term b'_{i,3} dropped)
   Every other row as in DUAT.v (beta~ and R use the mutated c~).  expect: refuted c_drop_refuted 
   The same row mutated in SymPy (symuat.soundness.mutants.table_mutants of the depth-3 table, box 3):
   symuat-mutant: \tilde{c}_{3} | drop-term | W'_{3,1}*\tilde{c}_{2} *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import DUAT.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Load DUATVariables.

Definition A_mut := A_tilde W1.
Fixpoint c_mut i : 'cV[R]_n := if i is i'.+1 then W1 i *m c_mut i' else 0.             (* MUTATED *)
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

(* Depth 1 over the rationals, sizes 1: W' = 1, b'_{1,3} = 1, b'_{1,2} = 0, sigma = 0, x'_0 = 0: the network gives 1,
   the mutated table 0. *)
Definition one_h (i : nat) : 'M[rat]_((fun _ => 1%N) i, 1) := 1%:M.
Definition one_o (i : nat) : 'M[rat]_(1, (fun _ => 1%N) i) := 1%:M.
Definition zero_h (i : nat) : 'cV[rat]_((fun _ => 1%N) i) := 0.
Definition const_sigma (k : rat) (i : nat) (v : 'cV[rat]_((fun _ => 1%N) i)) : 'cV[rat]_((fun _ => 1%N) i) := k%:M.

Theorem c_drop_refuted :
  ~ (forall (W1 : nat -> 'M[rat]_1) (b3 : nat -> 'cV[rat]_1) (W2 : forall i, 'M[rat]_((fun _ => 1%N) i, 1))
            (b2 : forall i, 'cV[rat]_((fun _ => 1%N) i)) (W3 : forall i, 'M[rat]_(1, (fun _ => 1%N) i))
            (sigma : forall i, 'cV[rat]_((fun _ => 1%N) i) -> 'cV[rat]_((fun _ => 1%N) i)) (x0 : 'cV[rat]_1),
       net W1 b3 W2 b2 W3 sigma x0 1 = mut_form W1 W2 b2 W3 sigma x0 1).
Proof.
move/(_ (fun _ => 1%:M) (fun _ => 1%:M) one_h zero_h one_o (const_sigma 0) 0).
rewrite /mut_form big_nat1 /= /residual_box /const_sigma /A_mut /=.
rewrite ?mul1mx ?mulmx1 ?mulmx0 ?mul0mx ?addr0 ?add0r.
by move/matrixP/(_ 0 0); rewrite !mxE.
Qed.
