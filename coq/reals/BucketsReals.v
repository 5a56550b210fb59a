(* The real-number step of Buckets.v, over Coq's real numbers (docs/coq.md, "T5's bucket function").

   NOT part of the project (not in _CoqProject, no ledger link, no coq evidence): Coq's Reals rest on the standard
   library's four assumptions of the classical reals (ClassicalDedekindReals.sig_forall_dec and sig_not_dec,
   functional extensionality, excluded middle), and the coq level accepts only theorems closed under the global
   context.  tests/test_coq.py compiles this file against the built project and requires that it rests on exactly
   those four and nothing else.

   For 0 < E < D, 0 < c and natural numbers d >= E, j, t:
   log_real_spec:  j <= c ln(d/E) / ln(D/E)  <->  D^j E^c <= d^c E^j;
   log_floor_real: Int_part (c ln(d/E) / ln(D/E)) = log_floor E c D d  (the floor of the printed bucket);
   threshold_real: threshold E c D j <= t  <->  E Rpower(D/E, j/c) <= t  (threshold j is the ceiling of
   E (D/E)^(j/c), the least natural number above it).
   bucket_real_threshold: the printed bucket over the reals (ln, Int_part), bucket_real, equals the ledger's
   threshold form Buckets.bucket_threshold for every relative position k, every B with B' >= 2 and every D > B'/2. *)

From Coq Require Import Arith Lia Reals Lra.
From Symuat Require Import Buckets.

Local Open Scope R_scope.

Lemma ln_le_iff (u v : R) : 0 < u -> 0 < v -> (ln u <= ln v <-> u <= v).
Proof.
intros pu pv; split; intros H.
- destruct (Rle_or_lt u v) as [|vu]; [auto|].
  pose proof (ln_increasing v u pv vu); lra.
- destruct (Rle_lt_or_eq_dec u v H) as [uv | ->]; [|lra].
  left; apply ln_increasing; auto.
Qed.

Lemma pow_lt_strict (t y : R) (n : nat) : 0 <= t -> t < y -> (0 < n)%nat -> t ^ n < y ^ n.
Proof.
intros t0 ty; induction n as [|n IH]; intros Hn; [lia|].
destruct n as [|n]; [simpl; lra|].
assert (0 < y ^ S n) by (apply pow_lt; lra).
change (t * t ^ S n < y * y ^ S n).
apply Rle_lt_trans with (t * y ^ S n).
- apply Rmult_le_compat_l; [auto|left; apply IH; lia].
- apply Rmult_lt_compat_r; auto.
Qed.

Section Real.

Variables E c D : nat.
Variable (E_pos : (0 < E)%nat).
Variable (c_pos : (0 < c)%nat).
Variable (E_lt_D : (E < D)%nat).

Let e := INR E.
Let b := INR D / INR E.

Lemma e_pos : 0 < e.
Proof. apply lt_0_INR; auto. Qed.

Lemma div_mul (x : R) : x / INR E * INR E = x.
Proof. field; apply not_0_INR; lia. Qed.

Lemma b_gt_1 : 1 < b.
Proof.
unfold b; pose proof e_pos; apply lt_INR in E_lt_D; fold e in E_lt_D |- *.
apply (Rmult_lt_reg_r e); [auto|]; unfold Rdiv; rewrite Rmult_assoc, Rinv_l; lra.
Qed.

(* c ln(d/E) / ln(D/E) >= j  <->  D^j E^c <= d^c E^j. *)
Theorem log_real_spec (d j : nat) : (E <= d)%nat ->
  (INR j <= INR c * ln (INR d / INR E) / ln b <-> (D ^ j * E ^ c <= d ^ c * E ^ j)%nat).
Proof.
intros Ed; pose proof e_pos as pe; pose proof b_gt_1 as pb.
assert (lb : 0 < ln b) by (rewrite <- ln_1; apply ln_increasing; lra).
set (a := INR d / INR E).
assert (pa : 0 < a).
{ unfold a, Rdiv; apply Rmult_lt_0_compat; [|apply Rinv_0_lt_compat; auto].
  apply lt_0_INR; lia. }
assert (step1 : INR j <= INR c * ln a / ln b <-> ln (b ^ j) <= ln (a ^ c)).
{ rewrite !ln_pow by lra; split; intros H.
  - apply (Rmult_le_compat_r (ln b)) in H; [|lra].
    unfold Rdiv in H; rewrite Rmult_assoc, Rinv_l, Rmult_1_r in H; lra.
  - apply (Rmult_le_reg_r (ln b)); [auto|].
    unfold Rdiv; rewrite Rmult_assoc, Rinv_l, Rmult_1_r; lra. }
rewrite step1, ln_le_iff by (apply pow_lt; lra).
assert (bj : b ^ j * e ^ j = INR (D ^ j)).
{ rewrite <- Rpow_mult_distr, pow_INR; unfold b, e; f_equal; apply div_mul. }
assert (ac : a ^ c * e ^ c = INR (d ^ c)).
{ rewrite <- Rpow_mult_distr, pow_INR; unfold a, e; f_equal; apply div_mul. }
assert (pej : 0 < e ^ j) by (apply pow_lt; auto).
assert (pec : 0 < e ^ c) by (apply pow_lt; auto).
split; intros H.
- apply INR_le; rewrite !mult_INR, <- bj, <- ac, !pow_INR; fold e.
  replace (b ^ j * e ^ j * e ^ c) with (b ^ j * (e ^ j * e ^ c)) by ring.
  replace (a ^ c * e ^ c * e ^ j) with (a ^ c * (e ^ j * e ^ c)) by ring.
  apply Rmult_le_compat_r; [|auto]; left; apply Rmult_lt_0_compat; auto.
- apply le_INR in H; rewrite !mult_INR, <- bj, <- ac, !pow_INR in H; fold e in H.
  apply (Rmult_le_reg_r (e ^ j * e ^ c)); [apply Rmult_lt_0_compat; auto|].
  replace (b ^ j * (e ^ j * e ^ c)) with (b ^ j * e ^ j * e ^ c) by ring.
  replace (a ^ c * (e ^ j * e ^ c)) with (a ^ c * e ^ c * e ^ j) by ring; auto.
Qed.

(* log_floor is the floor of c ln(d/E) / ln(D/E). *)
Theorem log_floor_real (d : nat) : (E <= d)%nat ->
  Int_part (INR c * ln (INR d / INR E) / ln (INR D / INR E)) = Z.of_nat (log_floor E c D d).
Proof.
intros Ed; fold b.
set (y := INR c * ln (INR d / INR E) / ln b); set (f := log_floor E c D d).
assert (low : INR f <= y).
{ unfold y; rewrite log_real_spec by auto; apply Nat.leb_le.
  apply (log_floor_spec E c D E_pos c_pos E_lt_D d f Ed); lia. }
assert (high : y < INR (S f)).
{ destruct (Rlt_or_le y (INR (S f))) as [|H]; [auto|].
  unfold y in H; rewrite log_real_spec in H by auto; apply Nat.leb_le in H.
  apply (log_floor_spec E c D E_pos c_pos E_lt_D d (S f) Ed) in H; fold f in H; lia. }
unfold Int_part.
rewrite <- (tech_up y (Z.of_nat (S f))); [lia| |].
- rewrite <- INR_IZR_INZ; auto.
- rewrite <- INR_IZR_INZ, S_INR; lra.
Qed.

(* threshold j is the least natural t >= E (D/E)^(j/c): the ceiling of E (D/E)^(j/c), a positive real. *)
Theorem threshold_real (j t : nat) :
  (threshold E c D j <= t)%nat <-> e * Rpower b (INR j / INR c) <= INR t.
Proof.
pose proof e_pos as pe; pose proof b_gt_1 as pb.
assert (pc : 0 < INR c) by (apply lt_0_INR; auto).
set (y := e * Rpower b (INR j / INR c)).
assert (py : 0 < y) by (unfold y, Rpower; apply Rmult_lt_0_compat; [auto|apply exp_pos]).
assert (yc : y ^ c * e ^ j = INR (E ^ c * D ^ j)).
{ unfold y; rewrite Rpow_mult_distr, <- (Rpower_pow c (Rpower b (INR j / INR c))) by (unfold Rpower; apply exp_pos).
  rewrite Rpower_mult.
  replace (INR j / INR c * INR c) with (INR j) by (field; lra).
  rewrite Rpower_pow by lra; rewrite mult_INR, !pow_INR; fold e.
  replace (INR D) with (b * e) by (apply div_mul).
  rewrite Rpow_mult_distr; ring. }
assert (pej : 0 < e ^ j) by (apply pow_lt; auto).
rewrite threshold_spec by auto.
split; intros H.
- apply le_INR in H; rewrite <- yc, mult_INR, !pow_INR in H; fold e in H.
  apply Rmult_le_reg_r in H; [|auto].
  destruct (Rle_or_lt y (INR t)) as [|ty]; [auto|].
  pose proof (pow_lt_strict (INR t) y c (pos_INR t) ty c_pos); lra.
- apply INR_le; rewrite <- yc, mult_INR, !pow_INR; fold e.
  apply Rmult_le_compat_r; [lra|]; apply pow_incr; lra.
Qed.

End Real.

(* The bucket as printed, over the reals: o + delta below E = B'/2, else
   o + min(E + floor(ln(delta/E) / ln(D/E) (B' - E)), B' - 1) (Int_part: the floor). *)
Definition bucket_real (bidirectional : bool) (B D : nat) (k : Z) : nat :=
  let B' := side bidirectional B in
  let E := (B' / 2)%nat in
  let delta := distance bidirectional k in
  (offset bidirectional B k
   + (if delta <? E then delta
      else Nat.min (E + Z.to_nat (Int_part (ln (INR delta / INR E) / ln (INR D / INR E) * INR (B' - E))))
                   (B' - 1)))%nat.

Theorem bucket_real_threshold (bidirectional : bool) (B D : nat) (k : Z) :
  (2 <= side bidirectional B)%nat -> (side bidirectional B / 2 < D)%nat ->
  bucket_real bidirectional B D k = bucket_threshold bidirectional B D k.
Proof.
intros two ED; rewrite <- bucket_log_threshold by auto; unfold bucket_real, bucket_log.
set (B' := side bidirectional B) in *; set (delta := distance bidirectional k).
assert (0 < B' / 2)%nat by (apply Nat.div_str_pos; lia).
assert (B' / 2 < B')%nat by (apply Nat.div_lt; lia).
destruct (delta <? B' / 2) eqn:small; [reflexivity|].
apply Nat.ltb_ge in small.
assert (Int_part (ln (INR delta / INR (B' / 2)) / ln (INR D / INR (B' / 2)) * INR (B' - B' / 2))
        = Z.of_nat (log_floor (B' / 2) (B' - B' / 2) D delta)) as ->.
{ rewrite <- log_floor_real by lia; f_equal; unfold Rdiv; ring. }
rewrite Nat2Z.id; reflexivity.
Qed.
