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

# The assignment is created in the gradebook by ``nbgrader generate_assignment module6``;
# students are created the first time they are autograded.
c.GenerateAssignment.create_assignment = True
c.Autograde.create_student = True

# Kernel execution (validate; the kit's assignments are never autograded in a kernel, see use_module6 below).
# A hidden test cell runs several student calls, each bounded at 10 s by the checks, so a cell gets a minute; a runaway cell is interrupted and scored as an error.
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

# The term's label enters every student's numbers with the course id (the release records both; the
# grader reads them from there). The kit's own course has none; a course running the module sets its term
# before release and never changes it after.
c.Module6.term = ""

# The kit, on for its assignments (module6, module6_further) exactly as in any other instructor's course
# (the block `autograder add-to-course` writes calls the same function): nbgrader's `autograde` and
# formgrader's Autograde button grade in the sandbox (student code never runs in a kernel of the grading
# user; see autograder/grading/nbgrader_bridge.py), released notebooks get the kit's stubs, quiet hidden-test
# cells, the typed-id cell and the kernel's language_info, and feedback pages never show hidden test code
# (autograder/feedback/nbgrader_pages.py). What stays course-wide and why: autograder/course_setup.py.
from autograder.course_setup import use_module6  # noqa: E402

use_module6(c)
