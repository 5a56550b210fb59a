r"""Worked example: the printed statements of LoRA (Hu et al., ICLR 2022) as a ledger of their own.

``symuat build --derivations docs/examples/lora`` writes that paper's appendix (docs/tutorial-your-paper.md):
its own title page, every entry below with its evidence, and an errata section.  LoRA writes the update of a
pre-trained weight $\mathbf{W}_0 \in \mathbb{R}^{d\times k}$ as a product $\Delta\mathbf{W} = \mathbf{B}\mathbf{A}$
of $\mathbf{B} \in \mathbb{R}^{d\times r}$ and $\mathbf{A} \in \mathbb{R}^{r\times k}$ (Sec. 4.1).

One entry is false on purpose: ``lora:sec4.1.claim5`` is a *misprint invented for this example* (the paper
says "subtracting"), so that the errata section shows a counterexample and a proved correction.  The
plain source ``lora-merging`` holds two statements about merging adapters that the paper does not print.
"""
from functools import cache

import numpy as np
import sympy

from symuat import Correction, Denial, Entry, Identity, Origin, Paper, Prose, Status, dims_grid, register_source

register_source(Paper(
    "lora", "LoRA", title="LoRA: Low-Rank Adaptation of Large Language Models",
    authors=("Edward J. Hu", "Yelong Shen", "Phillip Wallis", "Zeyuan Allen-Zhu", "Yuanzhi Li", "Shean Wang",
             "Lu Wang", "Weizhu Chen"),
    venue="International Conference on Learning Representations (ICLR), 2022; arXiv:2106.09685",
    equations=("eq1", "eq2", "eq3")))
register_source(Origin("lora-merging", "Merging LoRA adapters"))

#: $\mathbf{W}_0$ is $d\times k$, $\mathbf{B}$ is $d\times r$, $\mathbf{A}$ is $r\times k$; a batch $\mathbf{X}$ of
#: $n$ inputs is $k\times n$ (one input $\mathbf{x}$: $n = 1$).
SHAPES = {"W0": ("d", "k"), "B": ("d", "r"), "A": ("r", "k"), "X": ("k", "n")}
DIMS = dims_grid(d=(1, 2), k=(1, 2), r=(1, 2), n=(1, 2))
SCOPE = r"for $d, k, r, n \le 2$"
#: The weights alone (no input): the grid $d, k, r \le 2$.
WEIGHTS = {k: SHAPES[k] for k in ("W0", "B", "A")}
WEIGHT_DIMS, WEIGHT_SCOPE = dims_grid(d=(1, 2), k=(1, 2), r=(1, 2)), r"for $d, k, r \le 2$"


def lora_identity(lhs, rhs, reference, shapes=SHAPES) -> Identity:
    r"""An identity between LoRA's matrices (``shapes``): with an input $\mathbf{X}$ on the grid $d, k, r, n \le 2$,
    between weights alone on $d, k, r \le 2$."""
    if "X" in shapes:
        return Identity(shapes, lhs=lhs, rhs=rhs, dims=DIMS, reference=reference, scope=SCOPE)
    return Identity(shapes, lhs=lhs, rhs=rhs, dims=WEIGHT_DIMS, reference=reference, scope=WEIGHT_SCOPE)


@cache
def adapted_forward() -> Identity:
    r"""$(\mathbf{W}_0 + \mathbf{B}\mathbf{A})\mathbf{X} = \mathbf{W}_0\mathbf{X} + \mathbf{B}(\mathbf{A}\mathbf{X})$:
    the merged weight and the adapter path give one output."""
    return lora_identity(lambda W0, B, A, X: (W0 + B * A) * X, lambda W0, B, A, X: W0 * X + B * (A * X),
                         lambda W0, B, A, X: (W0 + B @ A) @ X)


@cache
def recovered(sign: int) -> Identity:
    r"""$\mathbf{W}_0$ against $(\mathbf{W}_0 + \mathbf{B}\mathbf{A}) + \text{sign}\cdot\mathbf{B}\mathbf{A}$."""
    return lora_identity(lambda W0, B, A: W0, lambda W0, B, A: (W0 + B * A) + sign * (B * A),
                         lambda W0, B, A: W0, shapes=WEIGHTS)


TWO = {"B1": ("d", "r"), "A1": ("r", "k"), "B2": ("d", "r"), "A2": ("r", "k")}


def entries() -> list[Entry]:
    step1 = lora_identity(lambda W0, B, A, X: (W0 + B * A) * X, lambda W0, B, A, X: W0 * X + (B * A) * X,
                          lambda W0, B, A, X: (W0 + B @ A) @ X)
    step2 = lora_identity(lambda W0, B, A, X: W0 * X + (B * A) * X, lambda W0, B, A, X: W0 * X + B * (A * X),
                          lambda W0, B, A, X: W0 @ X + (B @ A) @ X)
    switch = lora_identity(lambda W0, B, A, B2, A2: (W0 + B * A) - B * A + B2 * A2,
                           lambda W0, B, A, B2, A2: W0 + B2 * A2,
                           lambda W0, B, A, B2, A2: (W0 + B @ A) - B @ A + B2 @ A2,
                           shapes={**WEIGHTS, "B2": ("d", "r"), "A2": ("r", "k")})
    zero_start = lora_identity(lambda A, d, r: sympy.zeros(d, r) * A, lambda A, d, k: sympy.zeros(d, k),
                               lambda A, d, r: np.zeros((d, r)) @ A, shapes={"A": ("r", "k")})  # B = 0
    summed = lora_identity(lambda B1, A1, B2, A2: (B1 + B2) * (A1 + A2), lambda B1, A1, B2, A2: B1 * A1 + B2 * A2,
                           lambda B1, A1, B2, A2: (B1 + B2) @ (A1 + A2), shapes=TWO)
    stacked = lora_identity(lambda B1, A1, B2, A2: B1 * A1 + B2 * A2,
                            lambda B1, A1, B2, A2: sympy.Matrix.hstack(B1, B2) * sympy.Matrix.vstack(A1, A2),
                            lambda B1, A1, B2, A2: B1 @ A1 + B2 @ A2, shapes=TWO)
    W0X, BA = r"\mathbf{W}_0\mathbf{x}", r"\mathbf{B}\mathbf{A}"
    return [
        Entry("lora:eq1", "Sec. 2, Eq. 1", r"\max_{\Phi}\sum_{(x,y)\in\mathcal{Z}}\sum_{t=1}^{|y|}"
              r"\log P_{\Phi}(y_t \mid x, y_{<t})", Status.PROSE,
              Prose("The objective of full fine-tuning: an optimisation problem, not an identity.")),
        Entry("lora:eq2", "Sec. 2, Eq. 2", r"\max_{\Theta}\sum_{(x,y)\in\mathcal{Z}}\sum_{t=1}^{|y|}"
              r"\log p_{\Phi_0+\Delta\Phi(\Theta)}(y_t \mid x, y_{<t})", Status.PROSE,
              Prose(r"The objective of the low-rank update $\Delta\Phi(\Theta)$: an optimisation problem, not an "
                    "identity.")),
        Entry("lora:eq3.step1", "Sec. 4.1, Eq. 3", rf"h = (\mathbf{{W}}_0 + \Delta\mathbf{{W}})\mathbf{{x}} = "
              rf"{W0X} + \Delta\mathbf{{W}}\mathbf{{x}}", Status.PROVED, step1,
              note=r"The adapted layer's output, with $\Delta\mathbf{W} = \mathbf{B}\mathbf{A}$; checked for a batch "
                   r"$\mathbf{X}$ of $n$ inputs."),
        Entry("lora:eq3.step2", "Sec. 4.1, Eq. 3",
              rf"{W0X} + \Delta\mathbf{{W}}\mathbf{{x}} = {W0X} + {BA}\mathbf{{x}}", Status.PROVED, step2,
              note=r"$\mathbf{B}\mathbf{A}\mathbf{x}$ is computed as $\mathbf{B}(\mathbf{A}\mathbf{x})$, never "
                   r"forming $\Delta\mathbf{W}$."),
        Entry("lora:sec4.1.claim1", "Sec. 4.1", r"\operatorname{rank}(\mathbf{B}\mathbf{A}) \le r", Status.PROSE,
              Prose("A bound on a rank, not an identity between matrices.")),
        Entry("lora:sec4.1.claim2", "Sec. 4.1", rf"\mathbf{{B}} = \mathbf{{0}} \Rightarrow "
              rf"\Delta\mathbf{{W}} = {BA} = \mathbf{{0}}", Status.PROVED, zero_start,
              note=r"With $\mathbf{B}$ initialised to zero the adapted model starts as the pre-trained one."),
        Entry("lora:sec4.1.claim3", "Sec. 4.1",
              rf"\mathbf{{W}}\mathbf{{x}} = (\mathbf{{W}}_0 + {BA})\mathbf{{x}} = {W0X} + {BA}\mathbf{{x}}",
              Status.PROVED, adapted_forward(),
              note=r"Storing the merged $\mathbf{W} = \mathbf{W}_0 + \mathbf{B}\mathbf{A}$ gives the adapter's "
                   "output."),
        Entry("lora:sec4.1.claim4", "Sec. 4.1",
              rf"(\mathbf{{W}}_0 + {BA}) - {BA} + \mathbf{{B}}'\mathbf{{A}}' = "
              rf"\mathbf{{W}}_0 + \mathbf{{B}}'\mathbf{{A}}'",
              Status.PROVED, switch, note=r"Subtract $\mathbf{B}\mathbf{A}$, then add another task's product."),
        Entry("lora:sec4.1.claim5", "Sec. 4.1 (invented misprint)",
              rf"\mathbf{{W}}_0 = \mathbf{{W}} + {BA}", Status.ERRATUM, recovered(+1),
              correction=Correction(rf"\mathbf{{W}}_0 = \mathbf{{W}} - {BA}", recovered(-1)),
              note=r"Invented misprint: the paper says that $\mathbf{W}_0$ is recovered by \emph{subtracting} "
                   r"$\mathbf{B}\mathbf{A}$ from $\mathbf{W} = \mathbf{W}_0 + \mathbf{B}\mathbf{A}$."),
        Entry("lora-merging:sum-of-factors", "sum of factors",
              r"(\mathbf{B}_1+\mathbf{B}_2)(\mathbf{A}_1+\mathbf{A}_2) \ne \mathbf{B}_1\mathbf{A}_1"
              r" + \mathbf{B}_2\mathbf{A}_2", Status.PROVED, Denial(summed),
              note=r"Adding the factors adds the cross terms $\mathbf{B}_1\mathbf{A}_2 + \mathbf{B}_2\mathbf{A}_1$: "
                   r"two adapters are not merged by merging their factors."),
        Entry("lora-merging:stacked", "stacked factors",
              r"\mathbf{B}_1\mathbf{A}_1 + \mathbf{B}_2\mathbf{A}_2 = [\mathbf{B}_1\ \mathbf{B}_2]"
              r"\begin{bmatrix}\mathbf{A}_1\\ \mathbf{A}_2\end{bmatrix}", Status.PROVED, stacked,
              note=r"Concatenating the factors merges two adapters exactly, at rank $2r$."),
    ]
