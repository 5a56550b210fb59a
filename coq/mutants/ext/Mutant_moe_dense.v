(* Mutant of ext:moe.unselected-experts: dense gating, every expert on every token with the router's probability
   (the choice ignored),
     G_e = diag(P_{.,e})                               (the gate of MoE.dispatch_gate_form: the chosen slots only)
   expect: refuted moe_dense_refuted
   The same claim refuted by the other levels (tests/test_coq.py):
   symuat-entry-mutant: ext:moe.unselected-experts | ext_moe.dense_swapped_rhs *)

From mathcomp Require Import all_ssreflect all_algebra.
From Symuat Require Import MoE.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

Section Mutant.

Variable R : ringType.
Variables N E : nat.

Definition dense_gate (P : 'M[R]_(N, E)) (e : 'I_E) : 'cV[R]_N := col e P.                             (* MUTATED *)

End Mutant.

(* One token, width 1, one slot, two experts, over the rationals: the token chooses expert 1, every probability is 1;
   expert 2 (never chosen) is 0, replaced by the constant 1, which the dense gate lets through. *)
Theorem moe_dense_refuted :
  ~ (forall (H : 'M[rat]_(1, 1)) (F F' : 'I_2 -> 'rV[rat]_1 -> 'rV[rat]_1) (C : 'I_1 -> 'I_1 -> 'I_2)
            (P : 'M[rat]_(1, 2)),
       (forall e x, chosen C e -> F e x = F' e x) -> gate_form (dense_gate P) F H = gate_form (dense_gate P) F' H).
Proof.
pose F' (e : 'I_2) (x : 'rV[rat]_1) : 'rV[rat]_1 := if e == 0 then 0 else const_mx 1.
have FF e x : chosen (fun (_ : 'I_1) (_ : 'I_1) => 0 : 'I_2) e -> (fun _ _ => 0) e x = F' e x.
  by case/existsP=> n /existsP[s /eqP <-].
move/(_ 0 (fun _ _ => 0) F' (fun _ _ => 0) (const_mx 1) FF).
move/matrixP/(_ 0 0); rewrite /gate_form !summxE !big_ord_recr !big_ord0 /= !mul_diag_mx !mxE /=.
by rewrite !(mulr0, mul1r, add0r, addr0) => /eqP; rewrite eq_sym oner_eq0.
Qed.
