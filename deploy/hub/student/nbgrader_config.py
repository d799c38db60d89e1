"""nbgrader settings of every student's server on the hub (JUPYTER_CONFIG_PATH, jupyterhub_config.py).

The exchange and course id come from the hub. ``validate_all`` as in ``make lab``'s student
environment: Validate runs the open checks, not the (absent) hidden tests.
"""

import os

c = get_config()  # noqa: F821 -- injected by traitlets when it runs this file
c.Exchange.root = os.environ["MODULE6_EXCHANGE"]
c.CourseDirectory.course_id = os.environ["MODULE6_COURSE_ID"]
c.Validator.validate_all = True
