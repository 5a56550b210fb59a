(* Beyond the paper: T5's relative position bucket, for every relative position (ext:relative-bias.buckets;
   docs/coq.md).  Plain Coq (Arith, Lia), no MathComp and no real numbers: Coq's Reals rest on axioms
   (ClassicalDedekindReals.sig_forall_dec, sig_not_dec, functional extensionality, classic), so the real-number
   statement is carried by its integer characterisations.

   Parameters: E > 0 exact buckets, c > 0 logarithmic ones (E = B'/2 and c = B' - E for the B' buckets of one side),
   D > E the maximal distance; d >= E the distance.  Over the reals, for every natural j,
     floor(c ln(d/E) / ln(D/E)) >= j  <->  c ln(d/E) >= j ln(D/E)  <->  (d/E)^c >= (D/E)^j  <->  D^j E^c <= d^c E^j
   (ln increasing, ln(x^n) = n ln x), and for every natural t,
     t >= ceil(E (D/E)^(j/c))  <->  t >= E (D/E)^(j/c)  <->  t^c >= E^c (D/E)^j  <->  E^c D^j <= t^c E^j.
   Those two real-number steps are taken as the definitions here: log_floor is the natural number f with
   j <= f <-> D^j E^c <= d^c E^j (log_floor_spec proves that it is one), threshold j the least t with
   E^c D^j <= t^c E^j (threshold_spec).

   threshold_count: #{1 <= j < c : threshold j <= d} = min(log_floor, c - 1), for every d >= E.
   bucket_log_threshold: T5's bucket of a relative position k (bidirectional: delta = |k|, offset B' [k > 0],
   B' = B / 2; causal: delta = max(-k, 0), offset 0, B' = B), written with the capped floor of the logarithm
   (bucket_log) equals the exact-threshold form of the ledger (bucket_threshold) for every k, every B with B' >= 2
   and every D > B'/2. *)

From Coq Require Import Arith Lia ZArith.

(* #{i < n : p i}. *)
Fixpoint count (p : nat -> bool) (n : nat) : nat :=
  match n with
  | 0 => 0
  | S k => count p k + (if p k then 1 else 0)
  end.

(* A predicate true exactly below m is counted min(n, m) times below n. *)
Lemma count_prefix (p : nat -> bool) (m n : nat) :
  (forall i, i < n -> (p i = true <-> i < m)) -> count p n = Nat.min n m.
Proof.
induction n as [|n IH]; intros H; cbn [count]; [reflexivity|].
rewrite IH by (intros i Hi; apply H; lia).
destruct (p n) eqn:Pn.
- assert (n < m) by (apply (H n); auto).
  lia.
- assert (~ n < m) by (intros Hn; apply (H n) in Hn; [congruence|lia]).
  lia.
Qed.

(* A predicate closed downwards and false at n is true exactly below the number of its values below n. *)
Lemma count_down (p : nat -> bool) (n : nat) :
  (forall j, p (S j) = true -> p j = true) -> p n = false ->
  forall j, p j = true <-> j < count p n.
Proof.
intros down Pn0.
assert (below : forall i j, j <= i -> p i = true -> p j = true).
{ intros i j ij; induction ij as [|i ij IH]; intros Pi; auto. }
assert (exists m, m <= n /\ forall j, p j = true <-> j < m) as (m & mn & Hm).
{ revert Pn0; induction n as [|n IH]; intros Pn.
  - exists 0; split; [lia|]; intros j; split; [|lia].
    intros Pj; rewrite (below j 0) in Pn by (lia || auto); discriminate.
  - destruct (p n) eqn:Pn'.
    + exists (S n); split; [lia|]; intros j; split; intros Hj.
      * destruct (le_lt_dec (S n) j) as [nj|]; [|lia].
        rewrite (below j (S n)) in Pn by auto; discriminate.
      * apply (below n); [lia|auto].
    + destruct (IH eq_refl) as (m & mn & Hm); exists m; split; [lia|auto]. }
intros j.
rewrite (count_prefix p m n) by (intros i _; apply Hm).
rewrite Hm; lia.
Qed.

Lemma pow_pos' (a n : nat) : 0 < a -> 0 < a ^ n.
Proof. intros; apply Nat.neq_0_lt_0, Nat.pow_nonzero; lia. Qed.

Section Thresholds.

Variables E c D : nat.
Variable (E_pos : 0 < E).
Variable (c_pos : 0 < c).
Variable (E_lt_D : E < D).

(* (d/E)^c >= (D/E)^j, cleared of denominators. *)
Definition reaches (d j : nat) : bool := D ^ j * E ^ c <=? d ^ c * E ^ j.

(* The least t with t >= E (D/E)^(j/c), i.e. t^c >= E^c (D/E)^j: ceil(E (D/E)^(j/c)), counted below E D^j. *)
Definition threshold (j : nat) : nat := count (fun t => negb (E ^ c * D ^ j <=? t ^ c * E ^ j)) (E * D ^ j).

(* The largest j with (d/E)^c >= (D/E)^j: floor(c ln(d/E) / ln(D/E)), counted up to E d^c. *)
Definition log_floor (d : nat) : nat := count (fun i => reaches d (S i)) (E * d ^ c).

Lemma threshold_spec (j t : nat) : threshold j <= t <-> E ^ c * D ^ j <= t ^ c * E ^ j.
Proof.
set (q := fun t => negb (E ^ c * D ^ j <=? t ^ c * E ^ j)).
assert (Hq : forall t, q t = true <-> t ^ c * E ^ j < E ^ c * D ^ j).
{ intros u; unfold q; rewrite Bool.negb_true_iff, Nat.leb_gt; tauto. }
assert (down : forall u, q (S u) = true -> q u = true).
{ intros u; rewrite !Hq; intros H; eapply Nat.le_lt_trans; [|exact H].
  apply Nat.mul_le_mono_r, Nat.pow_le_mono_l; lia. }
assert (top : q (E * D ^ j) = false).
{ apply Bool.not_true_iff_false; rewrite Hq; apply Nat.le_ngt.
  rewrite Nat.pow_mul_l.
  assert (D ^ j <= (D ^ j) ^ c).
  { destruct c as [|c']; [lia|]; simpl.
    pose proof (pow_pos' (D ^ j) c' ltac:(apply pow_pos'; lia)); nia. }
  transitivity (E ^ c * (D ^ j) ^ c); [apply Nat.mul_le_mono_l; auto|].
  rewrite <- (Nat.mul_1_r (E ^ c * (D ^ j) ^ c)) at 1; apply Nat.mul_le_mono_l.
  apply (pow_pos' E j E_pos). }
pose proof (count_down q _ down top t) as H.
change (threshold j) with (count q (E * D ^ j)).
rewrite Hq in H; lia.
Qed.

(* E (E + 1)^j >= E^j (E + j): Bernoulli's inequality, cleared of denominators. *)
Lemma bernoulli (j : nat) : E ^ j * (E + j) <= E * (E + 1) ^ j.
Proof.
induction j as [|j IH]; simpl; [lia|].
pose proof (pow_pos' E j E_pos); nia.
Qed.

Lemma log_floor_spec (d j : nat) : E <= d -> (j <= log_floor d <-> reaches d j = true).
Proof.
intros Ed.
assert (step : forall j, reaches d (S j) = true -> reaches d j = true).
{ intros i; unfold reaches; rewrite !Nat.leb_le; simpl; intros H.
  pose proof (pow_pos' E i E_pos).
  apply (Nat.mul_le_mono_pos_l _ _ E E_pos).
  transitivity (D * (D ^ i * E ^ c)); [apply Nat.mul_le_mono_r; lia|].
  rewrite Nat.mul_assoc, H; nia. }
assert (top : reaches d (S (E * d ^ c)) = false).
{ apply Bool.not_true_iff_false; unfold reaches; rewrite Nat.leb_le; intros H.
  set (n := S (E * d ^ c)) in H.
  pose proof (bernoulli n) as Hb.
  assert (E + 1 <= D) as ED by lia; apply (Nat.pow_le_mono_l _ _ n) in ED.
  pose proof (pow_pos' E n E_pos); pose proof (pow_pos' E c E_pos).
  assert (E ^ n * n <= E * D ^ n * E ^ c).
  { transitivity (E ^ n * (E + n)); [apply Nat.mul_le_mono_l; lia|].
    transitivity (E * (E + 1) ^ n); [exact Hb|].
    transitivity (E * D ^ n); [apply Nat.mul_le_mono_l; exact ED|].
    rewrite <- (Nat.mul_1_r (E * D ^ n)) at 1; apply Nat.mul_le_mono_l; lia. }
  assert (E * (d ^ c * E ^ n) < E ^ n * n).
  { assert (Ha := pow_pos' E n E_pos); revert Ha; generalize (E ^ n); intros a Ha; unfold n; nia. }
  apply (Nat.mul_le_mono_l _ _ E) in H; lia. }
pose proof (count_down (fun i => reaches d (S i)) (E * d ^ c) (fun i => step (S i)) top) as H.
fold (log_floor d) in H.
destruct j as [|j].
- split; [intros _|lia].
  unfold reaches; apply Nat.leb_le; rewrite !Nat.pow_0_r, !Nat.mul_1_l, Nat.mul_1_r.
  apply Nat.pow_le_mono_l; lia.
- rewrite (H j); lia.
Qed.

(* The count of the thresholds reached by d is the floor of the logarithm, capped at c - 1. *)
Theorem threshold_count (d : nat) : E <= d ->
  count (fun i => threshold (S i) <=? d) (c - 1) = Nat.min (log_floor d) (c - 1).
Proof.
intros Ed; rewrite Nat.min_comm; apply count_prefix; intros i _.
rewrite Nat.leb_le, threshold_spec, <- Nat.leb_le.
assert (E ^ c * D ^ S i <=? d ^ c * E ^ S i = reaches d (S i)) as ->.
{ unfold reaches; rewrite (Nat.mul_comm (E ^ c)); reflexivity. }
rewrite <- log_floor_spec by auto; lia.
Qed.

End Thresholds.

(* T5's bucket of the relative position k = m - n, B buckets, maximal distance D. *)
Definition side (bidirectional : bool) (B : nat) : nat := if bidirectional then B / 2 else B.
Definition offset (bidirectional : bool) (B : nat) (k : Z) : nat :=
  if andb bidirectional (0 <? k)%Z then side bidirectional B else 0.
Definition distance (bidirectional : bool) (k : Z) : nat := if bidirectional then Z.abs_nat k else Z.to_nat (- k).

(* As printed: o + delta below E = B'/2, else o + min(E + floor(ln(delta/E)/ln(D/E) (B' - E)), B' - 1). *)
Definition bucket_log (bidirectional : bool) (B D : nat) (k : Z) : nat :=
  let B' := side bidirectional B in
  let E := B' / 2 in
  let delta := distance bidirectional k in
  offset bidirectional B k
  + (if delta <? E then delta else Nat.min (E + log_floor E (B' - E) D delta) (B' - 1)).

(* The ledger's exact-threshold form: o + E + #{1 <= j < B' - E : ceil(E (D/E)^(j/(B'-E))) <= delta}. *)
Definition bucket_threshold (bidirectional : bool) (B D : nat) (k : Z) : nat :=
  let B' := side bidirectional B in
  let E := B' / 2 in
  let delta := distance bidirectional k in
  offset bidirectional B k
  + (if delta <? E then delta else E + count (fun i => threshold E (B' - E) D (S i) <=? delta) (B' - E - 1)).

Theorem bucket_log_threshold (bidirectional : bool) (B D : nat) (k : Z) :
  2 <= side bidirectional B -> side bidirectional B / 2 < D ->
  bucket_log bidirectional B D k = bucket_threshold bidirectional B D k.
Proof.
intros two ED; unfold bucket_log, bucket_threshold.
set (B' := side bidirectional B) in *; set (delta := distance bidirectional k).
assert (0 < B' / 2) by (apply Nat.div_str_pos; lia).
assert (B' / 2 < B') by (apply Nat.div_lt; lia).
destruct (delta <? B' / 2) eqn:small; [reflexivity|].
apply Nat.ltb_ge in small.
rewrite threshold_count by lia.
f_equal; lia.
Qed.
