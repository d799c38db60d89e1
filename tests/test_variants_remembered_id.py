"""A laptop student gives their id once for every notebook (issue 35), and a notebook without one says so.

``course.variants.remember_id("ada")`` writes the id to the user's configuration folder
(``course.variants.id_file``); every notebook whose numbers vary then shows ada's numbers and says where
the id came from, unless its own ``STUDENT_ID`` cell names someone (the cell wins). On a hub the sign-in
says who the student is and the file is never read, so nothing written there changes whose numbers
the grader uses (it signs every notebook in as the graded student). A notebook that knows nobody stops
at its numbers cell with one sentence that names the cell to fill in, and no traceback.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from course import variants
from course.variants import ID_FILE_ENV, NO_ID, StudentIdError, identify, remember_id, your_numbers

STEM = "09_sequence_ppl"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def id_file(tmp_path, monkeypatch):
    path = tmp_path / "config" / "module6" / "student_id"
    monkeypatch.setenv(ID_FILE_ENV, str(path))
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    return path


def test_remember_id_writes_the_file_and_every_notebook_shows_that_students_numbers(id_file, capsys):
    assert remember_id("ada") == id_file
    assert id_file.read_text() == "ada\n"
    assert "now shows the numbers of 'ada'" in capsys.readouterr().out
    numbers = your_numbers(STEM, "")
    assert numbers.identity == variants.Identity("ada", "remembered")
    assert dict(numbers) == variants.parameters(STEM, "ada")
    assert numbers.heading == (f"Numbers of student 'ada' (from the id remembered for every notebook on this "
                               f"computer, in {id_file})")
    assert your_numbers("11_k_estimators", "").identity.student == "ada"  # every notebook, not one


def test_the_notebooks_own_cell_still_wins(id_file):
    remember_id("ada")
    numbers = your_numbers(STEM, "ben")
    assert numbers.identity == variants.Identity("ben", "typed")


def test_on_a_hub_the_sign_in_wins_and_the_file_is_never_read(id_file, monkeypatch):
    """The grader signs each notebook in as the graded student (JUPYTERHUB_USER): a remembered id, even
    one that is not an id at all, cannot change whose numbers it grades with."""
    id_file.parent.mkdir(parents=True)
    id_file.write_text("not an id at all\n")
    monkeypatch.setenv("JUPYTERHUB_USER", "ann")
    assert identify("") == variants.Identity("ann", "hub")
    id_file.write_text("mallory\n")
    assert identify("", {"JUPYTERHUB_USER": "ann", ID_FILE_ENV: str(id_file)}) == variants.Identity("ann", "hub")


def test_the_sandbox_never_carries_the_id_files_setting_nor_a_home_with_one():
    from autograder.grading.harness import JOB_ENVIRONMENT
    from autograder.grading.sandbox import Sandbox

    assert set(JOB_ENVIRONMENT) == {"JUPYTERHUB_USER"}
    box = Sandbox.__new__(Sandbox)
    box._bwrap = None  # the unsandboxed layout, whose scratch folder is a real path
    environment = box._environment("/tmp/scratch")
    assert ID_FILE_ENV not in environment and "XDG_CONFIG_HOME" not in environment
    assert environment["HOME"] == "/tmp/scratch"  # a fresh, empty scratch folder per notebook


def test_a_file_that_holds_no_id_is_named(id_file):
    id_file.parent.mkdir(parents=True)
    id_file.write_text("two words\n")
    with pytest.raises(StudentIdError, match="the id remembered in .*student_id = 'two words' is not a student id"):
        your_numbers(STEM, "")
    id_file.write_text("\n")  # empty: as if there were none
    with pytest.raises(StudentIdError, match="No student id is known"):
        your_numbers(STEM, "")


def test_forget_id_removes_it(id_file):
    remember_id("ada")
    variants.forget_id()
    assert not id_file.exists()
    variants.forget_id()  # nothing to remove: nothing happens
    with pytest.raises(StudentIdError):
        your_numbers(STEM, "")


def test_remember_id_refuses_what_is_not_an_id(id_file):
    for bad in ("", "a b", "x/y"):
        with pytest.raises(StudentIdError):
            remember_id(bad)
    assert not id_file.exists()


def test_the_file_lives_in_the_users_configuration_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(ID_FILE_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert variants.id_file() == tmp_path / "module6" / "student_id"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert variants.id_file() == tmp_path / "home" / ".config" / "module6" / "student_id"


def test_a_notebook_that_knows_nobody_stops_with_one_sentence_naming_the_cell(id_file, capsys):
    with pytest.raises(StudentIdError) as raised:
        your_numbers(STEM, "")
    assert str(raised.value) == NO_ID
    assert 'STUDENT_ID = "" in the cell just above this one' in NO_ID and "first cell" not in NO_ID
    assert 'remember_id("your id")' in NO_ID
    assert "Example numbers (variant 0)" in capsys.readouterr().out  # the table, printed above the sentence
    shown = ANSI.sub("", "\n".join(raised.value._render_traceback_()))
    assert " ".join(shown.split()) == f"StudentIdError: {NO_ID}"  # the sentence, and no traceback


def test_in_a_kernel_the_sentence_is_all_the_error_shows(id_file, tmp_path):
    """What JupyterLab shows: the error output of the numbers cell holds the sentence, no frames."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('STUDENT_ID = ""'),
        nbformat.v4.new_code_cell(f'from course.variants import your_numbers\nnumbers = your_numbers("{STEM}", STUDENT_ID)')])
    with pytest.raises(CellExecutionError):
        NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    (error,) = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert error.ename == "StudentIdError"
    text = ANSI.sub("", "\n".join(error.traceback))
    assert " ".join(text.split()) == f"StudentIdError: {NO_ID}"
    assert "File " not in text and "site-packages" not in text and "course/variants" not in text


def test_remember_id_in_a_kernel_then_another_notebook_shows_it(id_file, tmp_path):
    """Once, in any notebook; a notebook opened afterwards (another kernel) shows that student's numbers."""
    subprocess.run([sys.executable, "-c", "from course.variants import remember_id; remember_id('cai')"],
                   check=True, capture_output=True)
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('STUDENT_ID = ""'),
        nbformat.v4.new_code_cell(f'from course.variants import your_numbers\nnumbers = your_numbers("{STEM}", STUDENT_ID)\n'
                                  "numbers")])
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = nb.cells[1].outputs[0]["data"]["text/plain"]
    assert shown.startswith("Numbers of student 'cai' (from the id remembered for every notebook on this computer")
