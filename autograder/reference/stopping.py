"""From a raw stop reason to the episode flags ``terminated`` and ``truncated``, under a task contract."""

from __future__ import annotations

import dataclasses

from autograder.reference._validation import _describe


@dataclasses.dataclass(frozen=True)
class StopFlags:
    """What a rollout records about how a response ended.

    ``stop_reason`` is the raw, machine-readable cause (kept even after mapping: the same length can
    come from EOS, a budget, a timeout or an interrupt); ``terminated`` says the task reached a true
    terminal state; ``truncated`` says an outside limit cut the episode. Both may be true.
    """

    stop_reason: str
    terminated: bool
    truncated: bool


@dataclasses.dataclass(frozen=True)
class TaskContract:
    """A task's explicit mapping from raw stop reasons to termination and truncation.

    Attributes
    ----------
    name : str
    terminal_reasons : frozenset of str
        Reasons that are natural terminal events of *this* task.
    truncation_reasons : frozenset of str
        Reasons that are external cuts. A reason may be in both sets (a terminal event that
        coincides with a buffer boundary); a reason in neither is unknown and rejected.

    Examples
    --------
    >>> EOS_IS_TERMINAL.map("length")
    StopFlags(stop_reason='length', terminated=False, truncated=True)
    """

    name: str
    terminal_reasons: frozenset
    truncation_reasons: frozenset

    def __post_init__(self):
        for field in ("terminal_reasons", "truncation_reasons"):
            reasons = getattr(self, field)
            if isinstance(reasons, str) or not all(isinstance(r, str) and r for r in reasons):
                raise TypeError(f"{field} must be a collection of non-empty strings")
            object.__setattr__(self, field, frozenset(reasons))

    @property
    def known_reasons(self) -> frozenset:
        return self.terminal_reasons | self.truncation_reasons

    def map(self, stop_reason) -> StopFlags:
        """The flags for ``stop_reason`` under this contract (``ValueError`` for an unknown reason)."""
        if not isinstance(stop_reason, str):
            raise TypeError(f"stop_reason must be a string, got {_describe(stop_reason)}")
        if not stop_reason.strip():
            raise ValueError("stop_reason must be a non-empty string")
        if stop_reason not in self.known_reasons:
            raise ValueError(f"stop_reason {stop_reason!r} is not covered by task contract {self.name!r} "
                             f"(known: {sorted(self.known_reasons)}); extend the contract explicitly")
        return StopFlags(stop_reason, stop_reason in self.terminal_reasons, stop_reason in self.truncation_reasons)


#: The contract of exercise 1: a model-selected EOS ends the task; hitting max_new_tokens is a cut.
EOS_IS_TERMINAL = TaskContract("eos-is-terminal", frozenset({"eos"}), frozenset({"length"}))


def map_stop_reason(stop_reason, contract=EOS_IS_TERMINAL):
    """Map a raw stop reason to :class:`StopFlags` under ``contract``.

    Examples
    --------
    >>> map_stop_reason("eos")
    StopFlags(stop_reason='eos', terminated=True, truncated=False)
    """
    if not isinstance(contract, TaskContract):
        raise TypeError(f"contract must be a TaskContract, got {_describe(contract)}")
    return contract.map(stop_reason)
