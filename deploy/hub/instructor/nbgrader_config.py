"""nbgrader settings of the instructor's server on the hub (JUPYTER_CONFIG_PATH, jupyterhub_config.py).

The course's own ``nbgrader_config.py`` (grader bridge, feedback pages, release steps) is loaded from
the course directory, then the hub's exchange is added, so formgrader, ``nbgrader collect`` and
``nbgrader release_feedback`` run in a terminal of this server all use the same shared exchange.
"""

import os

c = get_config()  # noqa: F821 -- injected by traitlets when it runs this file
load_subconfig(os.path.join(os.environ["MODULE6_COURSE_DIR"], "nbgrader_config.py"))  # noqa: F821
c.Exchange.root = os.environ["MODULE6_EXCHANGE"]
# The hub's class list for the LMS exports (deploy/hub/localhub.py writes it).
ROSTER = os.path.join(os.environ["MODULE6_COURSE_DIR"], "roster.csv")
if os.path.isfile(ROSTER):
    c.LmsExport.roster = ROSTER
# The pod server (a named server: localhub.py --pod-server) grades on the grading cluster when
# localhub.py --grading-cluster started one (README, "Grading from a pod", step 3's four lines, written
# there); the default server keeps grading in its own sandbox.
CLUSTER = os.path.join(os.path.expanduser("~"), "grading-tls", "cluster.py")
if os.environ.get("JUPYTERHUB_SERVER_NAME") and os.path.isfile(CLUSTER):
    load_subconfig(CLUSTER)  # noqa: F821
