"""The feature-to-feature links' check: a link recomputed by runs of the held network (not a test module)."""

from __future__ import annotations

from symuat.analysis import Site, run_sites


def direct_path(form, held, u, v, g0, pos):
    r"""The link u -> v of the target ``g0 · output[pos]`` by three runs of the held network (``held``: a
    :class:`~symuat.analysis.frozen.Frozen`'s held values; run_sites, not graph_links): (A) u's output doubled with
    every other sublayer between them fixed at its clean value: the change of the stream entering v's layer; (B)
    that change added to the stream: the change of v's output z_v; (C) that change of z_v with every later sublayer
    fixed: the change of the target."""
    L, (k, k2, h) = form.depth, (u[1], v[1], v[2])
    run = lambda patches, **kw: run_sites(form.stack, form.X0, held=held, patches=patches, **kw)  # noqa: E731
    _, clean = run({})
    fix = lambda j, sub: {Site(sub, j): clean[(sub, j)]}  # noqa: E731
    if u[0] == "head":
        block = {Site("head", k, u[2]): 2 * clean[u], **fix(k, "ffn")}
    else:
        block = {Site("neuron", k, u[2]): 2 * clean[("neurons", k)][:, u[2]]}
    for j in range(k + 1, k2):
        block |= fix(j, "attn") | fix(j, "ffn")
    delta = run(block, record={("resid", k2)})[1][("resid", k2)] - clean[("resid", k2)]
    z = run({}, start=(k2, clean[("resid", k2)] + delta), record={v})[1][v]
    block = {Site("head", k2, h): z, **fix(k2, "ffn")}
    for j in range(k2 + 1, L):
        block |= fix(j, "attn") | fix(j, "ffn")
    out, _ = run(block)
    return float((out - form.output)[pos] @ g0)
