"""Answer key for exercise 14: importance ratios when the behaviour policy misses an action."""

from autograder.reference import importance_support

#: Behaviour policy mu and target policy pi over the actions numbered 1, 2, 3 in the notebook.
BEHAVIOUR = (0.7, 0.3, 0.0)
TARGET = (0.6, 0.2, 0.2)

_REPORT = importance_support(BEHAVIOUR, TARGET)

#: Whether ordinary ratios pi(a) / mu(a) estimate E_pi[f] from mu's data.
RATIOS_WORK = bool(_REPORT.ratios_defined)
#: The offending actions in the notebook's numbering (1-based; the reference counts from 0).
PROBLEM_ACTIONS = frozenset(int(a) + 1 for a in _REPORT.violating_actions)

#: The remedies the notebook offers (public), by name.
REMEDY_CHOICES = (
    "full_support_behaviour", "more_exploration", "restrict_target",
    "clip_ratio", "more_samples", "epsilon_denominator", "skip_action",
)
#: The ones that fix the problem by adding information: change what the data can contain.
GOOD_REMEDIES = frozenset(("full_support_behaviour", "more_exploration"))
#: Accepted chosen or not. Restricting the target adds no information: it makes the ratios honest by
#: changing the question (an expectation under another policy). The notebook's intro speaks of "fixes
#: that add information", under which it is out; Part B asks what makes "the expectation" estimable,
#: under which it is in. Both readings are fair, so it has no case and counts as a chosen remedy.
EITHER_WAY_REMEDIES = frozenset(("restrict_target",))
