"""nbgrader settings of every student's server on the hub (JUPYTER_CONFIG_PATH, jupyterhub_config.py).

The exchange and course id come from the hub. ``validate_all`` as in ``make lab``'s student
environment: Validate runs the open checks, not the (absent) hidden tests.

A submission is readable by its student and the instructor's group only. nbgrader==0.9.6's
``ExchangeSubmit.copy_files`` (``nbgrader/exchange/default/submit.py``) leaves its files world-readable and
makes the submission folder mode 0777 "so the instructor can delete later": anyone who learnt its name
could read it, or put files into it. The inbox is setgid (its entries get the instructor's group), so
0750/0640 lets the instructor's ``nbgrader collect`` read it and nobody else.
"""

import os

from nbgrader.exchange.default.submit import ExchangeSubmit

c = get_config()  # noqa: F821 -- injected by traitlets when it runs this file
c.Exchange.root = os.environ["MODULE6_EXCHANGE"]
c.CourseDirectory.course_id = os.environ["MODULE6_COURSE_ID"]
c.Validator.validate_all = True


class PrivateSubmit(ExchangeSubmit):
    """nbgrader's submit; the submission then readable by the student and the instructor's group only."""

    def copy_files(self):
        super().copy_files()
        self.set_perms(os.path.join(self.inbound_path, self.assignment_filename), fileperms=0o640, dirperms=0o750)


c.ExchangeFactory.submit = PrivateSubmit
