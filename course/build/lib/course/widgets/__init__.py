"""Interactive explorers for Module 6: truncation, KL estimators and the KL chain rule.

Each explorer is a pure model (``*_state`` functions returning plain state
objects of numbers and arrays, computed with :mod:`autograder.reference`) plus a
thin ipywidgets view that redraws in place. The explorers never import a
student's code, so they work in a released notebook before anything is solved.

>>> from course.widgets import truncation_preset_state
>>> round(truncation_preset_state("truncation_correction").ratio_error, 6)
1.915686
"""

from ._models import (
    ESTIMATORS,
    KL_PRESETS,
    SAMPLE_SIZES,
    SEED_TREE,
    TRUNCATION_PRESETS,
    ChainRuleState,
    KLPreset,
    KLState,
    TruncationPreset,
    TruncationState,
    chain_rule_from_controls,
    chain_rule_state,
    kl_preset_state,
    kl_state,
    parse_distribution,
    truncation_preset_state,
    truncation_state,
)
from .chain_rule import ChainRuleExplorer, chain_rule_explorer
from .kl import KLExplorer, kl_explorer
from .truncation import TruncationExplorer, truncation_explorer

__all__ = [
    "ESTIMATORS",
    "KL_PRESETS",
    "SAMPLE_SIZES",
    "SEED_TREE",
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
    "truncation_state",
]
