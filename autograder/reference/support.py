"""Support conditions for importance ratios between a behaviour policy and a target policy."""

from __future__ import annotations

import dataclasses

import numpy as np

from autograder.reference._validation import as_probabilities, same_shape


@dataclasses.dataclass(frozen=True)
class SupportReport:
    """Whether ordinary importance ratios target/behaviour can estimate expectations under the target.

    Attributes
    ----------
    ratios_defined : bool
        True when every action the target can take, the behaviour policy can take too
        (target << behaviour).
    violating_actions : tuple of int
        0-based actions with target > 0 = behaviour: never observed, ratio undefined.
    ratios : numpy.ndarray
        target/behaviour where behaviour > 0; ``inf`` at violating actions; ``nan`` where both are 0
        (an action neither policy takes has no ratio, and needs none).
    covered_target_mass : float
        Target mass on the behaviour support, :math:`\\mathbb E_\\mu[\\pi/\\mu]`; below 1 exactly when
        ratios are not defined everywhere.
    """

    ratios_defined: bool
    violating_actions: tuple
    ratios: np.ndarray
    covered_target_mass: float


def importance_support(behaviour, target):
    r"""Check the support condition :math:`\pi \ll \mu` for ratios :math:`\pi(a)/\mu(a)` on data from :math:`\mu`.

    Examples
    --------
    >>> report = importance_support([0.7, 0.3, 0.0], [0.6, 0.2, 0.2])
    >>> report.ratios_defined, report.violating_actions, round(report.covered_target_mass, 6)
    (False, (2,), 0.8)
    """
    mu = as_probabilities(behaviour, "behaviour")
    pi = as_probabilities(target, "target")
    if mu.ndim != 1:
        raise ValueError(f"behaviour must be 1-D, got shape {mu.shape}")
    same_shape(mu, pi, "behaviour", "target")
    seen = mu > 0
    violating = tuple(int(a) for a in np.flatnonzero(~seen & (pi > 0)))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(seen, pi / np.where(seen, mu, 1.0), np.where(pi > 0, np.inf, np.nan))
    return SupportReport(ratios_defined=not violating, violating_actions=violating, ratios=ratios,
                         covered_target_mass=float(pi[seen].sum()))


def importance_weight_mean(p, q):
    r""":math:`\mathbb E_{x\sim q}[p(x)/q(x)] = \sum_{x:\,q(x)>0} p(x)`: one only when :math:`p \ll q`.

    Examples
    --------
    >>> importance_weight_mean([0.8, 0.2], [1.0, 0.0])
    0.8
    """
    p = as_probabilities(p, "p")
    q = as_probabilities(q, "q")
    same_shape(p, q, "p", "q")
    total = np.where(q > 0, p, 0.0).sum(axis=-1)
    return float(total) if total.ndim == 0 else total
