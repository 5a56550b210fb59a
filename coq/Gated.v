(* The gated table (symuat.expansion.extended, the ext:gated-ffn entries), every depth and size.

   Gated Eq. 20:  x'_i = W'_{i,1} x'_{i-1} + b'_{i,3} + W'_{i,3} g_i(W'_{i,2} x'_{i-1} + b'_{i,2}, W'_{i,4} x'_{i-1} + b'_{i,4})
   with an arbitrary two-argument gate g_i (a gated FFN: act(a) times b entrywise).  A~, c~, U~, V~ keep the rows of DUAT.v;
   P~_i = W'_{i,4} A~_{i-1}, gamma~_i = W'_{i,4} c~_{i-1} + b'_{i,4} + W'_{i,4} R_{i-1},
   R_i = sum_(1<=j<=i) U~_j^(i) g_j(V~_j x'_0 + beta~_j, P~_j x'_0 + gamma~_j). *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq bigop ssralg matrix.
From Symuat Require Import DUAT.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Gated.

Variable R : ringType.
Variable n : nat.
Variable h : nat -> nat.
Variable W1 : nat -> 'M[R]_n.
Variable b3 : nat -> 'cV[R]_n.
Variable W2 : forall i, 'M[R]_(h i, n).
Variable b2 : forall i, 'cV[R]_(h i).
Variable W4 : forall i, 'M[R]_(h i, n).
Variable b4 : forall i, 'cV[R]_(h i).
Variable W3 : forall i, 'M[R]_(n, h i).
Variable gate : forall i, 'cV[R]_(h i) -> 'cV[R]_(h i) -> 'cV[R]_(h i).
Variable x0 : 'cV[R]_n.

Definition gated_box i (x : 'cV[R]_n) : 'cV[R]_n :=
  W1 i *m x + b3 i + W3 i *m gate (W2 i *m x + b2 i) (W4 i *m x + b4 i).

Fixpoint gated_net L : 'cV[R]_n := if L is L'.+1 then gated_box L (gated_net L') else x0.

Let A := A_tilde W1.
Let c := c_tilde W1 b3.
Let U := U_tilde W1 W3.
Let V := V_tilde W1 W2.

(* P~_j = W'_{j,4} A~_{j-1}. *)
Definition P_tilde j : 'M[R]_(h j, n) := W4 j *m A j.-1.

Fixpoint Rg_fuel fuel i : 'cV[R]_n :=
  if fuel is f.+1 then
    \sum_(1 <= j < i.+1) U j i *m gate (V j *m x0 + (W2 j *m c j.-1 + b2 j + W2 j *m Rg_fuel f j.-1))
                                      (P_tilde j *m x0 + (W4 j *m c j.-1 + b4 j + W4 j *m Rg_fuel f j.-1))
  else 0.

Definition Rg_tilde i := Rg_fuel i i.
Definition beta_g j : 'cV[R]_(h j) := W2 j *m c j.-1 + b2 j + W2 j *m Rg_tilde j.-1.
Definition gamma_tilde j : 'cV[R]_(h j) := W4 j *m c j.-1 + b4 j + W4 j *m Rg_tilde j.-1.

Lemma Rg_fuel_stable f g i : (i <= f)%N -> (i <= g)%N -> Rg_fuel f i = Rg_fuel g i.
Proof.
elim: f g i => [|f IH] [|g] [|i] //= fi gi; try by rewrite !big_geq.
apply: eq_big_nat => j /andP[j1 ji].
have ji' : (j.-1 <= i)%N by rewrite -ltnS prednK.
by rewrite (IH g j.-1) //; apply: leq_trans ji' _.
Qed.

(* The R row of the gated table. *)
Lemma Rg_tilde_row i :
  Rg_tilde i = \sum_(1 <= j < i.+1) U j i *m gate (V j *m x0 + beta_g j) (P_tilde j *m x0 + gamma_tilde j).
Proof.
case: i => [|i]; first by rewrite big_geq.
rewrite /Rg_tilde /=; apply: eq_big_nat => j /andP[j1 ji].
by rewrite /beta_g /gamma_tilde /Rg_tilde (@Rg_fuel_stable i j.-1 j.-1) // -ltnS prednK.
Qed.

Lemma P_tilde_row i : P_tilde i.+1 = W4 i.+1 *m A i.
Proof. by []. Qed.

Lemma gamma_tilde_row i : gamma_tilde i.+1 = W4 i.+1 *m (c i + Rg_tilde i) + b4 i.+1.
Proof. by rewrite /gamma_tilde /= mulmxDr addrAC. Qed.

Lemma beta_g_row i : beta_g i.+1 = W2 i.+1 *m c i + b2 i.+1 + W2 i.+1 *m Rg_tilde i.
Proof. by []. Qed.

(* ext:gated-ffn.table: the rows P~_i, gamma~_i and R_i of the gated table. *)
Theorem gated_table i :
  [/\ P_tilde i.+1 = W4 i.+1 *m A i,
      gamma_tilde i.+1 = W4 i.+1 *m (c i + Rg_tilde i) + b4 i.+1
    & Rg_tilde i.+1 = \sum_(1 <= j < i.+2) U j i.+1 *m gate (V j *m x0 + beta_g j) (P_tilde j *m x0 + gamma_tilde j)].
Proof. by split; [exact: P_tilde_row | exact: gamma_tilde_row | exact: Rg_tilde_row]. Qed.

Theorem Rg_tilde_step i :
  Rg_tilde i.+1 = W1 i.+1 *m Rg_tilde i
                  + W3 i.+1 *m gate (V i.+1 *m x0 + beta_g i.+1) (P_tilde i.+1 *m x0 + gamma_tilde i.+1).
Proof.
rewrite Rg_tilde_row big_nat_recr //= /U U_tilde_new Rg_tilde_row mulmx_sumr; congr (_ + _).
by apply: eq_big_nat => j /andP[_ ji]; rewrite U_tilde_carried // mulmxA.
Qed.

(* ext:gated-ffn.induction: for every depth L,
   x'_L = A~_L x'_0 + c~_L + sum_(1<=j<=L) U~_j^(L) g_j(V~_j x'_0 + beta~_j, P~_j x'_0 + gamma~_j). *)
Theorem gated_duat_expansion L :
  gated_net L = A L *m x0 + c L
    + \sum_(1 <= j < L.+1) U j L *m gate (V j *m x0 + beta_g j) (P_tilde j *m x0 + gamma_tilde j).
Proof.
rewrite -Rg_tilde_row; elim: L => [|L IH] /=; first by rewrite mul1mx /Rg_tilde /= !addr0.
rewrite IH Rg_tilde_step /gated_box /beta_g /gamma_tilde /V /P_tilde /V_tilde /A /c /= -/(Rg_tilde L).
by rewrite !mulmxDr !mulmxA !addrA [_ + b3 _]addrAC [_ + b2 _]addrAC [_ + b4 _]addrAC.
Qed.

End Gated.
