"""Fault injection at the attribution boundary (issue 32): memory that is not there, a budget that is too small or
malformed, a disk that cannot hold a stream.  Every case is a real request whose estimate exceeds what is there
(no mock of the memory probe): one symuat error stating both numbers, raised before anything is allocated or
written."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from symuat.errors import InvalidValueError, OutOfMemoryError, OutputError
from symuat.numeric import duat_form, random_stack

NUM = r"\d+(\.\d)? (B|KiB|MiB|GiB|TiB)"


@pytest.fixture(scope="module")
def big_vocab():
    """A small form at N = 1024 with an LM head of a million tokens: its full source attribution of every logit
    needs N * N * V * 8 bytes = 7.6 TiB, more than any machine this runs on."""
    rng = np.random.default_rng(0)
    form = duat_form(random_stack(rng, 1, 8, 2, 8, kind="pre_ln", causal=True), rng.standard_normal((1024, 8)))
    U = np.ones((1_000_000, 8))
    return dataclasses.replace(form, unembedding=(U, None))


def test_full_attribution_beyond_memory(big_vocab):
    with pytest.raises(OutOfMemoryError, match=rf"^out of memory in the attribution by 'source' \(full method, "
                                               rf"values \(1024, 1024, 1000000\)\): about 7\.6 TiB needed, {NUM} "
                                               r"(available now|allowed by SYMUAT_MEMORY_LIMIT); stream it to disk"):
        big_vocab.attribution("source", target="logits")


@pytest.mark.parametrize("name", ["a.npz", "a.zarr"])
def test_stream_beyond_the_disk(big_vocab, tmp_path, name):
    out = tmp_path / name
    with pytest.raises(OutputError, match=rf"cannot stream the attribution by 'source' to .*{name[2:]}': its values "
                                          rf"\(1024, 1024, 1000000\) need 7\.6 TiB, {NUM} free on that disk"):
        big_vocab.attribution("source", target="logits", out=out)
    assert list(tmp_path.iterdir()) == []  # refused before anything is written
    assert not out.exists()


def test_one_target_fits_where_the_full_method_does_not(big_vocab):
    a = big_vocab.attribution("source", target=7, position=1023)
    assert a.values.shape == (1024,) and a.error <= 1e-12


def _small():
    rng = np.random.default_rng(1)
    return duat_form(random_stack(rng, 2, 8, 2, 12, kind="pre_ln", causal=True), rng.standard_normal((16, 8)))


@pytest.mark.parametrize("call, what", [
    (lambda f: f.attribution("neuron", target=np.ones(8), position=3),
     r"in the attribution by 'neuron' of one target \(reverse mode, N=16\)"),
    (lambda f: f.attribution("head"), r"in the attribution by 'head' \(full method, values \(7, 16, 8\)\)"),
    (lambda f: duat_form(f.stack, f.X0), r"evaluating the DUAT form at N=16"),
    (lambda f: f.frozen(), r"holding the network's dynamic parameters \(N=16\)"),
    (lambda f: f.intervene(("head", 0, 1)), r"holding the network's dynamic parameters \(N=16\)"),
    (lambda f: f.attribution("term"), r"in the attribution by 'term' \(full method, values \(4, 16, 8\)\)"),
])
def test_a_budget_too_small(call, what, monkeypatch):
    form = _small()
    monkeypatch.setenv("SYMUAT_MEMORY_LIMIT", "1K")
    with pytest.raises(OutOfMemoryError, match=rf"^out of memory {what}: about {NUM} needed, 1\.0 KiB allowed by "
                                               r"SYMUAT_MEMORY_LIMIT; "):
        call(form)


@pytest.mark.parametrize("value", ["lots", "-3G", "0", "1.5X", "4 GB extra"])
def test_a_malformed_budget(value, monkeypatch):
    form = _small()
    monkeypatch.setenv("SYMUAT_MEMORY_LIMIT", value)
    with pytest.raises(InvalidValueError, match=rf"SYMUAT_MEMORY_LIMIT='{value}': expected a positive number of "
                                                r"bytes, optionally with K, M, G or T"):
        form.attribution("head", target=np.ones(8), position=0)


@pytest.mark.parametrize("value", ["64M", "64MiB", "0.5G", "67108864"])
def test_a_budget_that_fits(value, monkeypatch):
    monkeypatch.setenv("SYMUAT_MEMORY_LIMIT", value)
    form = _small()
    assert form.attribution("neuron", target=np.ones(8), position=3).error <= 1e-12
