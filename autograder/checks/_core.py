"""The shape of a check: cases that ask for calls, judges that read decoded outcomes, points per group.

A check is split in two halves so that three callers can share it:

* :func:`plan` lists the calls a check needs (plain data, see :class:`autograder.channel.Call`);
* somebody performs them on the student side (the student's kernel, the self-study notebook, or
  the batch grader's sandbox) and hands back encoded outcomes;
* :func:`judge` turns the decoded outcomes into a :class:`CheckResult` in the trusted process.

:func:`run_check` and :func:`grade` glue both halves together in one process (hidden test cells,
self-study), still through the channel's bytes so that the judge sees the same plain data either way.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import math
from typing import Callable, Iterable, Mapping, Sequence

from autograder.channel import Call, Raised, Returned, Unreadable, decode_outcome, perform_call
from autograder.results import GroupVerdict, verdict_text
from autograder.limits import SELFSTUDY_CALL_SECONDS

Outcome = Returned | Raised | Unreadable



@dataclasses.dataclass(frozen=True)
class Verdict:
    """How one case went. ``message`` is shown to the student; it names a misconception when one fits
    and never reveals hidden inputs or expected values."""

    passed: bool
    message: str = ""
    misconception: str | None = None


PASS = Verdict(True)


class Reject(Exception):
    """Raised inside a judge (usually by a helper of :mod:`autograder.checks._judge`) to fail a case."""

    def __init__(self, message: str, misconception: str | None = None):
        super().__init__(message)
        self.message = message
        self.misconception = misconception


@dataclasses.dataclass(frozen=True)
class Group:
    """One hidden test cell: ``points`` for the cases of this group, graded as the fraction passed."""

    name: str
    points: float
    title: str

    @property
    def grade_id(self) -> str:
        return f"test_{self.name}"


#: The group every notebook's hidden tests start with: its open (public) checks, graded again.
PUBLIC = "public"
#: The group a coding exercise's hidden tests end with: bad input is refused (where ``error_case`` files its cases).
VALIDATION = "validation"
#: The title of the open checks' group when it needs no detail.
OPEN_CHECKS = "The notebook's open checks"


def coding_groups(public, *graded: Group, validation: tuple) -> tuple:
    """A coding exercise's hidden test cells in notebook order: the open checks, ``graded``, then validation.

    Parameters
    ----------
    public : float or (float, str)
        The open checks' points (titled :data:`OPEN_CHECKS`), or ``(points, title)`` for a title that
        says which checks they are.
    *graded : Group
        The exercise's own groups, none named :data:`PUBLIC` or :data:`VALIDATION`.
    validation : (float, str)
        The validation group's points and title.
    """
    points, title = public if isinstance(public, tuple) else (public, OPEN_CHECKS)
    groups = (Group(PUBLIC, points, title),) + tuple(graded) + (Group(VALIDATION, *validation),)
    names = [getattr(group, "name", group) for group in groups]
    if not all(isinstance(group, Group) for group in graded) or len(set(names)) != len(names):
        raise ValueError(f"coding_groups takes Group objects with names of their own besides {PUBLIC!r} and "
                         f"{VALIDATION!r}, got {names}")
    return groups


@dataclasses.dataclass(frozen=True)
class Central:
    """The idea an exercise is about, and the price of missing it.

    An answer whose ``cases`` (names of ordinary cases, in any group) fail with one of the
    ``misconceptions`` has the central idea wrong: every group then earns at most ``cap`` of its points,
    so the whole notebook earns at most ``cap`` of its autograded points, however many side rules
    (validation, dtypes, ...) it gets right. The cases run with every group, so that each hidden test
    cell (graded on its own by nbgrader) applies the same cap.

    ``idea`` completes the feedback sentence "the central idea (<idea>) is missing from these answers".
    ``min_failures``
    is how many of the ``cases`` must fail that way (1: any; more where the central idea is a whole
    family of checks, such as a validator that lets most kinds of broken input through).
    """

    idea: str
    misconceptions: frozenset
    cases: tuple
    cap: float = 1 / 3
    min_failures: int = 1

    def __post_init__(self):
        object.__setattr__(self, "misconceptions", frozenset(self.misconceptions))
        object.__setattr__(self, "cases", tuple(self.cases))
        if not self.cases or not self.misconceptions or not 0 <= self.cap < 1:
            raise ValueError("Central needs cases, misconceptions and a cap in [0, 1)")
        if not 1 <= self.min_failures <= len(self.cases):
            raise ValueError("Central.min_failures must lie between 1 and the number of cases")


@dataclasses.dataclass(frozen=True)
class Gate:
    """Points that count only where other, hidden cases show the same function works.

    Two uses, one mechanism:

    * **Bad input** (``needs="returned"``, the default): a stub that raises ValueError on everything
      would otherwise collect every case that expects an error. The cases of the gated ``groups`` earn
      their points only when every one of the ``cases`` (names of hidden cases that call the function
      with valid input) RETURNED: no exception, no timeout; the value need not be right, since other
      groups grade it. Use ordinary inputs rather than edge cases.
    * **Open checks** (``needs="passed"``): an answer can recognise the open check's inputs and return
      the published answer there and junk elsewhere. The open check is a hint; the hidden case is the
      evidence: a gated case earns its points only when every one of the ``cases`` (hidden cases of the
      same kind, which an answer that really passes the open check passes too) PASSED.

    Name hidden cases only, never the open check's (an answer can hard-code those). ``only`` narrows the
    gate to some cases of the gated groups (an open check with two halves of different kinds gets one
    gate per half); empty means every case of those groups.

    With ``per_function`` (the default) a gated case is withheld only when a gate case of one of the
    functions it calls did not return (or pass), so a notebook with two functions gates each on its
    own; every function a gated case calls must then have a gate case. Without it, any gate case that
    did not return withholds every gated case.

    * **Constant answers** (``needs="passed"`` with ``why``): where a few cases share one answer ("ok",
      zeros), a function that returns that answer on every input passes them. Those cases (``only``)
      earn their points only when the same function also passes a hidden case of the same group whose
      answer is another; ``why`` says so in the feedback instead of the open-check reason.
    * **Bad input of a working function** (``needs="one-passed"`` with ``why``): an answer may look up the
      open checks' inputs and return a rule-free formula or constants, with honest input checks (or
      arithmetic that happens to raise on a bad shape), everywhere else. The gated cases earn their points
      only when the function PASSED at least one of the ``cases`` (its ordinary hidden cases, several per
      function): one mistake in an otherwise working function keeps its bad-input points, a function that
      answers no ordinary input right does not.

    * **Attempts** (``needs="attempted"``): a gate case shows the function at work when it passed, or
      failed with a misconception the checks name (a student's mistake, not a made-up value).

    With ``quorum`` the gate opens for a function when that many of its gate cases returned (passed,
    were attempted), rather than every one: where the gate asks only that the function is not junk on
    every input, one such case shows it (``quorum=1``), and an honest slip on another costs nothing;
    against a constant, two cases whose answers differ (``quorum=2``: a constant is right on one at most).

    Every bad-input gate (``needs="returned"``) has a twin made by :class:`ExerciseCheck`,
    ``needs="attempted", quorum=1`` over the same cases (:data:`ATTEMPT_REASON`): a function that
    returns on valid input but gets none of those ordinary inputs right, nor wrong by a named mistake (an
    answer that hard-codes the open checks and returns zeros, a constant or any plausible junk
    elsewhere), earns no bad-input points either; an honest mistake keeps them, as before.

    Like :class:`Central`, the gate's cases run with every gated group, so that each hidden test cell
    (graded on its own by nbgrader or the batch grader) applies the same gate. An exercise may declare
    several gates (``ExerciseCheck(gate=(...))``); a case is withheld when any gate that covers it is shut.
    """

    groups: tuple = (VALIDATION,)
    cases: tuple = ()
    per_function: bool = True
    needs: str = "returned"
    only: tuple = ()
    #: Why a withheld case earns nothing, where neither default reason fits (a constant-answer gate).
    why: str = ""
    #: Open for a function when this many of its gate cases returned (passed, were attempted); 0: every one.
    quorum: int = 0
    #: A bad-input gate's twin (see above): what its cases must show ("attempted", or "passed" where a
    #: junk answer is easily named as a mistake, as a mask is), and its cases (empty: this gate's).
    attempt_needs: str = "attempted"
    attempt_cases: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "groups", tuple(self.groups))
        object.__setattr__(self, "cases", tuple(self.cases))
        object.__setattr__(self, "only", tuple(self.only))
        object.__setattr__(self, "attempt_cases", tuple(self.attempt_cases))
        if not self.groups or not self.cases:
            raise ValueError("Gate needs the gated groups and the names of valid-input cases")
        if self.needs not in ("returned", "passed", "attempted", "one-passed"):
            raise ValueError(f"Gate.needs must be 'returned', 'passed', 'attempted' or 'one-passed', not {self.needs!r}")
        if self.needs == "one-passed" and not self.why:
            raise ValueError("a 'one-passed' gate says why in its own words (why=...)")

    @property
    def reason(self) -> str:
        if self.why:
            return self.why
        return GATE_REASON if self.needs == "returned" else OPEN_GATE_REASON

    def covers(self, case: "Case") -> bool:
        """Whether this gate decides ``case``'s points."""
        return case.group in self.groups and (not self.only or case.name in self.only)


#: Why a gated case earns nothing; completed with who did not return and where.
GATE_REASON = "rejecting bad input counts only when valid input is accepted"
#: Why a bad-input case earns nothing when its function's answers to ordinary valid input were neither
#: right nor a mistake the checks name (an answer that hard-codes the open checks, say).
ATTEMPT_REASON = ("rejecting bad input counts only for a function that also answers valid input: right, or "
                  "wrong by a mistake the checks know")


def attempt_twin(gate: "Gate") -> "Gate":
    """The bad-input ``gate``'s twin: one of the same cases must show the function at work (right, or
    wrong by a named misconception)."""
    return Gate(groups=gate.groups, cases=gate.attempt_cases or gate.cases, per_function=gate.per_function,
                needs=gate.attempt_needs, only=gate.only, why=ATTEMPT_REASON, quorum=1)
#: Why an open-check case earns nothing when the hidden cases of its kind fail.
OPEN_GATE_REASON = ("the open check is a hint, and its points count only when the same function also "
                    "passes the hidden cases of the same kind")


@dataclasses.dataclass(frozen=True)
class Case:
    """One thing to verify: the calls to make and a judge for their outcomes (same order)."""

    name: str
    group: str
    calls: tuple
    judge: Callable[[tuple], Verdict]
    weight: float = 1.0


@dataclasses.dataclass(frozen=True)
class CaseResult:
    name: str
    group: str
    passed: bool
    message: str
    misconception: str | None
    weight: float
    #: The case's own verdict passed, but its points are withheld by the exercise's :class:`Gate`.
    withheld: bool = False


@dataclasses.dataclass(frozen=True)
class GroupResult:
    name: str
    title: str
    points_earned: float
    points_available: float
    cases: tuple
    #: Why the group's points were capped (the central idea is missing), or "" when they were not.
    capped: str = ""
    #: The central misconception behind the cap (None when not capped).
    capped_by: str | None = None
    #: Why the group's bad-input points were withheld (see :class:`Gate`), or "" when they were not.
    gated: str = ""
    #: The functions that did not return on valid input (empty when not gated).
    gated_by: tuple = ()

    @property
    def grade_id(self) -> str:
        return f"test_{self.name}"

    def cap_line(self, told: bool = False) -> str:
        """The cap as one line: the whole sentence, or (``told``: said earlier in the same feedback) a
        pointer to it; a group whose every case passed says that its points are capped all the same."""
        if not self.capped:
            return ""
        every = bool(self.cases) and all(case.passed for case in self.cases)
        lead = "every case passed, but the points are capped" if every else "points capped"
        return f"{lead} (the central idea is missing: see above)" if told else f"{lead}: {self.capped}"

    def feedback(self, *, cap_told: bool = False) -> str:
        """The group's verdict as text: :func:`autograder.results.verdict_text` of its record, the one
        text rendering every door prints (``cap_told``: the cap was told earlier in the same feedback)."""
        return verdict_text(GroupVerdict.from_result(self, cap_told=cap_told))


@dataclasses.dataclass(frozen=True)
class CheckResult:
    stem: str
    groups: tuple

    @property
    def points_earned(self) -> float:
        return _round(sum(group.points_earned for group in self.groups))

    @property
    def points_available(self) -> float:
        return _round(sum(group.points_available for group in self.groups))

    @property
    def cases(self) -> tuple:
        return tuple(case for group in self.groups for case in group.cases)

    @property
    def misconceptions(self) -> tuple:
        seen: list = []
        found = [case.misconception for case in self.cases] + [group.capped_by for group in self.groups]
        for key in found:
            if key and key not in seen:
                seen.append(key)
        return tuple(seen)

    def feedback(self) -> str:
        head = f"{self.stem}: {_fmt(self.points_earned)} / {_fmt(self.points_available)} points"
        parts, told = [head], False
        for group in self.groups:  # the cap is told in full once, where it first applies
            parts.append(group.feedback(cap_told=told))
            told = told or bool(group.capped)
        return "\n".join(parts)


def _round(value: float) -> float:
    return round(value + 0.0, 4)


def _fmt(value: float) -> str:
    return f"{value:g}"


class ExerciseCheck:
    """All the autograded checks of one notebook.

    Parameters
    ----------
    stem : str
        The notebook's file stem, e.g. ``"15_stable_log_softmax"``.
    groups : sequence of Group
        One per hidden test cell, in notebook order.
    build_cases : callable
        Returns the cases (deterministic: seeded randomness only). Called lazily, once. A builder with
        one parameter receives the student's :class:`autograder.variants.Variant` (their numbers, and
        the seed of their hidden inputs): see :meth:`at`.
    central : Central, optional
        The exercise's central idea: missing it caps every group (see :class:`Central`).
    gate : Gate or sequence of Gate, optional
        Groups (or cases) that earn points only where hidden cases show the function works: bad input
        only when valid input is accepted, an open check only when hidden cases of its kind pass (see
        :class:`Gate`). ``gate`` is the first (the bad-input gate, by convention); ``gates`` all of them.
    """

    def __init__(self, stem: str, groups: Sequence[Group], build_cases: Callable[[], Iterable[Case]],
                 central: Central | None = None, gate: Gate | Sequence[Gate] | None = None):
        self.stem = stem
        self.groups = tuple(groups)
        self.central = central
        self.gates = () if gate is None else (gate,) if isinstance(gate, Gate) else tuple(gate)
        self.gate = self.gates[0] if self.gates else None
        # Bad input counts only for a function that also answers valid input (right, or wrong by a named
        # mistake) at least once: each bad-input gate's twin (see Gate), after the declared gates.
        self.gates += tuple(attempt_twin(each) for each in self.gates if each.needs == "returned")
        for each in self.gates:
            for name in each.groups:
                self.group(name)
        # A builder that takes an argument builds each student's own cases from their Variant (see
        # autograder.variants): :meth:`at` binds one; without one, the cases are variant 0's.
        self.varies = _takes_variant(build_cases)
        self._variant_builder = build_cases if self.varies else None
        self._build_cases = (lambda: build_cases(_default_variant(stem))) if self.varies else build_cases
        self._cases: tuple | None = None
        self._bound: dict = {}

    def at(self, variant) -> "ExerciseCheck":
        """This check with the cases of ``variant`` (an :class:`autograder.variants.Variant`, or None for
        variant 0): itself when it does not vary. Bound checks are kept for the last few variants,
        so that grading a student's notebook cell by cell builds their cases once."""
        if not self.varies or variant is None:
            return self
        key = variant.key
        bound = self._bound.get(key)
        if bound is None:
            bound = copy.copy(self)
            bound.varies, bound._bound, bound._cases = False, {}, None
            bound._build_cases = functools.partial(self._variant_builder, variant)
            if len(self._bound) >= _BOUND_KEPT:
                self._bound.pop(next(iter(self._bound)))
            self._bound[key] = bound
        return bound

    def group(self, name: str) -> Group:
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(f"{self.stem} has no group {name!r}; groups: {[g.name for g in self.groups]}")

    def cases(self, groups: Iterable[str] | None = None) -> tuple:
        if self._cases is None:
            cases = tuple(self._build_cases())
            names = [case.name for case in cases]
            known = {group.name for group in self.groups}
            duplicated = sorted({name for name in names if names.count(name) > 1})
            if duplicated:
                raise RuntimeError(f"{self.stem}: duplicate case names {duplicated}")
            stray = sorted({case.group for case in cases} - known)
            if stray:
                raise RuntimeError(f"{self.stem}: cases in unknown groups {stray}")
            empty = sorted(known - {case.group for case in cases})
            if empty:
                raise RuntimeError(f"{self.stem}: groups without cases {empty}")
            if self.central is not None:
                unknown = sorted(set(self.central.cases) - set(names))
                if unknown:
                    raise RuntimeError(f"{self.stem}: central cases {unknown} do not exist")
            for each in self.gates:
                _check_gate(self.stem, each, cases)
            self._cases = cases
        if groups is None:
            return self._cases
        wanted = set(groups)
        for name in wanted:
            self.group(name)
        return tuple(case for case in self._cases if case.group in wanted)

    def central_cases(self) -> tuple:
        """The cases that reveal a wrong central idea (empty when the exercise declares none)."""
        if self.central is None:
            return ()
        return tuple(case for case in self.cases() if case.name in self.central.cases)

    def gate_cases(self, gate: Gate | None = None) -> tuple:
        """The hidden cases that open ``gate`` (every gate's when None; empty when there is no gate)."""
        names = set(gate.cases) if gate is not None else {name for each in self.gates for name in each.cases}
        return tuple(case for case in self.cases() if case.name in names)

    def planned_cases(self, groups: Iterable[str] | None = None) -> tuple:
        """What grading ``groups`` needs: their cases, then the central cases they do not hold, then
        (for a gated group) the gate's cases they do not hold."""
        cases = self.cases(groups)
        wanted = {g.name for g in self.groups} if groups is None else set(groups)
        extra = self.central_cases()
        for each in self.gates:
            if wanted & set(each.groups):
                extra += self.gate_cases(each)
        names = {case.name for case in cases}
        for case in extra:
            if case.name not in names:
                cases += (case,)
                names.add(case.name)
        return cases

    @property
    def points(self) -> float:
        return _round(sum(group.points for group in self.groups))


#: How many students' bound checks :meth:`ExerciseCheck.at` keeps (a worker grades one student at a time).
_BOUND_KEPT = 8


def _takes_variant(build_cases) -> bool:
    """Whether ``build_cases`` takes a variant (one positional parameter) rather than nothing."""
    try:
        parameters = inspect.signature(build_cases).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in parameters)


def _default_variant(stem: str):
    from autograder.variants import variant_for
    return variant_for(stem)


def _check_gate(stem: str, gate: Gate, cases: tuple) -> None:
    by_name = {case.name: case for case in cases}
    unknown = sorted(set(gate.cases) - set(by_name))
    if unknown:
        raise RuntimeError(f"{stem}: gate cases {unknown} do not exist")
    inside = sorted(name for name in gate.cases if gate.covers(by_name[name]))
    if inside:
        raise RuntimeError(f"{stem}: gate cases {inside} lie in a gated group; name valid-input cases of other groups")
    stray = sorted(name for name in gate.only if name not in by_name or by_name[name].group not in gate.groups)
    if stray:
        raise RuntimeError(f"{stem}: gate.only names {stray}, which are not cases of the gated groups")
    if gate.quorum > len(gate.cases):
        raise RuntimeError(f"{stem}: a gate asks for {gate.quorum} of its {len(gate.cases)} cases")
    if gate.per_function:
        opened = {call.target for name in gate.cases for call in by_name[name].calls}
        called = {call.target for case in cases if gate.covers(case) for call in case.calls}
        if called - opened:
            raise RuntimeError(f"{stem}: gated functions {sorted(called - opened)} have no gate case")


#: What graded work may import (the sandbox has nothing else); told in every notebook.
GRADED_IMPORTS = "the standard library, NumPy and the course package `course`"


def unavailable_sentence(modules: Sequence[str], undefined: str) -> str:
    """Why ``undefined`` is not defined when a cell stopped at an import of ``modules`` in the grader."""
    names = " and ".join(f"`{name}`" for name in modules)
    verb, pronoun = ("is", "it") if len(modules) == 1 else ("are", "them")
    return (f"{names} {verb} not available when your work is graded (answers may import only {GRADED_IMPORTS}): "
            f"a cell stopped where it imports {pronoun}, so `{undefined}` is not defined; use the standard "
            "library or NumPy instead")


def _safe_judge(case: Case, outcomes: tuple, unavailable: Sequence[str] = ()) -> Verdict:
    if len(outcomes) != len(case.calls):
        return Verdict(False, "the answer could not be run for this case")
    undefined = next((o.undefined for o in outcomes if isinstance(o, Unreadable) and o.undefined), "")
    if undefined and unavailable:
        return Verdict(False, unavailable_sentence(unavailable, undefined))
    not_implemented = next((o for o in outcomes if isinstance(o, Raised) and o.is_a("NotImplementedError")), None)
    if not_implemented is not None:
        return Verdict(False, "not implemented yet: replace the `raise NotImplementedError` stub with your code")
    try:
        verdict = case.judge(outcomes)
    except Reject as rejection:
        return Verdict(False, rejection.message, rejection.misconception)
    except Exception as error:  # a judge must never crash grading; an unexpected shape of answer fails the case
        # The error's class is not named: which one the judge hit depends on what the answer returned.
        return Verdict(False, "the returned value has an unexpected form")
    if not isinstance(verdict, Verdict):
        raise TypeError(f"judge of {case.name!r} returned {type(verdict).__name__}, not Verdict")
    return verdict


def judge_cases(check: ExerciseCheck, outcomes: Mapping[str, Sequence[Outcome]],
                groups: Iterable[str] | None = None, *, unavailable: Sequence[str] = ()) -> CheckResult:
    """Judge decoded outcomes (``case name -> outcomes of its calls``); missing cases fail.

    ``unavailable``: modules the grading environment does not have that a cell of the answer tried to
    import before any call ran (a fact the batch grader reports); a name that is then not defined is
    explained by them."""
    unavailable = tuple(unavailable)
    wanted = [g.name for g in check.groups] if groups is None else list(groups)
    capped, capped_by = _central_verdict(check, outcomes)
    closed = [(gate, _closed_functions(check, gate, outcomes)) for gate in check.gates]
    results = []
    for name in wanted:
        group = check.group(name)
        case_results = []
        blocked_here: list = []
        for case in check.cases([name]):
            got = tuple(outcomes.get(case.name, ()))
            verdict = _safe_judge(case, got, unavailable) if got else Verdict(False, "the answer could not be run for this case")
            blocked = tuple(item for gate, shut in closed if gate.covers(case) for item in _blocking(gate, case, shut))
            if verdict.passed and blocked:
                blocked_here += [item for item in blocked if item not in blocked_here]
                case_results.append(CaseResult(case.name, case.group, False, _gate_sentence(blocked),
                                               None, float(case.weight), withheld=True))
                continue
            case_results.append(CaseResult(case.name, case.group, bool(verdict.passed), verdict.message,
                                           verdict.misconception, float(case.weight)))
        total = sum(case.weight for case in case_results)
        passed = sum(case.weight for case in case_results if case.passed)
        earned = group.points * passed / total if total else 0.0
        # Partial credit is floored to the hundredth so that rounding never gives more than was earned.
        earned = math.floor(earned * 100 + 1e-9) / 100 if passed < total else float(group.points)
        if capped:
            earned = min(earned, math.floor(group.points * check.central.cap * 100 + 1e-9) / 100)
        results.append(GroupResult(group.name, group.title, _round(earned), float(group.points), tuple(case_results),
                                   capped, capped_by if capped else None,
                                   _gate_sentence(blocked_here) if blocked_here else "",
                                   tuple(dict.fromkeys(function for function, _, _, _ in blocked_here))))
    return CheckResult(check.stem, tuple(results))


def _closed_functions(check: ExerciseCheck, gate: Gate, outcomes: Mapping[str, Sequence[Outcome]]) -> dict:
    """``function -> (gate case name, what it shows)`` for each function with a gate case that did not
    return on every call ("raised on valid input too", "did not return on valid input too") or, for an
    open-check gate, did not pass ("failed the hidden case"); first such case in case order. For a
    "one-passed" gate: each function none of whose gate cases passed ("passed none of the hidden cases
    ..."), named by its first gate case."""
    if gate.needs == "one-passed":
        first: dict = {}
        working: set = set()
        for case in check.gate_cases(gate):
            got = tuple(outcomes.get(case.name, ()))
            passed = bool(got) and _safe_judge(case, got).passed
            for call in case.calls:
                first.setdefault(call.target, case.name)
                if passed:
                    working.add(call.target)
        return {function: (name, "passed none of the ordinary hidden cases that show it works ('{case}' first)")
                for function, name in first.items() if function not in working}
    closed: dict = {}
    shown: dict = {}  # function -> how many of its gate cases returned (passed, were attempted)
    for case in check.gate_cases(gate):
        got = tuple(outcomes.get(case.name, ()))
        returned = len(got) == len(case.calls) and all(isinstance(outcome, Returned) for outcome in got)
        if gate.needs in ("passed", "attempted"):
            verdict = _safe_judge(case, got) if got else None
            if verdict is not None and (verdict.passed or gate.needs == "attempted" and verdict.misconception):
                for target in dict.fromkeys(call.target for call in case.calls):
                    shown[target] = shown.get(target, 0) + 1
                continue
            how = ("answered none of its hidden cases of valid input right or by a known mistake (such as "
                   "'{case}')" if gate.needs == "attempted" else
                   ("got none of its hidden cases right (such as '{case}')" if gate.quorum == 1 else
                    f"got fewer than {gate.quorum} of its hidden cases right (such as '{{case}}')") if gate.quorum
                   else "failed the hidden case '{case}'")
        elif returned:
            for target in dict.fromkeys(call.target for call in case.calls):
                shown[target] = shown.get(target, 0) + 1
            continue
        else:
            how = ("raised" if any(isinstance(outcome, Raised) for outcome in got) else "did not return") + \
                " on valid input too (case '{case}')"
        for call in case.calls:
            closed.setdefault(call.target, (case.name, how))
    if gate.quorum:
        if not gate.per_function:
            return {} if sum(shown.values()) >= gate.quorum else closed
        closed = {target: why for target, why in closed.items() if shown.get(target, 0) < gate.quorum}
    return closed


def _blocking(gate: Gate, case: Case, closed: dict) -> tuple:
    """``(function, gate case, how, reason)`` of the closed functions that withhold ``case``'s points."""
    if not closed:
        return ()
    if gate.per_function:
        targets = [call.target for call in case.calls if call.target in closed]
    else:
        targets = list(closed)
    return tuple((target,) + closed[target] + (gate.reason,) for target in dict.fromkeys(targets))


def _gate_sentence(blocked: Sequence[tuple]) -> str:
    """One sentence per reason: who did not return (or pass) on which hidden case, and why that
    withholds the points."""
    by_reason: dict = {}
    for function, case, how, reason in blocked:
        part = f"`{function}` " + how.format(case=case)
        if part not in by_reason.setdefault(reason, []):
            by_reason[reason].append(part)
    return " ".join(f"points withheld: {' and '.join(parts)}: {reason}." for reason, parts in by_reason.items())


def _central_verdict(check: ExerciseCheck, outcomes: Mapping[str, Sequence[Outcome]]) -> tuple:
    """``(explanation, misconception)`` when a central case failed with a central misconception,
    else ``("", None)``."""
    central = check.central
    if central is None:
        return "", None
    found = []
    for case in check.central_cases():
        got = tuple(outcomes.get(case.name, ()))
        if not got:
            continue
        verdict = _safe_judge(case, got)
        if not verdict.passed and verdict.misconception in central.misconceptions:
            found.append(verdict)
    if len(found) < central.min_failures:
        return "", None
    share = "a third" if abs(central.cap - 1 / 3) < 1e-9 else f"{central.cap:.0%}"
    return (f"the central idea ({central.idea}) is missing from these answers, so every test of this notebook "
            f"earns at most {share} of its points: {found[0].message}", found[0].misconception)


def perform_cases(cases: Iterable[Case], namespace: dict, *, timeout: float | None = SELFSTUDY_CALL_SECONDS.value) -> dict:
    """Run every call of ``cases`` against ``namespace`` in this process, through the channel's bytes."""
    # Each call's arguments are rebuilt from their encoding, so a function that mutates its inputs
    # cannot change what the judge or a later case sees.
    return {case.name: tuple(decode_outcome(perform_call(Call.from_json(call.to_json()), namespace, timeout=timeout))
                             for call in case.calls)
            for case in cases}


__all__ = [
    "Call", "Case", "CaseResult", "Central", "CheckResult", "ExerciseCheck", "GATE_REASON", "Gate", "OPEN_GATE_REASON", "Group",
    "ATTEMPT_REASON",
    "GroupResult", "OPEN_CHECKS",
    "Outcome", "PASS", "PUBLIC", "Raised", "Reject", "Returned", "Unreadable", "VALIDATION", "Verdict", "coding_groups",
    "judge_cases", "perform_cases",
]
