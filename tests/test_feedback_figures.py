"""A student's figure survives the sandbox and reaches the feedback page (toy course, real sandbox)."""

from __future__ import annotations

import re

from hostile import toy
from autograder.grading.batch import Options, run

PLOT = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "def double(x):\n    return 2 * np.asarray(x, dtype=float)\n"
        "plt.plot([0, 1, 2], [0, 2, 4])\nplt.title('my doubling')\n")


def test_figure_reaches_the_feedback_page_with_alt_text(tmp_path):
    course = toy.copy_course(toy.template(), tmp_path / "course")
    toy.submit(course, "ann", {**toy.honest_answers(), "double": PLOT})
    assert run(Options("toy", course_dir=str(course), jobs=1, progress=False)) == 0
    (page,) = (course / "feedback" / "ann" / "toy").glob("*.html")
    text = page.read_text()
    images = re.findall(r"<img src='data:image/png;base64,([A-Za-z0-9+/=]+)' alt='([^']+)'", text)
    assert len(images) == 1 and images[0][1].startswith("Figure 1 made by your code")
    import base64
    assert base64.b64decode(images[0][0]).startswith(b"\x89PNG")
    assert "Passed" in text  # the answer still graded
