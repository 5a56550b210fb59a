(* The printed rule of Eq. 11/33 (seed 001, list after Eq. 11, rule 4), W'_{j,3} = W'_{j+1,1} W'_{j,3}, is false.

   Read as a row of the substitution table (symuat.expansion.table, mutated as in derivations/duat_residual.py):
   box j+1 multiplies only layer j's W'_{j,3} by W'_{j+1,1}, so U_j^(i) = W'_{j+1,1} W'_{j,3} for every i > j
   instead of W'_{i,1} ... W'_{j+1,1} W'_{j,3}.  Every other row (A~, c~, V~, beta~, R) is the table's, with the
   printed U in R and beta~.  eq11_rule4_refuted: an explicit depth-3 network over the rationals (1 x 1 matrices,
   sigma the constant 1) whose output is not the printed DUAT sum.

   Figure 2, box 2, row 3 (duat:appB.fig2.box2.row3) prints W'_{1,3} = W'_{2,1} b'_{1,3} + b'_{2,3} (row 2's right-hand
   side, a vector, copied into the matrix row U~_1^(2)).  It is ill-typed unless the hidden width is 1; at width 1
   fig2_row3_refuted gives a depth-2 network over the rationals whose output is not Figure 2's DUAT sum. *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq bigop ssralg rat matrix zmodp.
From Symuat Require Import DUAT.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Printed.

Load DUATVariables.

(* The printed row: U_j^(j) = W'_{j,3}, U_j^(i) = W'_{j+1,1} W'_{j,3} for i > j. *)
Definition U_printed j i : 'M[R]_(n, h j) :=
  if i == j then W3 j else if (j < i)%N then W1 j.+1 *m W3 j else 0.

(* The DUAT sum of the table with the printed row. *)
Definition printed_form L : 'cV[R]_n :=
  A_tilde W1 L *m x0 + c_tilde W1 b3 L
  + \sum_(1 <= j < L.+1) U_printed j L *m sigma (V_tilde W1 W2 j *m x0 + beta_U W1 b3 W2 b2 sigma x0 U_printed j).

(* At depths 1 and 2 the printed rule gives the table's rows: depth 3 is the smallest counterexample. *)
Lemma U_printed_low j i : (0 < j)%N -> (j <= i)%N -> (i <= 2)%N -> U_printed j i = U_tilde W1 W3 j i.
Proof.
move=> j0 ji i2; rewrite /U_printed; case: eqP => [->|ne]; first by rewrite U_tilde_new.
have [j1 i2'] : j = 1%N /\ i = 2%N.
  by case: j j0 ji ne => [|[|[|j]]] //; case: i i2 => [|[|[|i]]].
by rewrite j1 i2' /= U_tilde_carried // U_tilde_new.
Qed.

Theorem printed_rule_agrees_below_depth_3 L : (L <= 2)%N -> net W1 b3 W2 b2 W3 sigma x0 L = printed_form L.
Proof.
move=> L2; rewrite duat_expansion /printed_form; congr (_ + _).
apply: eq_big_nat => j /andP[j1 jL]; rewrite U_printed_low //.
congr (_ *m sigma (_ + _)); rewrite /beta_tilde /beta_U /R_U.
rewrite (@R_fuel_ext _ _ _ _ _ _ _ _ _ U_printed (U_tilde W1 W3) L) //.
  by move=> j' i' j0 ji iL; rewrite U_printed_low // (leq_trans iL).
by rewrite (leq_trans (leq_pred j)) // -ltnS (leq_trans jL).
Qed.

End Printed.

Section Counterexample.

(* Depth 3 over the rationals, x' of size 1, hidden width 1: W'_{3,1} = 0, every other W'_{i,1} = 1,
   W'_{i,2} = 0, W'_{i,3} = 1, b' = 0, sigma = 1 (constant), x'_0 = 0.  The network gives 1, the printed sum 2. *)
Definition cx_W1 (i : nat) : 'M[rat]_1 := if i == 3%N then 0 else 1%:M.
Definition cx_b3 (i : nat) : 'cV[rat]_1 := 0.
Definition cx_W2 (i : nat) : 'M[rat]_((fun _ => 1%N) i, 1) := 0.
Definition cx_b2 (i : nat) : 'cV[rat]_((fun _ => 1%N) i) := 0.
Definition cx_W3 (i : nat) : 'M[rat]_(1, (fun _ => 1%N) i) := 1%:M.
Definition cx_sigma (i : nat) (v : 'cV[rat]_((fun _ => 1%N) i)) : 'cV[rat]_((fun _ => 1%N) i) := 1%:M.
Definition cx_x0 : 'cV[rat]_1 := 0.

Lemma cx_net : net cx_W1 cx_b3 cx_W2 cx_b2 cx_W3 cx_sigma cx_x0 3 = 1%:M.
Proof.
rewrite duat_expansion /cx_x0 mulmx0 add0r.
rewrite big_ltn // big_ltn // big_nat1.
rewrite /U_tilde /= /cx_sigma /cx_W1 /cx_W3 /cx_b3 /=.
by rewrite ?mul0mx ?mulmx1 ?mul1mx ?mulmx0 ?add0r ?addr0.
Qed.

Lemma cx_printed : printed_form cx_W1 cx_b3 cx_W2 cx_b2 cx_W3 cx_sigma cx_x0 3 = 1%:M + 1%:M.
Proof.
rewrite /printed_form /cx_x0 mulmx0 add0r.
rewrite big_ltn // big_ltn // big_nat1.
rewrite /U_printed /= /cx_sigma /cx_W1 /cx_W3 /cx_b3 /=.
by rewrite ?mul0mx ?mulmx1 ?mul1mx ?mulmx0 ?add0r ?addr0.
Qed.

End Counterexample.

(* duat:eq11.part2.rule4 / duat:eq33.part2.rule4 (erratum): the printed rule does not give the network output. *)
Theorem eq11_rule4_refuted :
  ~ (forall (W1 : nat -> 'M[rat]_1) (b3 : nat -> 'cV[rat]_1) (W2 : forall i, 'M[rat]_((fun _ => 1%N) i, 1))
            (b2 : forall i, 'cV[rat]_((fun _ => 1%N) i)) (W3 : forall i, 'M[rat]_(1, (fun _ => 1%N) i))
            (sigma : forall i, 'cV[rat]_((fun _ => 1%N) i) -> 'cV[rat]_((fun _ => 1%N) i)) (x0 : 'cV[rat]_1),
       net W1 b3 W2 b2 W3 sigma x0 3 = printed_form W1 b3 W2 b2 W3 sigma x0 3).
Proof.
move/(_ cx_W1 cx_b3 cx_W2 cx_b2 cx_W3 cx_sigma cx_x0); rewrite cx_net cx_printed.
by move/matrixP/(_ 0 0); rewrite !mxE.
Qed.

(* ---------------------------------------------------------------- Figure 2, box 2, row 3 *)

Section Fig2Row3.

Let one (i : nat) := 1%N.
Variable W1 : nat -> 'M[rat]_1.
Variable b3 : nat -> 'cV[rat]_1.
Variable W2 : forall i, 'M[rat]_(one i, 1).
Variable b2 : forall i, 'cV[rat]_(one i).
Variable W3 : forall i, 'M[rat]_(1, one i).
Variable sigma : forall i, 'cV[rat]_(one i) -> 'cV[rat]_(one i).
Variable x0 : 'cV[rat]_1.

(* The table with Figure 2's box 2: U~_1^(2) = W'_{2,1} b'_{1,3} + b'_{2,3} (row 3 as printed), every other row derived. *)
Definition U_fig2 j i : 'M[rat]_(1, one j) :=
  if (j == 1%N) && (i == 2%N) then W1 2 *m b3 1 + b3 2 else U_tilde W1 W3 j i.

Definition fig2_form L : 'cV[rat]_1 :=
  A_tilde W1 L *m x0 + c_tilde W1 b3 L
  + \sum_(1 <= j < L.+1) U_fig2 j L *m sigma (V_tilde W1 W2 j *m x0 + beta_U W1 b3 W2 b2 sigma x0 U_fig2 j).

End Fig2Row3.

(* duat:appB.fig2.box2.row3 and duat:appB.fig2 (erratum): depth 2, W'_{i,1} = W'_{i,3} = 1, W'_{i,2} = 0, b' = 0,
   sigma = 1, x'_0 = 0: the network gives 2, Figure 2's box 2 gives 1. *)
Theorem fig2_row3_refuted :
  ~ (forall (W1 : nat -> 'M[rat]_1) (b3 : nat -> 'cV[rat]_1) (W2 : forall i, 'M[rat]_((fun _ => 1%N) i, 1))
            (b2 : forall i, 'cV[rat]_((fun _ => 1%N) i)) (W3 : forall i, 'M[rat]_(1, (fun _ => 1%N) i))
            (sigma : forall i, 'cV[rat]_((fun _ => 1%N) i) -> 'cV[rat]_((fun _ => 1%N) i)) (x0 : 'cV[rat]_1),
       net W1 b3 W2 b2 W3 sigma x0 2 = fig2_form W1 b3 W2 b2 W3 sigma x0 2).
Proof.
move/(_ (fun _ => 1%:M) cx_b3 cx_W2 cx_b2 cx_W3 cx_sigma cx_x0).
rewrite /fig2_form big_ltn // big_nat1 /= /residual_box /U_fig2 /U_tilde /cx_sigma /cx_W3 /cx_b3 /cx_x0 /=.
rewrite ?mul0mx ?mulmx1 ?mul1mx ?mulmx0 ?add0r ?addr0.
by move/matrixP/(_ 0 0); rewrite !mxE.
Qed.
