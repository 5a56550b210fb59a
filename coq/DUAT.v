(* The DUAT theorem (seed 001, App. B.2-B.3, Eq. 20, Eq. 11/33, Figure 2) for every depth and every size.

   A residual box (Eq. 20) is  x'_i = W'_{i,1} x'_{i-1} + b'_{i,3} + W'_{i,3} sigma_i(W'_{i,2} x'_{i-1} + b'_{i,2})
   with arbitrary matrices (the dynamic parameters evaluated at the actual input: given matrices), an
   arbitrary hidden width h i per layer and an arbitrary function sigma_i on 'cV_(h i) (entrywise or not).
   The substitution table of symuat.expansion.table (names A_tilde, c_tilde, U_tilde, V_tilde, beta_tilde,
   R_tilde, same indexing: box 0 = (I, 0, 0), layers 1..L) is a recursive definition, and
   duat_expansion proves  x'_L = A~_L x'_0 + c~_L + sum_(1<=j<=L) U~_j^(L) sigma_j(V~_j x'_0 + beta~_j). *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq bigop ssralg matrix.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section DUAT.

Load DUATVariables.

(* Eq. 20: one residual box. *)
Definition residual_box i (x : 'cV[R]_n) : 'cV[R]_n :=
  W1 i *m x + b3 i + W3 i *m sigma (W2 i *m x + b2 i).

(* The network x'_L = f_L(... f_1(x'_0)). *)
Fixpoint net L : 'cV[R]_n := if L is L'.+1 then residual_box L (net L') else x0.

(* Eq. 20 for the network: layer i+1 applied to x'_i. *)
Lemma eq20 i : net i.+1 = W1 i.+1 *m net i + b3 i.+1 + W3 i.+1 *m sigma (W2 i.+1 *m net i + b2 i.+1).
Proof. by []. Qed.

(* Eq. 21: the first layer. *)
Lemma eq21 : net 1 = W1 1 *m x0 + b3 1 + W3 1 *m sigma (W2 1 *m x0 + b2 1).
Proof. by []. Qed.

(* ---------------------------------------------------------------- the substitution table *)

(* A~_0 = I, A~_i = W'_{i,1} A~_{i-1}. *)
Fixpoint A_tilde i : 'M[R]_n := if i is i'.+1 then W1 i *m A_tilde i' else 1%:M.

(* c~_0 = 0, c~_i = W'_{i,1} c~_{i-1} + b'_{i,3}. *)
Fixpoint c_tilde i : 'cV[R]_n := if i is i'.+1 then W1 i *m c_tilde i' + b3 i else 0.

(* U~_j^(j+d) = W'_{j+d,1} ... W'_{j+1,1} W'_{j,3}, defined by the table's recursion in d = i - j. *)
Fixpoint U_carry j d : 'M[R]_(n, h j) := if d is d'.+1 then W1 (j + d) *m U_carry j d' else W3 j.

(* U~_j^(i): W'_{j,3} in box j, W'_{i,1} U~_j^(i-1) in box i > j (0 before box j). *)
Definition U_tilde j i : 'M[R]_(n, h j) := if (j <= i)%N then U_carry j (i - j) else 0.

(* V~_j = W'_{j,2} A~_{j-1}. *)
Definition V_tilde j : 'M[R]_(h j, n) := W2 j *m A_tilde j.-1.

(* R_i and beta~_j for any choice U of the U~ rows (the paper's printed rule, mutants):
   beta~_j = W'_{j,2} c~_{j-1} + b'_{j,2} + W'_{j,2} R_{j-1},  R_i = sum_(1<=j<=i) U_j^(i) sigma_j(V~_j x'_0 + beta~_j).
   R_fuel is the course-of-values recursion (R_i needs R_{j-1} for every j <= i); R_U i uses fuel i. *)
Section Remainder.
Variable U : forall j, nat -> 'M[R]_(n, h j).

Fixpoint R_fuel fuel i : 'cV[R]_n :=
  if fuel is f.+1 then
    \sum_(1 <= j < i.+1) U j i *m sigma (V_tilde j *m x0 + (W2 j *m c_tilde j.-1 + b2 j + W2 j *m R_fuel f j.-1))
  else 0.

Definition R_U i := R_fuel i i.

Definition beta_U j : 'cV[R]_(h j) := W2 j *m c_tilde j.-1 + b2 j + W2 j *m R_U j.-1.

Lemma R_fuel_stable f g i : (i <= f)%N -> (i <= g)%N -> R_fuel f i = R_fuel g i.
Proof.
elim: f g i => [|f IH] [|g] [|i] //= fi gi; try by rewrite !big_geq.
apply: eq_big_nat => j /andP[j1 ji]; congr (_ *m sigma (_ + (_ + _ *m _))).
have ji' : (j.-1 <= i)%N by rewrite -ltnS prednK.
by apply: IH; apply: leq_trans ji' _.
Qed.

Lemma R_U_def i : R_U i = \sum_(1 <= j < i.+1) U j i *m sigma (V_tilde j *m x0 + beta_U j).
Proof.
case: i => [|i]; first by rewrite big_geq.
rewrite /R_U /=; apply: eq_big_nat => j /andP[j1 ji].
rewrite /beta_U /R_U (@R_fuel_stable i j.-1 j.-1) //.
by rewrite -ltnS prednK.
Qed.

End Remainder.

(* R and beta~ depend on the U~ rows of boxes 1..L only. *)
Lemma R_fuel_ext (U U' : forall j, nat -> 'M[R]_(n, h j)) L :
  (forall j i, (0 < j)%N -> (j <= i)%N -> (i <= L)%N -> U j i = U' j i) ->
  forall f i, (i <= L)%N -> R_fuel U f i = R_fuel U' f i.
Proof.
move=> UU f; elim: f => [|f IH] i iL //=; apply: eq_big_nat => j /andP[j1 ji].
rewrite (UU j i) // IH //; apply: leq_trans iL.
exact: leq_trans (leq_pred j) ji.
Qed.

Definition R_tilde := R_U U_tilde.
Definition beta_tilde := beta_U U_tilde.

(* ---------------------------------------------------------------- the rows of box i (Figure 2) *)

Lemma A_tilde_row i : A_tilde i.+1 = W1 i.+1 *m A_tilde i.
Proof. by []. Qed.

Lemma c_tilde_row i : c_tilde i.+1 = W1 i.+1 *m c_tilde i + b3 i.+1.
Proof. by []. Qed.

Lemma U_tilde_new i : U_tilde i i = W3 i.
Proof. by rewrite /U_tilde leqnn subnn. Qed.

Lemma U_tilde_carried j i : (j <= i)%N -> U_tilde j i.+1 = W1 i.+1 *m U_tilde j i.
Proof.
move=> ji; rewrite /U_tilde ji (leq_trans ji (leqnSn i)) subSn //=.
by rewrite addnS subnKC.
Qed.

Lemma U_tilde_before j i : (i < j)%N -> U_tilde j i = 0.
Proof. by rewrite /U_tilde ltnNge => /negbTE->. Qed.

Lemma V_tilde_row i : V_tilde i.+1 = W2 i.+1 *m A_tilde i.
Proof. by []. Qed.

Lemma beta_tilde_row i : beta_tilde i.+1 = W2 i.+1 *m c_tilde i + b2 i.+1 + W2 i.+1 *m R_tilde i.
Proof. by []. Qed.

Lemma R_tilde_row i : R_tilde i = \sum_(1 <= j < i.+1) U_tilde j i *m sigma (V_tilde j *m x0 + beta_tilde j).
Proof. exact: R_U_def. Qed.

(* Lemma 1 (Eq. 19): a matrix times a sum of sigma terms is the sum of the multiplied terms. *)
Theorem lemma1 m p (B : 'M[R]_(m, p)) (I : Type) (r : seq I) (P : pred I) (F : I -> 'cV[R]_p) :
  B *m (\sum_(k <- r | P k) F k) = \sum_(k <- r | P k) B *m F k.
Proof. exact: mulmx_sumr. Qed.

(* The recursion after Eq. 27, corrected: R_{i+1} = W'_{i+1,1} R_i + W'_{i+1,3} sigma(V~_{i+1} x'_0 + beta~_{i+1}). *)
Theorem R_tilde_step i :
  R_tilde i.+1 = W1 i.+1 *m R_tilde i + W3 i.+1 *m sigma (V_tilde i.+1 *m x0 + beta_tilde i.+1).
Proof.
rewrite R_tilde_row big_nat_recr //= U_tilde_new R_tilde_row lemma1; congr (_ + _).
apply: eq_big_nat => j /andP[_ ji]; by rewrite U_tilde_carried // mulmxA.
Qed.

(* Box i: x'_i = A~_i x'_0 + c~_i + R_i. *)
Theorem duat_box_form i : net i = A_tilde i *m x0 + c_tilde i + R_tilde i.
Proof.
elim: i => [|i IH] /=; first by rewrite mul1mx /R_tilde /R_U /= !addr0.
rewrite IH R_tilde_step /residual_box /beta_tilde /beta_U /V_tilde /= -/(R_tilde i).
by rewrite !mulmxDr !mulmxA !addrA [_ + b3 _]addrAC [_ + b2 _]addrAC.
Qed.

(* Eq. 11 / Eq. 33 with the corrected table, for every depth L. *)
Theorem duat_expansion L :
  net L = A_tilde L *m x0 + c_tilde L
          + \sum_(1 <= j < L.+1) U_tilde j L *m sigma (V_tilde j *m x0 + beta_tilde j).
Proof. by rewrite duat_box_form R_tilde_row. Qed.

(* Figure 2, box by box: box i+1 holds its rows and x'_{i+1} is its DUAT form. *)
Corollary fig2_box i :
  [/\ A_tilde i.+1 = W1 i.+1 *m A_tilde i,
      c_tilde i.+1 = W1 i.+1 *m c_tilde i + b3 i.+1,
      (forall j, (j <= i)%N -> U_tilde j i.+1 = W1 i.+1 *m U_tilde j i) /\ U_tilde i.+1 i.+1 = W3 i.+1,
      V_tilde i.+1 = W2 i.+1 *m A_tilde i /\
      beta_tilde i.+1 = W2 i.+1 *m c_tilde i + b2 i.+1 + W2 i.+1 *m R_tilde i
    & R_tilde i.+1 = \sum_(1 <= j < i.+2) U_tilde j i.+1 *m sigma (V_tilde j *m x0 + beta_tilde j) /\
      net i.+1 = A_tilde i.+1 *m x0 + c_tilde i.+1 + R_tilde i.+1].
Proof.
split => //; first by split; [move=> j; exact: U_tilde_carried | exact: U_tilde_new].
by split; [exact: R_tilde_row | exact: duat_box_form].
Qed.

End DUAT.
