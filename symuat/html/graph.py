r"""The dependency view of the HTML ledger: what the ledger itself knows about how entries relate.

Two relations, both read from the entries and nothing guessed:

* **part of** — the place grammar nests (docs/writing-derivations.md): ``duat:eq13.step2`` is a step of the chain
  ``duat:eq13``; ``duat:appB.fig2.box1.row3`` a row of ``duat:appB.fig2.box1``, itself a box of ``duat:appB.fig2``.
  An entry's parent is the longest proper prefix of its id (cut at a ``.``) that is itself an entry; a step
  whose chain has no entry of its own is grouped under the id without its last part all the same, and such a
  group nests in the same way.
* **uses** — an entry whose note or reference names another entry by its id (``… as in duat:eq22.rule3``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Dependencies", "dependencies"]

_ID = re.compile(r"\b([a-z][a-z0-9]*(?:-[a-z0-9]+)*:[A-Za-z0-9]+(?:[.-][A-Za-z0-9]+)*)")


@dataclass(frozen=True)
class Dependencies:
    """``parent``: id → the group it belongs to; ``children``: group → member ids (ledger order);
    ``uses``/``used_by``: id → ids named in its note or reference, and the reverse."""

    parent: dict[str, str]
    children: dict[str, tuple[str, ...]]
    uses: dict[str, tuple[str, ...]]
    used_by: dict[str, tuple[str, ...]]


def _group(entry_id: str, ids: set[str]) -> str | None:
    version, _, place = entry_id.partition(":")
    parts = place.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        candidate = f"{version}:{'.'.join(parts[:cut])}"
        if candidate in ids:
            return candidate
    return f"{version}:{'.'.join(parts[:-1])}" if len(parts) > 1 else None


def dependencies(records: Iterable) -> Dependencies:
    """The relations of the audited entries ``records`` (each with ``.entry.id``, ``.note``, ``.source.ref``).

    >>> from types import SimpleNamespace as R
    >>> e = lambda i, note="": R(entry=R(id=i, note=note, source=R(ref="")))
    >>> d = dependencies([e("p:eq1"), e("p:eq1.step1"), e("p:eq1.step2", "by p:eq1.step1."), e("p:eq2.step1")])
    >>> d.children
    {'p:eq1': ('p:eq1.step1', 'p:eq1.step2'), 'p:eq2': ('p:eq2.step1',)}
    >>> dependencies([e("p:app.eq1.step1"), e("p:app.eq2")]).children
    {'p:app.eq1': ('p:app.eq1.step1',), 'p:app': ('p:app.eq2', 'p:app.eq1')}
    >>> d.uses, d.used_by
    ({'p:eq1.step2': ('p:eq1.step1',)}, {'p:eq1.step1': ('p:eq1.step2',)})
    """
    entries = [r.entry for r in records]
    ids = {e.id for e in entries}
    parent: dict[str, str] = {}
    children: dict[str, list[str]] = {}
    uses: dict[str, list[str]] = {}
    used_by: dict[str, list[str]] = {}
    for e in entries:
        group = _group(e.id, ids)
        if group is not None:
            parent[e.id] = group
            children.setdefault(group, []).append(e.id)
        for named in _ID.findall(f"{e.note} {e.source.ref}"):
            named = named.rstrip(".")
            if named in ids and named != e.id and named not in uses.get(e.id, ()):
                uses.setdefault(e.id, []).append(named)
                used_by.setdefault(named, []).append(e.id)
    pending = [g for g in children if g not in ids]  # a group without an entry nests under its own group
    while pending:
        group = pending.pop(0)
        above = _group(group, ids)
        if above is not None and group not in parent:
            parent[group] = above
            if above not in children and above not in ids:
                pending.append(above)
            children.setdefault(above, []).append(group)
    return Dependencies(parent, {k: tuple(v) for k, v in children.items()}, {k: tuple(v) for k, v in uses.items()},
                        {k: tuple(v) for k, v in used_by.items()})
