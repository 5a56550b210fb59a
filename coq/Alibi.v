(* Beyond the paper: ALiBi position biases as built by BLOOM, for every size (ext:alibi.closed-form; docs/coq.md).

   BLOOM builds the key positions from the attention mask of p left-padded tokens followed by the real ones:
   pos = (cumsum(mask) - 1) * mask.  alibi_positions: pos_m = max(m - p, 0) (the truncated subtraction (m - p)%N)
   for every key m, every N and p.  The bias m_h pos_m of head h is added to the scores S_h inside the softmax and
   the scores are masked (a padded query sees itself only, a real query the real keys m <= n).

   alibi_closed_form is the ledger's identity: the softmax numerator is any function e (exp) times a normaliser
   z_{h,n} (free, the same on both sides), and BLOOM's loop (cumulative-mask positions, its own visibility test) on
   the left equals Eq. 10's closed form sum_h H_h (x) (W_V,h W_O,h)^T x' with H_h the masked weights of
   S_h + m_h 1 p^T (p_m = max(m - p, 0)) under a sliding window of width N (symuat.layers.attention_scores).
   The scores S_h are given N x N matrices (any values, in particular Q_h K_h^T at the actual input).

   softmax_shift: over a field, the normalised weights e(s_m) / sum_k e(s_k) of a row are unchanged by a constant
   added to every score of the row, for any e with e(a + b) = e(a) e(b) and no zero value (exp on the reals).
   alibi_relative_closed_form: with these softmax weights, BLOOM's layer equals the closed form whose H_h is the
   softmax of the relative bias S_h + m_h (p_m - p_n) (the key-position bias differs from it by m_h p_n, a constant
   of row n). *)

From mathcomp Require Import ssreflect ssrbool ssrfun eqtype ssrnat seq fintype bigop ssralg matrix zmodp.
From Symuat Require Import Kronecker MultiHead.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import GRing.Theory.
Local Open Scope ring_scope.

(* sum_(i < m) [p <= i] = m - p in nat. *)
Lemma count_from (p m : nat) : (\sum_(i < m) (p <= i) = m - p)%N.
Proof.
elim: m => [|m IH]; first by rewrite big_ord0.
rewrite big_ord_recr /= IH; case: (leqP p m) => pm; first by rewrite subSn // addn1.
by rewrite /= addn0 (eqP (ltnW pm)) (eqP pm).
Qed.

Section Positions.

Variable R : ringType.
Variables N p : nat.

(* The attention mask: 0 on the p left-padded tokens, 1 on the real ones. *)
Definition pad_mask (k : nat) : R := (p <= k)%N%:R.

(* BLOOM's key positions (cumsum(mask) - 1) * mask. *)
Definition cumsum_pos (m : 'I_N) : R := (\sum_(k < N | (k <= m)%N) pad_mask k - 1) * pad_mask m.

(* The position of key m counted over the real tokens: max(m - p, 0). *)
Theorem alibi_positions (m : 'I_N) : cumsum_pos m = (m - p)%:R.
Proof.
rewrite /cumsum_pos /pad_mask.
have -> : \sum_(k < N | (k <= m)%N) ((p <= k)%N%:R : R) = \sum_(k < m.+1) ((p <= k)%N%:R : R).
  rewrite (big_ord_widen_cond _ (fun k => true) (fun k => ((p <= k)%N%:R : R)) (ltn_ord m)) /=.
  by apply: eq_bigl => k.
rewrite -natr_sum count_from; case: (leqP p m) => pm.
  by rewrite subSn // mulr1 -addn1 natrD addrK.
by rewrite mulr0 (eqP (ltnW pm)).
Qed.

End Positions.

Section Closed.

Variable R : comRingType.
Variables N M d nH p : nat.

(* BLOOM's visibility: a padded query (n < p) sees itself, a real query the real keys up to itself. *)
Definition bloom_visible (n m : 'I_N) : bool := if (n < p)%N then m == n else ((p <= m) && (m <= n))%N.

(* symuat's sliding_window_mask N w p: the same with n - m < w. *)
Definition window_allowed (w : nat) (n m : 'I_N) : bool :=
  if (n < p)%N then m == n else [&& p <= m, m <= n & n - m < w]%N.

Lemma window_full n m : window_allowed N n m = bloom_visible n m.
Proof.
rewrite /window_allowed /bloom_visible; case: (n < p)%N => //.
by rewrite (leq_ltn_trans (leq_subr m n) (ltn_ord n)) andbT.
Qed.

(* alibi_bias: m_h 1 p^T with p_m = max(m - p, 0). *)
Definition alibi_bias (sl : R) : 'M[R]_N := \matrix_(n, m) (sl * (m - p)%:R).

(* The softmax numerator e(S_nm) times the row's normaliser z_n on allowed entries, 0 elsewhere. *)
Definition masked_weights (e : R -> R) (S : 'M[R]_N) (allowed : 'I_N -> 'I_N -> bool) (z : 'cV[R]_N) : 'M[R]_N :=
  \matrix_(n, m) (if allowed n m then e (S n m) * z n 0 else 0).

(* BLOOM's order: the bias from the cumulative mask added to the scores, then the visibility. *)
Definition bloom_weights (e : R -> R) (sl : R) (S : 'M[R]_N) (z : 'cV[R]_N) : 'M[R]_N :=
  \matrix_(n, m) (if bloom_visible n m then e (sl * cumsum_pos R p m + S n m) * z n 0 else 0).

Lemma alibi_weights e sl S z :
  bloom_weights e sl S z = masked_weights e (S + alibi_bias sl) (window_allowed N) z.
Proof.
apply/matrixP=> n m; rewrite !mxE window_full alibi_positions.
by case: (bloom_visible n m) => //; rewrite addrC.
Qed.

(* The ledger's identity, every N, p, number of heads, head width and M: BLOOM's layer (the per-head sum of
   symuat_paper.ext_attention_variants._library) = Eq. 10's closed form with H_h = masked_weights of S_h + m_h 1 p^T. *)
Theorem alibi_closed_form (e : R -> R) (sl : 'I_nH -> R) (S : 'I_nH -> 'M[R]_N) (z : 'I_nH -> 'cV[R]_N)
    (X : 'M[R]_(N, M)) (W_V : 'M[R]_(M, nH * d)) (W_O : 'M[R]_(nH * d, M)) :
  vec_r (\sum_(h < nH) bloom_weights e (sl h) (S h) (z h) *m X *m head_cols W_V h *m head_rows W_O h)
  = (\sum_(h < nH) kron (masked_weights e (S h + alibi_bias (sl h)) (window_allowed N) (z h))
                        (head_cols W_V h *m head_rows W_O h)^T) *m vec_r X.
Proof.
rewrite -mha_sum mha_closed_form; congr (_ *m _); apply: eq_bigr => h _.
by rewrite alibi_weights.
Qed.

End Closed.

Section Softmax.

Variable F : fieldType.
Variables N M d nH p : nat.

(* Softmax of row s over the allowed keys: e(s_m) / sum_(k allowed) e(s_k), 0 on the other keys. *)
Definition softmax_row (e : F -> F) (allowed : 'I_N -> bool) (s : 'I_N -> F) (m : 'I_N) : F :=
  if allowed m then e (s m) / \sum_(k < N | allowed k) e (s k) else 0.

Definition softmax_mx (e : F -> F) (allowed : 'I_N -> 'I_N -> bool) (S : 'M[F]_N) : 'M[F]_N :=
  \matrix_(n, m) softmax_row e (allowed n) (fun k => S n k) m.

(* A constant added to every score of a row leaves its softmax unchanged. *)
Theorem softmax_shift (e : F -> F) allowed (s : 'I_N -> F) (c : F) :
  (forall a b, e (a + b) = e a * e b) -> (forall a, e a != 0) ->
  softmax_row e allowed (fun k => s k + c) =1 softmax_row e allowed s.
Proof.
move=> eD e0 m; rewrite /softmax_row; case: (allowed m) => //.
under eq_bigr => k _ do rewrite eD.
by rewrite eD -big_distrl /= invfM mulrACA mulfV // mulr1.
Qed.

(* The softmax is the masked numerator with z_n = 1 / sum_(k allowed) e(S_nk): the ledger's free normaliser. *)
Lemma softmax_masked e allowed (S : 'M[F]_N) :
  softmax_mx e allowed S
  = masked_weights e S allowed (\col_n (\sum_(k < N | allowed n k) e (S n k))^-1).
Proof. by apply/matrixP=> n m; rewrite !mxE /softmax_row; case: (allowed n m). Qed.

(* The relative bias m_h (p_m - p_n), p_m = max(m - p, 0). *)
Definition relative_bias (sl : F) : 'M[F]_N := \matrix_(n, m) (sl * ((m - p)%:R - (n - p)%:R)).

(* BLOOM's layer with the real softmax (key positions from the cumulative mask) = Eq. 10's closed form whose H_h
   is the softmax of the relative bias. *)
Theorem alibi_relative_closed_form (e : F -> F) (sl : 'I_nH -> F) (S : 'I_nH -> 'M[F]_N)
    (X : 'M[F]_(N, M)) (W_V : 'M[F]_(M, nH * d)) (W_O : 'M[F]_(nH * d, M)) :
  (forall a b, e (a + b) = e a * e b) -> (forall a, e a != 0) ->
  vec_r (\sum_(h < nH) softmax_mx e (@bloom_visible N p)
                         (\matrix_(n, m) (sl h * cumsum_pos F p m + S h n m)) *m X *m head_cols W_V h
                       *m head_rows W_O h)
  = (\sum_(h < nH) kron (softmax_mx e (window_allowed p N) (S h + relative_bias (sl h)))
                        (head_cols W_V h *m head_rows W_O h)^T) *m vec_r X.
Proof.
move=> eD e0; rewrite -mha_sum mha_closed_form; congr (_ *m _); apply: eq_bigr => h _; congr (kron _ _).
apply/matrixP=> n m; rewrite [LHS]mxE [RHS]mxE.
have sh k : (\matrix_(n0, m0) (sl h * cumsum_pos F p m0 + S h n0 m0)) n k
            = (S h + relative_bias (sl h)) n k + sl h * (n - p)%:R.
  by rewrite !mxE alibi_positions mulrBr -addrA subrK addrC.
rewrite -(softmax_shift (window_allowed p N n) (fun k => (S h + relative_bias (sl h)) n k) (sl h * (n - p)%:R)
          eD e0 m).
rewrite /softmax_row window_full.
under [in RHS]eq_bigl => k do rewrite window_full.
rewrite sh; case: (bloom_visible p n m) => //; congr (_ * _^-1).
by apply: eq_bigr => k _; rewrite sh.
Qed.

End Softmax.
