r"""What is done *with* a DUAT form: attributions, the held (frozen) network, interventions, views, export, plots.

This layer sits above the numeric core (:mod:`symuat.numeric`), which holds the form's data and knows nothing of
it (docs/architecture.md).  Importing it registers each analysis as a method of
:class:`~symuat.numeric.DUATForm` (:mod:`symuat.numeric.analyses`): ``form.attribution(by)`` is
:func:`attribution` ``(form, by)``.
"""

from ..numeric.analyses import register_analysis
from . import views
from .attribution import BY, Attribution, attribution, attribution_bytes, load_attribution
from .batch import attributions, mean_shares
from .cache import Activations, activations, logit_lens, resid
from .export import Saved, attribution_graph, load_saved, save_form, write_graph
from .frozen import Frozen, frozen
from .interventions import Intervention, intervene, scaled_stack
from .patching import MODES, SWEEPS, Patched, PatchSweep, patch, patch_sweep
from .plot import plot_form, plot_patching, term_layer_shares
from .pullback import Pullback, pullback
from .sites import SITE_KINDS, Site, run_sites
from .views import DynamicTerm, KroneckerFactor, LayerParameters

for _name in ("attention", "cross_attention", "layer_parameters", "A_tilde", "c_tilde", "dynamic_term", "token_terms",
              "summary_html"):
    register_analysis(_name, getattr(views, _name))
register_analysis("attribution", attribution)
register_analysis("frozen", frozen)
register_analysis("intervene", intervene)
register_analysis("save", save_form)
register_analysis("graph", attribution_graph)
register_analysis("plot", plot_form)
for _name, _function in (("resid", resid), ("activations", activations), ("logit_lens", logit_lens),
                         ("patch", patch), ("patch_sweep", patch_sweep)):
    register_analysis(_name, _function)

__all__ = [
    # attributions (exact: the parts sum to the output)
    "BY", "Attribution", "attribution", "attribution_bytes", "load_attribution", "attributions", "mean_shares",
    # one target's pullback through the held network (reverse mode)
    "Pullback", "pullback",
    # the held network and interventions
    "Frozen", "frozen", "Intervention", "intervene", "scaled_stack",
    # named activations, the logit lens, activation patching and edits
    "Activations", "activations", "resid", "logit_lens", "Site", "SITE_KINDS", "run_sites",
    "Patched", "PatchSweep", "patch", "patch_sweep", "MODES", "SWEEPS", "plot_patching",
    # named views of a form
    "LayerParameters", "DynamicTerm", "KroneckerFactor",
    # export and pictures
    "Saved", "save_form", "load_saved", "attribution_graph", "write_graph", "plot_form", "term_layer_shares",
]
