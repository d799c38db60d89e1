"""Interactive explorers for Module 6: truncation, KL estimators and the KL chain rule.

Each explorer is a pure model (``*_state`` functions returning plain state objects of numbers and
arrays, in ``_truncation_model``, ``_kl_model`` and ``_chain_rule_model``) plus a thin ipywidgets
view that redraws in place. The models' arithmetic is private to this package (``_math``): it is
written for drawing, answers no exercise, and never imports a student's code or the instructor's
package, so the explorers work in a released notebook before anything is solved.

Every explorer opens on an example of its own, not on a notebook's data, and an explorer shows, it
does not answer: the truncation explorer takes no logits from outside (its presets, any setting of
its controls), and the probabilities a learner sets in the KL explorer's boxes and on the chain-rule
sliders are multiples of 0.05, a grid on which no notebook's graded numbers lie (``docs/DESIGN.md``,
"Widgets").

>>> from course.widgets import truncation_preset_state
>>> truncation_preset_state("nucleus").support_tokens
('tea', 'coffee')
"""

from ._chain_rule_model import (
    DEFAULT_TREE,
    ChainRuleState,
    chain_rule_from_controls,
    chain_rule_state,
)
from ._kl_model import (
    ESTIMATORS,
    KL_PRESETS,
    SAMPLE_SIZES,
    KLPreset,
    KLState,
    kl_preset_state,
    kl_state,
    parse_distribution,
)
from ._truncation_model import (
    TRUNCATION_PRESETS,
    TruncationPreset,
    TruncationState,
    truncation_preset_state,
)
from .chain_rule import ChainRuleExplorer, chain_rule_explorer
from .kl import KLExplorer, kl_explorer
from .truncation import TruncationExplorer, truncation_explorer

__all__ = [
    "DEFAULT_TREE",
    "ESTIMATORS",
    "KL_PRESETS",
    "SAMPLE_SIZES",
    "TRUNCATION_PRESETS",
    "ChainRuleExplorer",
    "ChainRuleState",
    "KLExplorer",
    "KLPreset",
    "KLState",
    "TruncationExplorer",
    "TruncationPreset",
    "TruncationState",
    "chain_rule_explorer",
    "chain_rule_from_controls",
    "chain_rule_state",
    "kl_explorer",
    "kl_preset_state",
    "kl_state",
    "parse_distribution",
    "truncation_explorer",
    "truncation_preset_state",
]
