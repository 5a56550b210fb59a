(* An input transform as box 0 and a final norm as an affine box (symuat.expansion.extended: input_transform,
   final=affine_term; entries ext:input-transform.table, ext:final-norm.table, ext:input-final.induction).

   Box 0:     x'_(0) = W'_{0,1} x'_0 + b'_{0,3}, so A~_0 = W'_{0,1}, c~_0 = b'_{0,3} instead of I, 0;
   box L+1:   x'_out = W'_{L+1,1} x'_L + b'_{L+1,3} (no new term): A~_{L+1} = W'_{L+1,1} A~_L,
              c~_{L+1} = W'_{L+1,1} c~_L + b'_{L+1,3}, U~_j^(L+1) = W'_{L+1,1} U~_j^(L). *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq bigop ssralg matrix.
From Symuat Require Import DUAT.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section InputFinal.

Variable R : ringType.
Variable n : nat.
Variable h : nat -> nat.
Variable W1 : nat -> 'M[R]_n.
Variable b3 : nat -> 'cV[R]_n.
Variable W2 : forall i, 'M[R]_(h i, n).
Variable b2 : forall i, 'cV[R]_(h i).
Variable W3 : forall i, 'M[R]_(n, h i).
Variable sigma : forall i, 'cV[R]_(h i) -> 'cV[R]_(h i).
Variable x0 : 'cV[R]_n.
Variables (W01 : 'M[R]_n) (b03 : 'cV[R]_n).     (* box 0: W'_{0,1}, b'_{0,3} *)
Variables (Wf : 'M[R]_n) (bf : 'cV[R]_n).       (* box L+1: W'_{L+1,1}, b'_{L+1,3} *)

(* The transformed input x'_(0) and the layers after it. *)
Definition x_in := W01 *m x0 + b03.
Definition net_in L := net W1 b3 W2 b2 W3 sigma x_in L.

(* The table with box 0 = (W'_{0,1}, b'_{0,3}). *)
Fixpoint A_in i : 'M[R]_n := if i is i'.+1 then W1 i *m A_in i' else W01.
Fixpoint c_in i : 'cV[R]_n := if i is i'.+1 then W1 i *m c_in i' + b3 i else b03.
Definition V_in j : 'M[R]_(h j, n) := W2 j *m A_in j.-1.
Definition R_in i := R_tilde W1 b3 W2 b2 W3 sigma x_in i.
Definition beta_in j : 'cV[R]_(h j) := W2 j *m c_in j.-1 + b2 j + W2 j *m R_in j.-1.

Lemma A_in_row0 : A_in 0 = W01. Proof. by []. Qed.
Lemma c_in_row0 : c_in 0 = b03. Proof. by []. Qed.

Lemma A_inE i : A_in i = A_tilde W1 i *m W01.
Proof. by elim: i => [|i IH] /=; rewrite ?mul1mx // IH mulmxA. Qed.

Lemma c_inE i : c_in i = A_tilde W1 i *m b03 + c_tilde W1 b3 i.
Proof. by elim: i => [|i IH] /=; rewrite ?mul1mx ?addr0 // IH mulmxDr mulmxA addrA. Qed.

Lemma arg_in j : V_in j *m x0 + beta_in j
  = V_tilde W1 W2 j *m x_in + beta_tilde W1 b3 W2 b2 W3 sigma x_in j.
Proof.
rewrite /V_in /beta_in /V_tilde /beta_tilde /beta_U /x_in A_inE c_inE -/(R_tilde _ _ _ _ _ _ _).
by rewrite -/(R_in _) !mulmxDr !mulmxA !addrA.
Qed.

(* The R row of the table with an input transform. *)
Lemma R_in_row i : R_in i = \sum_(1 <= j < i.+1) U_tilde W1 W3 j i *m sigma (V_in j *m x0 + beta_in j).
Proof. by rewrite /R_in R_tilde_row; apply: eq_big_nat => j _; rewrite arg_in. Qed.

(* Every depth with box 0: x'_L = A~_L x'_0 + c~_L + sum_(1<=j<=L) U~_j^(L) sigma(V~_j x'_0 + beta~_j). *)
Theorem input_duat_expansion L :
  net_in L = A_in L *m x0 + c_in L + \sum_(1 <= j < L.+1) U_tilde W1 W3 j L *m sigma (V_in j *m x0 + beta_in j).
Proof.
rewrite /net_in duat_box_form -R_in_row -/(R_in L) A_inE c_inE /x_in.
by rewrite mulmxDr mulmxA addrA.
Qed.

(* The final affine box. *)
Definition A_fin L := Wf *m A_in L.
Definition c_fin L := Wf *m c_in L + bf.
Definition U_fin j L : 'M[R]_(n, h j) := Wf *m U_tilde W1 W3 j L.

(* ext:input-final.induction: x'_out = A~_{L+1} x'_0 + c~_{L+1} + sum_(1<=j<=L) U~_j^(L+1) sigma(V~_j x'_0 + beta~_j). *)
Theorem input_final_duat_expansion L :
  Wf *m net_in L + bf
  = A_fin L *m x0 + c_fin L + \sum_(1 <= j < L.+1) U_fin j L *m sigma (V_in j *m x0 + beta_in j).
Proof.
rewrite input_duat_expansion !mulmxDr mulmx_sumr /A_fin /c_fin /U_fin mulmxA.
under eq_bigr do rewrite mulmxA.
by rewrite addrA addrAC.
Qed.

End InputFinal.
