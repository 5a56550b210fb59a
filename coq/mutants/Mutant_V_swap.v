(* Mutant "swap-W2-W3" of the V~ row (symuat.soundness.mutants, table mutation):
     V~_i = W'_{i,3} A~_{i-1}                                   (W'_{i,2} and W'_{i,3} swapped)
   For every size this row is ill-typed: W'_{i,3} is n x h_i, so W'_{i,3} A~_{i-1} needs h_i = n and its value is n x n,
   not h_i x n.  expect: ill-typed (coqc fails on the line marked MUTATED) 
   The same row mutated in SymPy (symuat.soundness.mutants.table_mutants of the depth-3 table, box 3):
   symuat-mutant: \tilde{V}_{3} | swap-W2-W3 | W'_{3,3}*\tilde{A}_{2} *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import DUAT.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Load DUATVariables.

Definition V_mut j : 'M[R]_(h j, n) := W3 j *m A_tilde W1 j.-1.                       (* MUTATED *)

End Mutant.
