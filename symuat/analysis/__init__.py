r"""What is done *with* a DUAT form: attributions, the held (frozen) network, interventions, views, export, plots.

This layer sits above the numeric core (:mod:`symuat.numeric`), which holds the form's data and knows nothing of
it (docs/architecture.md).  Importing it registers each analysis as a method of
:class:`~symuat.numeric.DUATForm` (:mod:`symuat.numeric.analyses`): ``form.attribution(by)`` is
:func:`attribution` ``(form, by)``.
"""

from ..numeric.analyses import register_analysis
from . import views
from .attribution import BY, Attribution, attribution, attribution_bytes, load_attribution
from .export import Saved, attribution_graph, load_saved, save_form
from .frozen import Frozen, frozen
from .interventions import Intervention, intervene, scaled_stack
from .plot import plot_form, term_layer_shares
from .pullback import Pullback, pullback
from .views import DynamicTerm, KroneckerFactor, LayerParameters

for _name in ("attention", "layer_parameters", "A_tilde", "c_tilde", "dynamic_term", "token_terms",
              "summary_html"):
    register_analysis(_name, getattr(views, _name))
register_analysis("attribution", attribution)
register_analysis("frozen", frozen)
register_analysis("intervene", intervene)
register_analysis("save", save_form)
register_analysis("graph", attribution_graph)
register_analysis("plot", plot_form)

__all__ = [
    # attributions (exact: the parts sum to the output)
    "BY", "Attribution", "attribution", "attribution_bytes", "load_attribution",
    # one target's pullback through the held network (reverse mode)
    "Pullback", "pullback",
    # the held network and interventions
    "Frozen", "frozen", "Intervention", "intervene", "scaled_stack",
    # named views of a form
    "LayerParameters", "DynamicTerm", "KroneckerFactor",
    # export and pictures
    "Saved", "save_form", "load_saved", "attribution_graph", "plot_form", "term_layer_shares",
]
