(* Beyond the paper: the experts no token chose do not change a mixture-of-experts layer, for every number of
   tokens, experts, top-k slots and width (ext:moe.unselected-experts; docs/coq.md).

   A choice C gives token n the expert C n s in slot s (any function 'I_N -> 'I_k -> 'I_E: every choice, the
   distinct top-k ones among them; a repeated expert adds every slot), with the weight W_{n,s} (after any
   renormalisation and scaling).  An expert is any function F_e on the rows of H (an FFN acts on each token's row;
   symuat.layers.moe.dispatch gathers the rows of the tokens that chose e, applies F_e to them and scatter-adds
   them).

   dispatch: the libraries' loop, for every expert e the tokens and slots with C n s = e, W_{n,s} F_e(h_n) added
   to row n.  dispatch_gate_form: it is the gate form sum_e G_e F_e(H) with G_e = diag(g_e),
   g_{n,e} = sum_(s | C n s = e) W_{n,s} (ext:moe.gate-form).  gate_unchosen: g_e = 0 for an expert no token chose.
   gate_form_unselected: the gate form is unchanged when F_e is replaced for every e with G_e = 0.
   unselected_experts: the dispatch is unchanged when the experts no token chose are replaced by any functions. *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype bigop ssralg matrix zmodp.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section MoE.

Variable R : ringType.
Variables N M k E : nat.

(* F_e applied to every row of H. *)
Definition apply_rows (f : 'rV[R]_M -> 'rV[R]_M) (H : 'M[R]_(N, M)) : 'M[R]_(N, M) :=
  \matrix_(n, j) f (row n H) 0 j.

(* The libraries' dispatch: per expert, the (token, slot) pairs that chose it, weighted and added to the token. *)
Definition dispatch (H : 'M[R]_(N, M)) (F : 'I_E -> 'rV[R]_M -> 'rV[R]_M) (C : 'I_N -> 'I_k -> 'I_E)
    (W : 'M[R]_(N, k)) : 'M[R]_(N, M) :=
  \sum_(e < E) \matrix_(n, j) \sum_(s < k | C n s == e) W n s * F e (row n H) 0 j.

(* g_{n,e}: the weights of the slots in which token n chose e. *)
Definition gate (C : 'I_N -> 'I_k -> 'I_E) (W : 'M[R]_(N, k)) (e : 'I_E) : 'cV[R]_N :=
  \col_n \sum_(s < k | C n s == e) W n s.

(* sum_e G_e F_e(H), G_e = diag(g_e). *)
Definition gate_form (g : 'I_E -> 'cV[R]_N) (F : 'I_E -> 'rV[R]_M -> 'rV[R]_M) (H : 'M[R]_(N, M)) :
    'M[R]_(N, M) :=
  \sum_(e < E) diag_mx (g e)^T *m apply_rows (F e) H.

(* Whether some token chose e in some slot. *)
Definition chosen (C : 'I_N -> 'I_k -> 'I_E) (e : 'I_E) : bool := [exists n, exists s, C n s == e].

Theorem dispatch_gate_form H F C W : dispatch H F C W = gate_form (gate C W) F H.
Proof.
rewrite /dispatch /gate_form; apply: eq_bigr => e _; apply/matrixP=> n j.
by rewrite mul_diag_mx !mxE big_distrl.
Qed.

Lemma gate_unchosen C W e : ~~ chosen C e -> gate C W e = 0.
Proof.
move=> ne; apply/colP=> n; rewrite !mxE big1 // => s Cs.
by case/negP: ne; apply/existsP; exists n; apply/existsP; exists s.
Qed.

(* Replacing F_e wherever G_e = 0 (U: a set of experts with zero gates) leaves the gate form unchanged. *)
Theorem gate_form_unselected (U : pred 'I_E) g F F' H :
  (forall e, U e -> g e = 0) -> (forall e x, ~~ U e -> F e x = F' e x) -> gate_form g F H = gate_form g F' H.
Proof.
move=> g0 FF; apply: eq_bigr => e _; case Ue: (U e).
  by rewrite g0 // !mul_diag_mx; apply/matrixP=> n j; rewrite !mxE !mul0r.
by congr (_ *m _); apply/matrixP=> n j; rewrite !mxE FF ?Ue.
Qed.

(* ext:moe.unselected-experts: replacing the experts no token chose (by any functions) does not change the layer. *)
Theorem unselected_experts H F F' C W :
  (forall e x, chosen C e -> F e x = F' e x) -> dispatch H F C W = dispatch H F' C W.
Proof.
move=> FF; rewrite !dispatch_gate_form; apply: (@gate_form_unselected (fun e => ~~ chosen C e)).
  by move=> e; apply: gate_unchosen.
by move=> e x; rewrite negbK; apply: FF.
Qed.

End MoE.
