"""Worked example: audit three printed statements of a paper of your own (docs/writing-derivations.md)."""
from symuat import Correction, Entry, Identity, Paper, Prose, Status, dims_grid, register_source

register_source(Paper("toy", "Toy paper", authors=("Ada Author",), title="Transposes of products",
                      venue="Notes, 2025", equations=("eq1", "eq2", "eq3")))


def transpose_of_product(rhs) -> Identity:
    r"""$(\mathbf{A}\mathbf{B})^T$ against ``rhs`` for square $n \times n$ matrices, $n \le 3$."""
    return Identity({"A": ("n", "n"), "B": ("n", "n")}, lhs=lambda A, B: (A * B).T, rhs=rhs,
                    dims=dims_grid(n=(1, 2, 3)), reference=lambda A, B: (A @ B).T)


def entries() -> list[Entry]:
    return [
        Entry("toy:eq1", "Eq. 1", r"(\mathbf{A}\mathbf{B})^T = \mathbf{B}^T\mathbf{A}^T", Status.PROVED,
              transpose_of_product(lambda A, B: B.T * A.T)),
        Entry("toy:eq2", "Eq. 2", r"(\mathbf{A}\mathbf{B})^T = \mathbf{A}^T\mathbf{B}^T", Status.ERRATUM,
              transpose_of_product(lambda A, B: A.T * B.T),
              correction=Correction(r"(\mathbf{A}\mathbf{B})^T = \mathbf{B}^T\mathbf{A}^T",
                                    transpose_of_product(lambda A, B: B.T * A.T)),
              note=r"The order of the factors is reversed: $\mathbf{A}^T\mathbf{B}^T = (\mathbf{B}\mathbf{A})^T$."),
        Entry("toy:eq3", "Eq. 3", r"\text{rank}(\mathbf{A}\mathbf{B}) \le \text{rank}(\mathbf{A})", Status.PROSE,
              Prose(r"An inequality between ranks, not an identity of matrices; see any linear algebra text.")),
    ]
