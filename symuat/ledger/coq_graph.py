r"""The compile graph of a Coq project: which files each file requires, and a compile that runs independent files
at the same time (each ``coqc`` loads MathComp for seconds, so a cold build is mostly waiting on one core).

A file needs the project files it names in ``From <Logical> Require [Import|Export] A B.`` or
``Require [Import|Export] <Logical>.A.``; a ``Require`` of the project in any other form makes it need every file
before it in ``_CoqProject`` order, which is always a valid order.

>>> sorted(requirements("From mathcomp Require Import all_ssreflect.\nFrom Symuat Require Import Kronecker DUAT.\n",
...                     "Symuat", ["Kronecker.v", "DUAT.v", "Block.v"], before=["Kronecker.v", "DUAT.v"]))
['DUAT.v', 'Kronecker.v']
>>> run_in_order(["A.v", "B.v"], {"A.v": frozenset(), "B.v": frozenset({"A.v"})}, lambda f: "", jobs=2)
''
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

__all__ = ["requirements", "run_in_order"]

#: ``[From X] Require [Import|Export] names.``: a sentence ends at a dot followed by a blank or the end.
_REQUIRE = re.compile(r"(?:\bFrom\s+(\S+)\s+)?\bRequire\s+(?:(?:Import|Export)\s+)?(.*?)\.(?=\s|$)", re.S)


def requirements(text: str, logical: str, files: Sequence[str], before: Sequence[str]) -> frozenset[str]:
    r"""The files of ``files`` that the Coq source ``text`` requires; ``before``: the files before it in order."""
    by_name = {f[:-2].replace("/", "."): f for f in files if f.endswith(".v")}
    needs: set[str] = set()
    for origin, names in _REQUIRE.findall(re.sub(r"\(\*.*?\*\)", " ", text, flags=re.S)):
        for name in names.split():
            if origin == logical and name in by_name:
                needs.add(by_name[name])
            elif not origin and name.startswith(logical + ".") and name[len(logical) + 1:] in by_name:
                needs.add(by_name[name[len(logical) + 1:]])
            elif logical in (origin.split(".")[0], name.split(".")[0]):  # the project, in a form not read here
                return frozenset(before)
    return frozenset(needs)


def _depths(files: Sequence[str], needs: Mapping[str, frozenset[str]]) -> dict[str, int]:
    """For each file, how many files the longest chain of files needing it holds (0: none; a cycle is cut)."""
    users = {f: [g for g in files if f in needs.get(g, frozenset())] for f in files}
    memo: dict[str, int] = {}

    def depth(f: str, path: frozenset[str]) -> int:
        if f not in memo:
            memo[f] = max((1 + depth(g, path | {f}) for g in users[f] if g not in path | {f}), default=0)
        return memo[f]

    return {f: depth(f, frozenset()) for f in files}


def run_in_order(files: Sequence[str], needs: Mapping[str, frozenset[str]], run: Callable[[str], str],
                 jobs: int) -> str:
    r"""``run(file)`` for each file once every file it needs ran without error, ``jobs`` at a time; of the files
    ready, those with the longest chain of files waiting on them first (sorting is stable: then in ``files`` order).

    ``run`` returns ``""`` on success, else why not.  After a failure nothing new starts; the reason returned is the
    first failure in ``files`` order (the same whatever finished first), or names a file that could not start.
    """
    failed: dict[str, str] = {}
    ok: set[str] = set()
    depths = _depths(files, needs)
    todo = sorted(files, key=lambda f: -depths[f])  # the longest chain waiting on a file starts first
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        running: dict[Future, str] = {}
        while True:
            if not failed:
                for file in [f for f in todo if needs.get(f, frozenset()) <= ok]:
                    todo.remove(file)
                    running[pool.submit(run, file)] = file
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                file = running.pop(fut)
                why = fut.result()
                if why:
                    failed[file] = why
                else:
                    ok.add(file)
    if failed:
        return next(failed[f] for f in files if f in failed)
    if todo:
        return f"coq/{todo[0]} requires a file that is not compiled first: {sorted(needs.get(todo[0], ()))}"
    return ""
