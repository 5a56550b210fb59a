r"""The audit ledger as a static, offline web site (``symuat html --out DIR``).

An index with the status counts per paper version and every erratum, one page per paper version (each entry's
statement as MathML, its evidence per level, counterexample and correction), the figures of the appendices as
SVG, and the dependency view the entry ids and notes give.  Deterministic, like ``latex/``.
"""

from .graph import Dependencies, dependencies
from .mathml import mathml_available
from .site import site_files
from .write import write_site

__all__ = ["Dependencies", "dependencies", "mathml_available", "site_files", "write_site"]
