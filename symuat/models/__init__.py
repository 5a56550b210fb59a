r"""Importers: PyTorch and transformers models → :class:`symuat.numeric.TransformerStack`.

Needs the optional extra ``symuat[torch]`` (torch, transformers); they are imported only when a
function here is called, so ``import symuat`` stays NumPy-only.

>>> from symuat.models import from_module, from_pretrained, load   # doctest: +SKIP
>>> stack = from_pretrained("path/to/save_pretrained/dir")     # doctest: +SKIP
>>> form = symuat.numeric.duat_form(stack, X)                   # doctest: +SKIP
>>> model = load("path/to/save_pretrained/dir")                  # doctest: +SKIP
>>> forms = model.duat_form(["a first text", "a second"])        # doctest: +SKIP
>>> gpu = load("path/to/save_pretrained/dir", device="cuda")    # doctest: +SKIP
"""

from .device import to_device
from .importer import FAMILIES, from_module, from_pretrained, load_pretrained
from .layer_check import LayerCheck, check_layers
from .layer_reference import LayerReference, layer_reference
from .model import Model, load
from .precision import library_float64
from .random_init import random_init
from .reference import library_outputs, quiet_library, torch_threads

__all__ = ["FAMILIES", "Model", "load", "from_module", "from_pretrained", "load_pretrained", "library_float64",
           "random_init", "library_outputs", "torch_threads", "quiet_library", "layer_reference",
           "LayerReference", "to_device", "check_layers", "LayerCheck"]
