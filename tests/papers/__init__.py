"""A soundness corpus: other papers' derivations, written as docs/writing-derivations.md says (tests/test_papers.py).

Each public module transcribes one paper: linear attention as an RNN (Katharopoulos et al. 2020), the online
softmax and FlashAttention (Milakov & Gimelshein 2018; Dao et al. 2022), RoPE (Su et al. 2021) and ALiBi
(Press et al. 2022).  The entries use fractions, ``exp``, ``Max``, causal masks, recurrences and hypotheses.
"""
