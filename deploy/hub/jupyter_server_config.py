"""Jupyter server settings of every user's server on the hub (copied into each role's configuration folder
by localhub.py, found through JUPYTER_CONFIG_PATH).

A terminal opens where its user expects to type the README's commands: the instructor's in the course
directory with the instructor environment's ``nbgrader`` and ``autograder`` first on PATH, a student's in
their home with the student environment's ``nbgrader`` first (``nbgrader submit``). By default
jupyter_server_terminals==0.5.4 (``app.py``, ``TerminalsExtensionApp.initialize_configurables``) starts a
*login* shell for a server launched without a terminal, and Debian's ``/etc/profile`` then resets PATH to
the system's; it starts in the server's working directory, the home. This shell is interactive, not a
login shell, and reads ``terminal_rc.sh`` beside this file.
"""

import os

c = get_config()  # noqa: F821 -- injected by traitlets when it runs this file

c.ServerApp.terminado_settings = {
    "shell_command": ["/bin/bash", "--rcfile", os.path.join(os.path.dirname(os.path.abspath(__file__)), "terminal_rc.sh"),
                      "-i"],
}
