"""nbgrader configuration of the Module 6 course directory (this file's directory is the course root).

nbgrader reads this file from the current directory. If it raises, nbgrader only logs an error and
carries on with its defaults (empty course id, default stubs, feedback that shows hidden tests), so
``tests/test_nbgrader_config.py`` loads it and checks that every value below is really in effect.
"""

import os
import sys

c = get_config()  # noqa: F821 -- injected by traitlets when it runs this file

ROOT = os.path.dirname(os.path.abspath(__file__))
# The feedback preprocessor lives in ``autograder``; a scratch copy of the course (demo, tests)
# must find the package even when it is run from a directory that is not on sys.path.
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from autograder.assignment import ASSIGNMENT, COURSE_ID  # noqa: E402,F401
from autograder.grading import nbgrader_bridge  # noqa: E402
from autograder.kernel_manager import PrivateSocketKernelManager  # noqa: E402

c.CourseDirectory.course_id = COURSE_ID
c.CourseDirectory.root = ROOT

# Setting ``ignore`` replaces nbgrader's defaults, so they are repeated first. The rest keeps
# instructor-only material (rubrics, answer keys, self-study notebooks, grading state) out of
# anything nbgrader copies from source/ into release/ or into a student's autograded folder.
c.CourseDirectory.ignore = [
    # nbgrader 0.9.6 defaults
    ".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback",
    # instructor-only material
    "rubrics", "rubric*", "*rubric*", "keys", "*_key.*", "*.key.*", "answer_key*", "solutions", "*solution*",
    "selfstudy", "self_study", "*selfstudy*", "instructor*", "INSTRUCTOR*",
    # grading state and editor/OS debris
    "gradebook.db*", "*.db", "*.sqlite", ".autograder-state.json",
    "*.orig", "*.rej", "*.bak", "*~", ".DS_Store", ".git*",
]

# A released solution region becomes this stub; the message says what to do with it (the checks
# recognise NotImplementedError as "not attempted yet").
c.ClearSolutions.code_stub = {
    "python": "# YOUR CODE HERE\n"
              'raise NotImplementedError("Replace this line with your code, then run the check cell below.")',
}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE: replace this line with your answer (a few sentences)."
c.ClearSolutions.enforce_metadata = True

# The assignment is created in the gradebook by ``nbgrader generate_assignment module6``;
# students are created the first time they are autograded.
c.GenerateAssignment.create_assignment = True
c.Autograde.create_student = True

# `nbgrader autograde` and formgrader's Autograde button grade with the sandboxed grader, exactly as
# `autograder grade` does (same scores, gradebook rows, autograded notebooks and feedback pages):
# student code never runs in a kernel of the grading user. See autograder/grading/nbgrader_bridge.py.
nbgrader_bridge.install(c)

# Kernel execution (validate, and autograde if the line above is ever removed). A hidden test cell runs several student calls, each bounded
# at 10 s by the checks, so a cell gets a minute; a runaway cell is interrupted and scored as an error.
c.Execute.timeout = 60
c.Execute.startup_timeout = 120
c.Execute.interrupt_on_timeout = True
c.Execute.raise_on_iopub_timeout = True
# Kernels listen on private Unix sockets, not on TCP ports another process can take while a busy
# machine is still starting them ("Kernel died before replying to kernel_info"): see
# autograder/kernel_manager.py.
c.ExecutePreprocessor.kernel_manager_class = PrivateSocketKernelManager

# The JupyterLab "Validate" button also reports public check cells and answer cells that raise: a
# released hidden test cell holds only its docstring and would otherwise "pass" on an untouched stub.
# So Validate runs the notebook's open checks; the hidden tests are not in a student's notebook.
# nbgrader's success text ("passes all the tests") is fixed in its JupyterLab bundle, not configurable:
# the notebooks' "How this notebook works" cell says what Validate checks, and the student environment
# of `make lab` rewords the sentence (tools/student_validate_message.py).
c.Validator.validate_all = True

# A released hidden test cell is its docstring alone, which a run would echo like a result: it gets
# a note and a ``pass`` before the release checksums are computed (grading restores the full cell).
# The cell where a laptop student types their id is released as written, not as a stub (TypedIdCell).
# Released notebooks carry the kernel's language_info, so JupyterLab does not open them as modified.
from autograder.authoring.release_preprocessors import release_steps  # noqa: E402

c.GenerateAssignment.preprocessors = release_steps()

# Feedback HTML must never show hidden test code: it is cut out of test cells and their tracebacks
# before the grades are attached and the page is rendered. ReadableFeedback then turns formulas into
# MathML and the grader's verdicts into readable blocks, and the module6_feedback template (nbgrader's
# own with headings in order) loads nothing from the network. The template belongs to the feedback
# exporter alone (``c.FeedbackExporter``): formgrader's grading view keeps nbgrader's own renderer.
from autograder.feedback import nbgrader_pages  # noqa: E402

nbgrader_pages.configure(c)
