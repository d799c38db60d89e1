"""The variants frame: whose numbers a notebook holds, the same numbers everywhere, the course secret,
and a check bound to a student's variant (the families have tests of their own)."""

import json
import os
import stat

import pytest

from autograder import checks
from autograder import exercises, variant_listing, variants
from course import variants as family_registry
from course.variants import Draw, StudentIdError, identify, parameters, your_numbers

STEM = "09_sequence_ppl"


@pytest.fixture(autouse=True)
def _desk():
    """Each test starts at the desk: no example mode."""
    family_registry.example_numbers(False)
    yield
    family_registry.example_numbers(False)


# --------------------------------------------------------------------------- drawing


def test_draws_are_a_pure_function_of_course_exercise_and_id():
    assert parameters(STEM, "ada") == parameters(STEM, "ada")
    assert parameters(STEM, "ada") != parameters(STEM, "ben")
    # pinned: a change of the scheme or of Draw changes every student's numbers, which must be deliberate
    # (bump course.variants.SCHEME and say so: regrades follow)
    assert parameters(STEM, "ada") == {"p": (0.74, 0.39, 0.76), "p4": 1.0}


def test_no_id_is_variant_zero_the_seeds_numbers():
    assert parameters(STEM, None) == parameters(STEM, "") == {"p": (0.5, 0.25, 0.8), "p4": 1.0}
    assert parameters("15_stable_log_softmax", "ada") == {}  # an exercise with no family has no numbers


def test_draw_helpers_stay_in_range_and_on_the_grid():
    d = Draw(b"seed")
    values = [d.grid(0.1, 0.95, 0.05) for _ in range(400)]
    assert set(values) == {round(0.1 + 0.05 * k, 2) for k in range(18)}  # every grid point, exactly stated
    assert all(repr(v) == f"{v:.2f}".rstrip("0").rstrip(".") or repr(v) == f"{v:.1f}" for v in values)
    assert sorted({d.integer(3, 5) for _ in range(200)}) == [3, 4, 5]
    assert sorted(d.shuffled(range(6))) == list(range(6))
    with pytest.raises(ValueError, match="high"):
        d.integer(2, 1)
    with pytest.raises(RuntimeError, match="fewer than 3"):
        d.distinct(lambda: 1, 3, tries=10)


# --------------------------------------------------------------------------- who the student is


def test_the_hub_sign_in_is_the_id_and_a_typed_id_must_agree_with_it():
    assert identify("", {"JUPYTERHUB_USER": "ada"}).student == "ada"
    assert identify("ada", {"JUPYTERHUB_USER": "ada"}).source == "typed"
    with pytest.raises(StudentIdError, match="signed in to JupyterHub as 'ada'"):
        identify("ben", {"JUPYTERHUB_USER": "ada"})


def test_a_laptop_needs_a_typed_id_and_refuses_what_is_not_an_id():
    assert identify("  ada ", {}).student == "ada"
    assert identify("", {}).student is None
    for fine in ("jos\u00e9", "o'brien", "A.B@x-y"):  # nbgrader ids a laptop student must be able to type
        assert identify(fine, {}).student == fine
    for bad in ("two words", "a/b", "a\\b", "*", "a+b", "..", "x" * 101):
        with pytest.raises(StudentIdError, match="is not a student id"):
            identify(bad, {})
    with pytest.raises(StudentIdError, match="should be a string"):
        identify(123, {})


def test_the_numbers_cell_stops_without_an_id_and_shows_the_example(monkeypatch, capsys):
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    with pytest.raises(StudentIdError, match="Type your course"):
        your_numbers(STEM, "")
    assert "Example numbers (variant 0)" in capsys.readouterr().out
    family_registry.example_numbers(True)  # self-study, documentation, tests
    assert your_numbers(STEM, "")["p"] == (0.5, 0.25, 0.8)


def test_the_grader_starts_a_varying_notebook_signed_in_as_the_submitting_student(monkeypatch):
    """What the worker puts in the notebook's environment makes the numbers cell show that student's."""
    from autograder.grading.task import GradingTask
    from autograder.grading.worker import notebook_environment
    task = GradingTask(student="ada", assignment="module6", stem=STEM, source="")
    environ = notebook_environment(task, variants.variant_for(STEM, "ada"))
    assert environ == {"JUPYTERHUB_USER": "ada"}
    assert notebook_environment(task, variants.variant_for("15_stable_log_softmax", "ada")) == {}
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    shown = your_numbers(STEM, "")
    assert shown.identity.source == "hub" and dict(shown) == parameters(STEM, "ada")
    assert "'ada'" in repr(shown) and "<table>" in shown._repr_html_()
    with pytest.raises(StudentIdError, match="signed in to JupyterHub as 'ada'"):
        your_numbers(STEM, "cai")  # a submitted id naming someone else stops there, as it did at the desk


def test_the_html_table_escapes_what_it_shows(monkeypatch):
    numbers = family_registry.Numbers(STEM, family_registry.Identity("ada", "typed"), {}, [("<b>x</b>", "<i>")])
    assert "<b>" not in numbers._repr_html_() and "&lt;i&gt;" in numbers._repr_html_()


def test_typed_id_is_read_without_running_the_cell():
    assert variants.typed_id('STUDENT_ID = "ben"') == "ben"
    assert variants.typed_id('STUDENT_ID = ""') is None
    assert variants.typed_id('import os\nSTUDENT_ID = os.environ["X"]') is None  # not a literal: says nothing
    assert variants.typed_id("STUDENT_ID = (") is None


# --------------------------------------------------------------------------- keys, checks and secrets


def test_a_check_bound_to_a_variant_grades_that_variants_numbers():
    ada, ben = variants.variant_for(STEM, "ada"), variants.variant_for(STEM, "ben")
    answers = exercises.answers_for(STEM, "ada")
    assert checks.run_check(STEM, dict(answers), variant=ada).points_earned == checks.CHECKS[STEM].points
    assert checks.run_check(STEM, dict(answers), variant=ben).points_earned == 0
    assert checks.CHECKS[STEM].at(ada) is checks.CHECKS[STEM].at(variants.variant_for(STEM, "ada"))
    assert checks.CHECKS[STEM].at(None) is checks.CHECKS[STEM]


def test_in_ones_own_kernel_the_check_grades_the_numbers_the_notebook_shows(monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_USER", "ada")
    namespace = dict(exercises.answers_for(STEM, "ada"), numbers=your_numbers(STEM, ""))
    assert checks.run_check(STEM, namespace).points_earned == checks.CHECKS[STEM].points


def test_hidden_seeds_need_the_secret_and_differ_per_student():
    assert variants.variant_for(STEM, "ada").seed(15) == 15  # no secret: the check's own seed
    one, two = b"\x01" * 32, b"\x02" * 32
    a1, b1 = variants.variant_for(STEM, "ada", one), variants.variant_for(STEM, "ben", one)
    assert a1.seed(15) == variants.variant_for(STEM, "ada", one).seed(15)
    assert len({a1.seed(15), b1.seed(15), variants.variant_for(STEM, "ada", two).seed(15), a1.seed(16)}) == 4


def test_the_course_secret_is_made_once_private_and_refuses_a_link(tmp_path, monkeypatch):
    monkeypatch.delenv(variants.SECRET_ENV, raising=False)
    assert variants.course_secret(tmp_path) is None
    made = variants.course_secret(tmp_path, create=True)
    path = tmp_path / variants.SECRET_FILE
    assert len(made) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert variants.course_secret(tmp_path, create=True) == made
    monkeypatch.setenv(variants.SECRET_ENV, "ab" * 32)
    assert variants.course_secret(tmp_path) == b"\xab" * 32
    monkeypatch.setenv(variants.SECRET_ENV, "not hex")
    with pytest.raises(ValueError, match="hexadecimal"):
        variants.course_secret(tmp_path)
    monkeypatch.delenv(variants.SECRET_ENV)
    other = tmp_path / "linked"
    other.mkdir()
    os.symlink(path, other / variants.SECRET_FILE)
    with pytest.raises(ValueError, match="symbolic link"):
        variants.course_secret(other)


def test_describe_prints_parameters_and_answers_as_json():
    described = variant_listing.describe("module6", "ada")
    assert described[STEM]["parameters"] == {"p": [0.74, 0.39, 0.76], "p4": 1.0}
    assert set(described[STEM]["answers"]) == {"sequence_logprob", "mean_nll", "perplexity",
                                               "sequence_logprob_4", "perplexity_4"}
    json.dumps(described)
    assert variant_listing.json_value({"a", "b"}) == {"type": "set", "items": ["a", "b"]}
    with pytest.raises(ValueError, match="assignment should be one of"):
        variant_listing.describe("module7", "ada")


def test_every_answer_name_is_assigned_by_the_release_notebook():
    """The key speaks the notebook's language: each answer is a name an answer cell of the release binds."""
    import ast
    import nbformat
    from autograder.assignment import assignment_of, release_dir
    for stem in family_registry.families():
        nb = nbformat.read(release_dir(assignment=assignment_of(stem)) / f"{stem}.ipynb", as_version=4)
        bound = {target.id for cell in nb.cells if cell.cell_type == "code"
                 for node in ast.walk(ast.parse(cell.source)) if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name)}
        assert set(exercises.answers_for(stem, "ada")) <= bound, stem


def test_placeholders_are_filled_and_an_unknown_one_is_an_authoring_error():
    assert exercises.fill("no placeholders", STEM) == "no placeholders"
    with pytest.raises(KeyError, match="nothing_like_this"):
        exercises.fill("{{ nothing_like_this }}", STEM)


def test_plain_nbgrader_autograde_is_told_by_the_submission_folder(tmp_path, monkeypatch):
    """In-kernel nbgrader runs the kernel in submitted/<student>/<assignment>: that id, over the hub's."""
    folder = tmp_path / "submitted" / "ada" / "module6"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    assert identify("ben", {"JUPYTERHUB_USER": "cai"}) == family_registry.Identity("ada", "nbgrader")
    monkeypatch.chdir(tmp_path)
    assert identify("", {"JUPYTERHUB_USER": "cai"}).student == "cai"
    assert family_registry._nbgrader_submission_folder(str(tmp_path / "work" / "ada" / "module6")) is None


def test_no_student_ever_gets_the_example_numbers():
    """Variant 0's answers are the course notes' worked solution, and the notebook tells a student with
    an id that their numbers differ: a draw that lands on them is drawn again (05 and 06 did, for about
    one id in a thousand)."""
    for stem, family in family_registry.families().items():
        seed = dict(family.seed)
        assert all(parameters(stem, f"s{i:05d}") != seed for i in range(3000)), stem
    assert parameters("05_negative_kl", "s00367") != dict(family_registry.families()["05_negative_kl"].seed)


def test_the_json_is_strict_even_where_an_answer_is_infinite():
    described = variant_listing.describe("module6", "ada")
    assert described["06_k3_support"]["answers"]["kl_example_2"] == "inf"
    json.dumps(described, allow_nan=False)


def test_the_grader_runs_the_released_id_cell_where_one_only_typed_an_id():
    from autograder.grading.worker import run_released_id_cell
    from course.variants import STUDENT_ID_CELL, STUDENT_ID_GRADE_ID
    typed = {"kind": "exec", "id": STUDENT_ID_GRADE_ID, "source": '# mine\nSTUDENT_ID = "Ada"'}
    custom = {"kind": "exec", "id": STUDENT_ID_GRADE_ID, "source": 'STUDENT_ID = "ada"\nhelper = 3'}
    other = {"kind": "exec", "id": "answer_three_tokens", "source": 'STUDENT_ID = "x"'}
    steps = [typed, custom, other]
    run_released_id_cell(steps)
    assert typed["source"] == STUDENT_ID_CELL  # only an id: the released cell runs instead
    assert custom["source"].endswith("helper = 3") and other["source"] == 'STUDENT_ID = "x"'  # code runs as written
