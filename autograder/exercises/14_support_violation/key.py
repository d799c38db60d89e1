"""Answer key for exercise 14: importance ratios when the behaviour policy misses an action.

The policies vary per student (``course.variants.family_14_support_violation``): :func:`answers`
computes any variant's key from the reference; the module constants are variant 0's (the seed's).
"""

from autograder.reference import importance_support
from course.variants.family_14_support_violation import FAMILY

#: Variant 0: behaviour policy mu and target policy pi over the actions numbered 1, 2, 3 in the notebook.
BEHAVIOUR = tuple(FAMILY.seed["mu"])
TARGET = tuple(FAMILY.seed["pi"])

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


def report(parameters):
    """The reference's support report of one variant's ``parameters`` (``mu``, ``pi``)."""
    return importance_support(tuple(parameters["mu"]), tuple(parameters["pi"]))


def problem_actions(parameters) -> frozenset:
    """The offending actions in the notebook's numbering (1-based; the reference counts from 0)."""
    return frozenset(int(a) + 1 for a in report(parameters).violating_actions)


def answers(parameters) -> dict:
    """The answers of one variant, keyed by the names the notebook's answer cells assign (the remedies
    are the worked solution's choice: the two that add data and the target restricted).

    ``ratios`` holds pi(a) / mu(a) for the actions 1, 2, 3 (``inf`` where mu never takes the action),
    ``ratio_mean`` their mean under mu, E_mu[pi / mu]: the target's mass on the actions mu takes, which
    falls short of 1 by exactly the mass the data never sees."""
    found = report(parameters)
    (action,) = problem_actions(parameters)  # the family holds exactly one missing action
    return {"ratios_work": bool(found.ratios_defined), "problem_action": action,
            "ratios": tuple(float(r) for r in found.ratios), "ratio_mean": float(found.covered_target_mass),
            "remedies": frozenset(GOOD_REMEDIES | EITHER_WAY_REMEDIES)}


def inverted_ratios(parameters) -> tuple:
    """mu(a) / pi(a) per action: the ratio upside down (0 where mu never takes the action)."""
    mu, pi = tuple(float(m) for m in parameters["mu"]), tuple(float(p) for p in parameters["pi"])
    return tuple(m / p for m, p in zip(mu, pi))


#: Variant 0: whether ordinary ratios pi(a) / mu(a) estimate E_pi[f] from mu's data.
RATIOS_WORK = answers(FAMILY.seed)["ratios_work"]
#: Variant 0: the offending actions in the notebook's numbering.
PROBLEM_ACTIONS = problem_actions(FAMILY.seed)


def _g(value: float) -> str:
    return f"{value:g}"


def _about(value: float) -> str:
    """``= 2`` for a value that three decimals state exactly, ``\\approx 0.857`` otherwise."""
    return f"= {_g(round(value, 3))}" if abs(round(value, 3) - value) < 1e-12 else f"\\approx {value:.3f}"


def worked(parameters) -> dict:
    """The numbers ``solution.md`` quotes, as text, for one variant."""
    mu, pi = tuple(parameters["mu"]), tuple(parameters["pi"])
    found = report(parameters)
    (missing,) = problem_actions(parameters)
    seen = [a for a in range(len(mu)) if mu[a] > 0]
    ratios = " and ".join(f"${_g(pi[a])}/{_g(mu[a])} {_about(found.ratios[a])}$" for a in seen)
    covered = found.covered_target_mass
    restricted = [pi[a] / covered if mu[a] > 0 else 0.0 for a in range(len(mu))]
    exact = all(abs(round(v, 4) - v) < 1e-12 for v in restricted)
    restricted_text = "(" + ", ".join(_g(round(v, 4 if exact else 3)) for v in restricted) + ")"
    ratio_values = [f"{found.ratios[a]:.6g}" for a in range(len(mu))]
    ratio_values[missing - 1] = "math.inf"
    return {
        "ratios_list": "(" + ", ".join(ratio_values) + ")",
        "ratio_mean": _g(round(covered, 10)),
        "supported_ratios": ratios,
        "supported_actions": " and ".join(str(a + 1) for a in seen),
        "missing_action": str(missing),
        "missing_target": _g(pi[missing - 1]),
        "covered_sum": " + ".join(_g(pi[a]) for a in seen) + f" = {_g(round(covered, 10))}",
        "restricted_target": f"${restricted_text}$" if exact else f"$\\approx {restricted_text}$",
        "covered_percent": _g(round(100 * covered, 6)),
    }
