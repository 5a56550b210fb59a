r"""Ledger entries and the Coq theorems that state them (the ``coq`` evidence level, docs/coq.md).

Each link names ``"<File>.<name>"`` of ``coq/<File>.v``; ``negation=True`` marks a refuted printed statement
whose theorem states its negation (for the denial of Diamond distributivity: the denied identity).  A derivation
module passes its entries through :func:`linked` so that each carries its link.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from symuat import CoqLink, Entry

__all__ = ["COQ_LINKS", "CORRECTION_LINKS", "linked"]

#: entry id -> (the Coq link, what the theorem says of the entry when read as the entry's note says)
COQ_LINKS: dict[str, tuple[CoqLink, str]] = {
    'duat:appB.fig2': (CoqLink('Erratum.fig2_row3_refuted', negation=True),
        'Figure 2 with box 2 as printed (fails only through row 3); depth-2 counterexample over Q.'),
    'duat:appB.fig2.box1.part1': (CoqLink('DUAT.fig2_box'),
        "Box i+1 = 1: x'_1 = A~_1 x'_0 + c~_1 + R_1 on the merged Eq. 20 network (the equation of box 1)."),
    'duat:appB.fig2.box2.part1': (CoqLink('DUAT.fig2_box'),
        "Box 2's equation x'_2 = A~_2 x'_0 + c~_2 + R_2, the left-hand symbols read as the table's values."),
    'duat:appB.fig2.box1.part2': (CoqLink('DUAT.fig2_box'),
        "Box i+1 = 1: rows and x'_1 = A~_1 x'_0 + c~_1 + R_1."),
    'duat:appB.fig2.box2.part2': (CoqLink('DUAT.fig2_box'),
        'Box 2.'),
    'duat:appB.fig2.box2.row1': (CoqLink('DUAT.fig2_box'),
        "Row A~_2 = W'_{2,1} A~_1 (A~_1 = W'_{1,1})."),
    'duat:appB.fig2.box2.row2': (CoqLink('DUAT.fig2_box'),
        "Row c~_2 = W'_{2,1} c~_1 + b'_{2,3} (c~_1 = b'_{1,3})."),
    'duat:appB.fig2.box2.row3': (CoqLink('Erratum.fig2_row3_refuted', negation=True),
        'Ill-typed unless the hidden width is 1; at width 1 a depth-2 counterexample over Q.'),
    'duat:appB.fig2.box2.row4': (CoqLink('DUAT.fig2_box'),
        "Row V~_2 = W'_{2,2} A~_1."),
    'duat:appB.fig2.box2.row5': (CoqLink('DUAT.fig2_box'),
        "Row beta~_2 = W'_{2,2} c~_1 + b'_{2,2} + W'_{2,2} R_1."),
    'duat:appB.fig2.box3.part2': (CoqLink('DUAT.fig2_box'),
        'Box 3.'),
    'duat:defUATR.part4': (CoqLink('DUAT.duat_expansion'),
        "x'_i = A~_i x'_0 + c~_i + UAT_i^R with UAT_i^R the sum over j <= i."),
    'duat:eq10': (CoqLink('MultiHead.mha_closed_form'),
        "W' = sum_h H_h (x) (W_V,h W_O,h)^T."),
    'duat:eq10.lemma1': (CoqLink('Kronecker.kron_mul'),
        'Mixed-product rule.'),
    'duat:eq10.part1': (CoqLink('Paths.eq10_heads'),
        "vec_r(sum_h H_h X W_V,h W_O,h) = (sum_h H_h (x) (W_V,h W_O,h)^T) x', every number of heads and size: the "
        'length-1 paths.'),
    'duat:eq10.part2': (CoqLink('Paths.stack_paths'),
        "x'_L = (sum over the (1 + h)^L paths of (H^(l_k)...H^(l_1)) (x) (W_OV^(l_k)...W_OV^(l_1))) x'_0 for every "
        'depth L (the entry: L = 1, 2) and every size.'),
    'duat:eq10.part3': (CoqLink('Paths.stack_paths'),
        'The conclusion of the induction at every depth (its inductive case is the step F_{L+1} sum_{paths <= L} = '
        'sum_{paths <= L+1}).'),
    'duat:eq11': (CoqLink('DUAT.duat_expansion'),
        "Read with the table's meaning (A~_L, c~_L, U~_j^(L), V~_j, beta~_j), every depth L, every size, "
        'sigma arbitrary.'),
    'duat:eq11.part2.rule4': (CoqLink('Erratum.eq11_rule4_refuted', negation=True),
        'The printed rule as a table row; explicit depth-3 counterexample over Q.'),
    'duat:fig3': (CoqLink('Density.fig3_density'),
        "nnz(W (x) I_M) / (NM)^2 = 1/M for an N x N W with no zero entry (N, M > 0), over any integral domain "
        '(nnz(A (x) B) = nnz A nnz B).'),
    'duat:eq11.claim1': (CoqLink('Paths.A_tilde_paths'),
        "A~_L of the DUAT table (DUAT.A_tilde) with W'_{l,1} = I + sum_h H_h^(l) (x) W_OV,h^(l) is the sum over the "
        '(1 + h)^L virtual heads, every depth (the entry: L <= 3, 2 heads) and size.'),
    'duat:eq19': (CoqLink('DUAT.lemma1'),
        'Lemma 1 for any matrix beta and any terms (every N).'),
    'duat:eq20': (CoqLink('DUAT.eq20'),
        'Eq. 20 for layer i+1 of the network (residual_box).'),
    'duat:eq21': (CoqLink('DUAT.eq21'),
        'Eq. 20 at the first layer.'),
    'duat:eq22.rule1': (CoqLink('DUAT.fig2_box'),
        'Row A~_2 of box 2.'),
    'duat:eq22.rule2': (CoqLink('DUAT.fig2_box'),
        'Row c~_2 of box 2.'),
    'duat:eq22.rule3': (CoqLink('DUAT.fig2_box'),
        "Row U~_1^(2) = W'_{2,1} U~_1^(1) of box 2."),
    'duat:eq22.rule4': (CoqLink('DUAT.fig2_box'),
        'Row V~_2 of box 2.'),
    'duat:eq22.rule5': (CoqLink('DUAT.fig2_box'),
        "Row beta~_2 of box 2 (R_1 = W'_{1,3} sigma(W'_{1,2} x'_0 + b'_{1,2}))."),
    'duat:eq23': (CoqLink('DUAT.duat_expansion'),
        'Depth L = 2 with the Eq. 22 rules (= the depth-2 table rows).'),
    'duat:eq24': (CoqLink('DUAT.duat_expansion'),
        'Depth L = 1.'),
    'duat:eq25': (CoqLink('DUAT.duat_expansion'),
        'Depth L = 2.'),
    'duat:eq26.rule2': (CoqLink('DUAT.fig2_box'),
        "Row c~_{i+1} = W'_{i+1,1} c~_i + b'_{i+1,3} of every box."),
    'duat:eq27.claim2': (CoqLink('DUAT.duat_box_form'),
        "x'_{i} = A~_i x'_0 + c~_i + R_i for every i."),
    'duat:eq27.rule2': (CoqLink('DUAT.fig2_box'),
        "Row beta~_{i+1} = W'_{i+1,2} c~_i + b'_{i+1,2} + W'_{i+1,2} R_i of every box."),
    'duat:eq28': (CoqLink('MultiHead.mha_closed_form'),
        "MHA(x_i) = W'_{i,1} x'_i with W'_{i,1} the Eq. 10 closed form (Block.attention_vec adds the biases)."),
    'duat:eq29': (CoqLink('Block.ffn_vec'),
        "FFN(x_i) = W'_{i,3} sigma(W'_{i,2} x'_i + b'_{i,2}) + b'_{i,3}, feature mixing."),
    'duat:eq3': (CoqLink('Kronecker.vec_r_mul'),
        "T(X) = A X B: W' = A (x) B^T under row-major vec_r."),
    'duat:eq33': (CoqLink('DUAT.duat_expansion'),
        'Same as Eq. 11 (main bias c~_L).'),
    'duat:eq33.part2.rule4': (CoqLink('Erratum.eq11_rule4_refuted', negation=True),
        'Same printed rule as Eq. 11.'),
    'duat:eq5': (CoqLink('Kronecker.vec_r_mull'),
        "Token mixing W_i X: W'_i = W_i (x) I_M."),
    'duat:eq6': (CoqLink('Block.ffn_vec'),
        "Feature-mixing reading (W' = I_N (x) W^T, b' = 1_N (x) b); sigma entrywise, arbitrary."),
    'duat:eq7': (CoqLink('MultiHead.mha_sum'),
        'Concat_h(H_h X W_V,h) W_O = sum_h H_h X W_V,h W_O,h.'),
    'duat:eq9': (CoqLink('MultiHead.mha_closed_form'),
        'vec_r MHA(X) = (sum_h H_h (x) (W_V,h W_O,h)^T) vec_r X.'),
    'ext:alibi.closed-form': (CoqLink('Alibi.alibi_closed_form'),
        "BLOOM's layer, key positions (cumsum(mask) - 1) mask = max(m - p, 0) (alibi_positions), its visibility, "
        "exp any function times the free z_{h,n} = sum_h H_h (x) (W_V,h W_O,h)^T x' with H_h the masked weights of "
        'S_h + m_h 1 p^T under a window of width N; every N, p, heads, head width, M; scores S_h given. '
        'alibi_relative_closed_form: with the normalised softmax (e(a+b) = e(a)e(b), e nonzero) H_h is also the '
        'softmax of the relative bias m_h (p_m - p_n) (softmax_shift).'),
    'ext:attention-sink.mv-form': (CoqLink('ExtAttention.sink_attention_vec'),
        "Block.attention with H_h 1 = 1 - pi_h: vec_r = W'_HVO x' + 1 (x) (sum_h W_O,h^T b_V,h + b_O) - sum_h pi_h "
        "(x) W_O,h^T b_V,h; sink_a_vec: that bias is the a of every Block.v box (the box stays W'(x) x' + b'(x))."),
    'ext:block-layouts.eq20': (CoqLink('Layouts.block_layouts_eq20'),
        'All six layouts (paper, standard, pre-LN, post-LN, parallel, sublayer post-norm) with any FFN whose '
        "vec_r form is F_o phi(y') + f_o: the paper's FFN (Block.ffn_vec, phi = s(F_1 . + f_1)) and the gated"
        ' FFN (Layouts.gated_ffn_vec, phi = act(F_g . + f_g) .* (F_u . + f_u)).'),
    'ext:cross-attention.induction': (CoqLink('Decoder.decoder_duat'),
        "A stack of decoder blocks (own weights per layer, the same E) of any depth and size: x'_L = A~_L x'_0 + "
        "(c~_L(0) + E~_L e') + sum_j U~_j^(L) s(V~_j x'_0 + beta~_j(e')), the table of the biases "
        "b'_{i,3} + W'_{i,E} e', b'_{i,2} + W'_{i,2E} e' (decoder_net); c_tilde_ext, beta_tilde_ext: e' enters c~ "
        "and beta~ as the entry states."),
    'ext:cross-attention.mv-form': (CoqLink('ExtAttention.cross_attention_vec'),
        "N x N_e heads with rows summing to one, values from E: Eq. 10 on e' = vec_r E, static bias; decoder_eq20 "
        "states the decoder block's box W'_1 x' + W'_E e' + b'_3 + W'_3 s(W'_2 x' + W'_{2,E} e' + b'_2)."),
    'ext:final-norm.table': (CoqLink('InputFinal.input_final_duat_expansion'),
        "Final affine box; stated with an input transform (W'_{0,1} = I, b'_{0,3} = 0 is the entry's case)."),
    'ext:gated-ffn.induction': (CoqLink('Gated.gated_duat_expansion'),
        'Every depth, every size, arbitrary gate.'),
    'ext:gated-ffn.mv-form': (CoqLink('Layouts.gated_ffn_vec'),
        'With biases b_g, b_u, b_d; the entry is the case of zero biases.'),
    'ext:gated-ffn.table': (CoqLink('Gated.gated_table'),
        'P~_i, gamma~_i, R_i rows; the gate is an arbitrary two-argument function.'),
    'ext:granite.eq20': (CoqLink('ExtGranite.granite_eq20'),
        "Granite's block X + r MHA(N_1 X), + r FFN(N_2 Y) is Block.pre_ln_block with W_O, b_O, W_out, b_out scaled "
        "by r (granite_fold): the pre-LN box of pre_ln_eq20 with those folded parameters, every size."),
    'ext:granite.induction': (CoqLink('Transformer.pre_ln_transformer_duat'),
        'Every depth and size for pre-LN blocks; a Granite block is one with the folded parameters '
        '(ExtGranite.granite_fold).'),
    'ext:input-final.induction': (CoqLink('InputFinal.input_final_duat_expansion'),
        'Every depth.'),
    'ext:input-transform.table': (CoqLink('InputFinal.input_duat_expansion'),
        "Box 0 = (W'_{0,1}, b'_{0,3}); the table with those rows gives the network at every depth."),
    'ext:layernorm.no-bias': (CoqLink('Block.layer_norm_vec'),
        'D = diag(r) given (the normalisers at the input).'),
    'ext:mask.static-value-bias': (CoqLink('ExtMasks.masked_attention_vec'),
        "Any H_h with rows summing to one (causal and padding masks among them): static b' = 1 (x) (sum_h W_O,h^T "
        "b_V,h + b_O); masked_a_vec: the a of every Block.v box."),
    'ext:mla.mv-form': (CoqLink('ExtAttention.mla_vec'),
        "Latent C = D (X W_DKV + 1 b) Gamma, every rank and width; mla_attention: MLA is Block.attention with "
        "H~_h = H_h D and values W_DKV Gamma W_UV, so every Block.v box holds with it."),
    'ext:moe.unselected-experts': (CoqLink('MoE.unselected_experts'),
        "The dispatch (per expert, the chosen (token, slot) pairs, W_{n,s} F_e(h_n) added to row n) is unchanged "
        'when every expert no token chose is replaced by any row function; every N, E, k, M and every choice '
        '(dispatch_gate_form: it is sum_e G_e F_e(H) with G_e = 0 for an unchosen e).'),
    'ext:parallel-block.eq20': (CoqLink('Block.parallel_eq20'),
        "W'_{i,1} = I + A L_1, b'_{i,3} = A beta'_1 + a + f_2, W'_{i,2} = F_1 L_2, b'_{i,2} = F_1 beta'_2 + "
        "f_1, W'_{i,3} = F_2."),
    'ext:parallel-block.induction': (CoqLink('Transformer.parallel_transformer_duat'),
        'Every depth, every size.'),
    'ext:parallel-block.table': (CoqLink('Transformer.parallel_table'),
        "V~_i = F_1 L_2 A~_{i-1}, beta~_i = F_1 L_2 (c~_{i-1} + R_{i-1}) + F_1 beta'_2 + f_1."),
    'ext:nope.closed-form': (CoqLink('MultiHead.mha_closed_form'),
        "W' = sum_h H_h (x) (W_V,h W_O,h)^T for any given H_h: a NoPE layer's, from unrotated q, k (R = I)."),
    'ext:relative-bias.buckets': (CoqLink('Buckets.bucket_log_threshold'),
        "Every relative position k, every B (B' >= 2 buckets a side) and D > E = B'/2: the printed bucket equals the "
        "threshold form, the floor of c ln(delta/E)/ln(D/E) (c = B' - E) read as the largest j with "
        "D^j E^c <= delta^c E^j and theta_j as the least t with t^c E^j >= E^c D^j (their real-number equivalents: "
        "coq/reals/BucketsReals.v, on the axioms of Coq's classical reals, outside the level; docs/coq.md)."),
    'ext:relative-bias.decoder': (CoqLink('MultiHead.mha_closed_form'),
        "W' = sum_h H_h (x) (W_V,h W_O,h)^T for any given H_h, those of softmax(S_h + B_h + causal mask) among them."),
    'ext:relative-bias.encoder': (CoqLink('MultiHead.mha_closed_form'),
        "W' = sum_h H_h (x) (W_V,h W_O,h)^T for any given H_h, those of softmax(S_h + B_h + padding mask) among them."),
    'ext:rmsnorm.mv-form': (CoqLink('Block.rms_norm_vec'),
        'r given (the normalisers at the input).'),
    'ext:sliding-window.mask': (CoqLink('ExtMasks.masked_attention_vec'),
        'Any H_h with rows summing to one, those supported on a causal window among them; masked_a_vec: the a of '
        'every Block.v box.'),
    'ext:symmetric-window.mask': (CoqLink('ExtMasks.masked_attention_vec'),
        'Any H_h with rows summing to one, those supported on a symmetric window among them; masked_a_vec: the a '
        'of every Block.v box.'),
    'uat-aaai:appC.eq10': (CoqLink('DUAT.duat_expansion'),
        '= duat:eq11.'),
    'uat-aaai:appC.eq11.claim2': (CoqLink('DUAT.duat_box_form'),
        "x_{i+1} = A~_{i+1} x'_0 + c~_{i+1} + UAT^R_{i+1}."),
    'uat-aaai:appC.eq3': (CoqLink('DUAT.lemma1'),
        '= duat:eq19 (bias named theta_j).'),
    'uat-aaai:appC.eq4': (CoqLink('DUAT.eq21'),
        '= the DUAT version Eq. 21.'),
    'uat-aaai:appC.eq5.rule1': (CoqLink('DUAT.fig2_box'),
        '= duat:eq22.rule1.'),
    'uat-aaai:appC.eq5.rule2': (CoqLink('DUAT.fig2_box'),
        '= duat:eq22.rule2.'),
    'uat-aaai:appC.eq5.rule3': (CoqLink('DUAT.fig2_box'),
        '= duat:eq22.rule3.'),
    'uat-aaai:appC.eq5.rule5': (CoqLink('DUAT.fig2_box'),
        '= duat:eq22.rule5.'),
    'uat-aaai:appC.eq6': (CoqLink('DUAT.duat_expansion'),
        'Depth L = 2, rule 4 read corrected as in the entry.'),
    'uat-aaai:appC.lemma2': (CoqLink('DUAT.eq20'),
        "The conference version's general term = Eq. 20."),
    'uat-aaai:defUATR.part1': (CoqLink('DUAT.R_tilde_row'),
        "The R row of the table: R_i = sum_(1<=j<=i) U~_j^(i) sigma(V~_j x'_0 + beta~_j)."),
    'uat-aaai:eq10': (CoqLink('MultiHead.mha_closed_form'),
        '= duat:eq10.'),
    'uat-aaai:eq11': (CoqLink('DUAT.duat_expansion'),
        '= duat:eq11.'),
    'uat-aaai:eq5.step2': (CoqLink('Diamond.diamond_tr'),
        '= uat-arxiv:eq5.step2.'),
    'uat-aaai:eq6': (CoqLink('Block.ffn_vec'),
        '= duat:eq6 (feature-mixing reading).'),
    'uat-aaai:eq9': (CoqLink('MultiHead.mha_closed_form'),
        '= duat:eq9.'),
    'uat-aaai:sec3.2.claim3': (CoqLink('Diamond.diamond_tr'),
        '= uat-arxiv:sec3.2.claim3.'),
    'uat-arxiv:eq5.step2': (CoqLink('Diamond.diamond_tr'),
        "W'_i <> x'_i = (W'_i)^T x'_i."),
    'uat-arxiv:eq8': (CoqLink('MultiHead.mha_closed_form'),
        '= duat:eq9 (vectorised output).'),
    'uat-arxiv:sec3.2.claim3': (CoqLink('Diamond.diamond_tr'),
        'W <> x = W^T x.'),
    'uat-arxiv:sec3.2.claim5': (CoqLink('Diamond.diamond_distributive', negation=True),
        'The claim denies distributivity; Coq proves it (both sides).'),
}


#: erratum id -> (the Coq theorem that proves its correction for every size, how the theorem states it)
CORRECTION_LINKS: dict[str, tuple[CoqLink, str]] = {
    'duat:appB.fig2': (CoqLink('DUAT.fig2_box'),
        "Every box i+1 of the table with the corrected row U~_j^(i+1) = W'_{i+1,1} U~_j^(i) (j <= i), and x'_{i+1} "
        "from its rows: Figure 2 with row 3 of box 2 corrected, at every depth and size."),
    'duat:appB.fig2.box2.row3': (CoqLink('DUAT.fig2_box'),
        "Row U~_1^(2) = W'_{2,1} U~_1^(1) of box 2 (U~_1^(1) = W'_{1,3})."),
    'duat:eq11.part2.rule4': (CoqLink('DUAT.fig2_box'),
        "Row U~_j^(i+1) = W'_{i+1,1} U~_j^(i) for every j <= i of every box."),
    'duat:eq33.part2.rule4': (CoqLink('DUAT.fig2_box'),
        'Same corrected rule as Eq. 11.'),
}


def linked(entries: Iterable[Entry]) -> list[Entry]:
    """``entries``, each with its Coq link where :data:`COQ_LINKS` has one, and its correction's where
    :data:`CORRECTION_LINKS` has one."""
    out = [replace(e, coq=COQ_LINKS[e.id][0]) if e.id in COQ_LINKS else e for e in entries]
    return [replace(e, correction=replace(e.correction, coq=CORRECTION_LINKS[e.id][0]))
            if e.id in CORRECTION_LINKS else e for e in out]
