r"""Random O(1) weights for tiny models built from a config (tests, benchmarks, demonstrations; no downloads)."""

from __future__ import annotations

import math

__all__ = ["random_init"]


def random_init(model, seed: int = 0):
    r"""Cast ``model`` to float64, put it in eval mode and draw O(1) random weights in place.

    Matrices get :math:`\mathcal N(0, 1/\text{fan-in})` entries, norm gains :math:`1 + \mathcal N(0, 0.04)` and
    every other vector :math:`\mathcal N(0, 0.04)`. A library's own 0.02-std initialisation makes the attention
    matrices nearly uniform, which would hide errors in :math:`H_h`. Returns ``model``.
    """
    import torch

    g = torch.Generator().manual_seed(seed)
    model = model.double().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) / math.sqrt(p.shape[-1]))
            elif "norm" in name.lower() and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g, dtype=p.dtype))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model
