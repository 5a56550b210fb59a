(* The variables of a Granite block (ext:granite.eq20): a pre-LN block whose residual branches are scaled by r.
   Shared by ExtGranite.v and coq/mutants/ext/Mutant_granite_bias.v, loaded inside their section
   (Load GraniteVariables.), so that the mutant states its box over the same block, abstracted in the same order. *)

Variable R : comRingType.
Variables N M d nH K : nat.
Variable s : R -> R.
Variable H : 'I_nH -> 'M[R]_N.
Variables (W_V : 'M[R]_(M, nH * d)) (b_V : 'rV[R]_(nH * d)) (W_O : 'M[R]_(nH * d, M)) (b_O : 'rV[R]_M).
Variables (D1 D2 : 'M[R]_N) (G1 G2 : 'M[R]_M) (beta1 beta2 : 'rV[R]_M).
Variables (W_in : 'M[R]_(M, K)) (b_in : 'rV[R]_K) (W_out : 'M[R]_(K, M)) (b_out : 'rV[R]_M).
Variable r : R.
