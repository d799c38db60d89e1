"""Jupyter server settings of the instructor's server on the hub (JUPYTER_CONFIG_PATH, jupyterhub_config.py).

A terminal opens as an instructor expects to type the README's commands in it: in the course
directory, with the instructor environment's ``nbgrader`` and ``autograder`` first on PATH. By default
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
