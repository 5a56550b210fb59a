(* The variables of a residual network (Eq. 20), shared by DUAT.v, Erratum.v and coq/mutants/*.v.

   Loaded inside a Section (Load DUATVariables.), so that each file states its definitions and theorems over the
   same network; at End Section every definition is abstracted over the variables it uses, in this order.
   A section cannot be exported by Require, hence Load (coqc finds this file in the -Q path of the project). *)

Variable R : ringType.
Variable n : nat.                                   (* the size of x' = vec_r X (N * M for a Transformer) *)
Variable h : nat -> nat.                            (* the hidden width of layer i *)
Variable W1 : nat -> 'M[R]_n.                       (* W'_{i,1} *)
Variable b3 : nat -> 'cV[R]_n.                      (* b'_{i,3} *)
Variable W2 : forall i, 'M[R]_(h i, n).             (* W'_{i,2} *)
Variable b2 : forall i, 'cV[R]_(h i).               (* b'_{i,2} *)
Variable W3 : forall i, 'M[R]_(n, h i).             (* W'_{i,3} *)
Variable sigma : forall i, 'cV[R]_(h i) -> 'cV[R]_(h i).
Variable x0 : 'cV[R]_n.                             (* x'_0 *)
