r"""The HTML ledger: every page and figure of ``symuat html``, name → text or bytes; deterministic.

The data is the audit that ``symuat latex`` renders (:func:`symuat.ledger.isolation.audit_isolated`), with the same
machine-independent float digits (:func:`~symuat.ledger.stable.stable_records`), so the site and ``latex/``
show the same ledger.  Pages are static HTML with MathML and one style sheet: nothing is fetched from a CDN,
no script runs, and no page holds a date or anything else that differs between runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import jinja2
from markupsafe import Markup

from ..errors import LedgerError
from ..evidence.verdict import Level
from ..latex import figures as _figures
from ..latex.appendices import attention_examples, matrix_vector_examples
from ..latex.front import is_own_paper, symuat_version
from ..ledger.audit import AuditRecord
from ..ledger.entry import Status
from .graph import dependencies
from .mathml import mathml_available, text
from .pages import href, levels_of, version_views

__all__ = ["SITE_PAGES", "Figure", "environment", "site_figures", "site_files"]

#: The site's own files: a source whose page (``<key>.html``) would be one of them is refused by name.
SITE_PAGES = ("index.html", "dependencies.html", "figures.html", "style.css")


@dataclass(frozen=True)
class Figure:
    """One figure of the site: SVG file name, caption (HTML) and the entry it illustrates."""

    file: str
    caption: Markup
    entry: str
    svg: bytes


def environment() -> jinja2.Environment:
    """The jinja2 environment of the site's templates (HTML autoescaping; formulas arrive as MathML markup)."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("symuat.html", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["href"] = href
    env.filters["text"] = text
    return env


def site_figures() -> tuple[Figure, ...]:
    """The figures of ``symuat latex`` as SVG (empty without matplotlib), each with the entry it illustrates."""
    if not _figures.plot_available():
        return ()
    figures = [Figure(f"{ex.figure}.svg", text(ex.title), ex.ledger_id,
                      _figures.sparsity_figure(ex.pattern, ex.block, "", fmt="svg"))
               for ex in matrix_vector_examples(attention_examples())]
    model = _figures.ATTRIBUTION_MODEL
    about = (f"random-init model: {model['layers']} layers, $N={model['tokens']}$ tokens, width "
             f"$M={model['width']}$, {model['heads']} heads, NumPy seed {model['seed']}")
    figures.append(Figure("fig-attention.svg", text(
        r"Attention matrices $\mathbf{H}_1,\mathbf{H}_2$ of layer 1 and block $(1,2)$ of $\mathbf{W}'_{HVO}$ "
        f"(Eq. 10), {about}."), "duat:eq10", _figures.attention_figure(fmt="svg")))
    figures.append(Figure("fig-attribution.svg", text(
        r"Share of each DUAT term of Eq. 11 in the output, per depth and per token, " + about + "."),
        "duat:eq11", _figures.attribution_figure(fmt="svg")))
    return tuple(figures)


def site_files(records: Iterable[AuditRecord], seed: int = 0, derivations: str | None = None) -> dict[str, str | bytes]:
    """Every file of the site for the audited ``records`` (already stable): name → HTML/CSS text or SVG bytes.

    ``seed`` is the audit's seed, printed on the index; ``derivations`` the directory the records were loaded from
    (the footer's command names it).
    """
    records = tuple(records)
    deps = dependencies(records)
    versions = version_views(records, deps)
    ids = {r.entry.id for r in records}
    figures = () if is_own_paper(records) else \
        tuple(f for f in site_figures() if f.entry in ids)  # a figure shows next to its entry; none is a user's
    env = environment()
    common = {
        "symuat_version": symuat_version(), "seed": seed, "mathml": mathml_available(),
        "statuses": [s.value for s in Status], "levels": [lvl.value for lvl in levels_of(records)],
        "all_levels": [lvl.value for lvl in Level], "versions": versions, "has_figures": bool(figures),
        "command": "symuat html" + (f" --derivations {derivations}" if derivations is not None else "")
                   + (f" --seed {seed}" if seed else "") + " --out DIR",
    }
    by_entry: dict[str, list[Figure]] = {}
    for f in figures:
        by_entry.setdefault(f.entry, []).append(f)
    errata = [(v, e) for v in versions for e in v.entries  # false as printed, recorded or computed
              if Status.ERRATUM.value in (e.status, e.verdict) or e.verdict == "refuted"]
    disagreeing = [e.id for v in versions for e in v.entries if not e.agrees]
    files: dict[str, str | bytes] = {
        "index.html": env.get_template("index.html.j2").render(errata=errata, disagreeing=disagreeing,
                                                                total=len(records), **common),
        "dependencies.html": env.get_template("dependencies.html.j2").render(
            deps=deps, status={r.entry.id: r.computed_status or "no status" for r in records}, **common),
        "style.css": env.get_template("style.css").render(),
    }
    for v in versions:
        if v.page in SITE_PAGES or v.page in files:
            raise LedgerError(f"source key {v.key!r} cannot have a page in the HTML ledger: its page {v.page!r} is "
                              f"the site's own (reserved: {', '.join(SITE_PAGES)}); register it under another key")
        files[v.page] = env.get_template("version.html.j2").render(version=v, figures=by_entry, **common)
    if figures:
        files["figures.html"] = env.get_template("figures.html.j2").render(figures=figures, **common)
        files.update({f.file: f.svg for f in figures})
    return files
