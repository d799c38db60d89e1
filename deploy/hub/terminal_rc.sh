# bash start-up file of a terminal in a user's JupyterLab on the hub (jupyter_server_config.py).
# The usual interactive files first, then what the README's commands need: the role's environment first on
# PATH, and the instructor's terminal in the course directory.
[ -r /etc/bash.bashrc ] && . /etc/bash.bashrc
[ -r "$HOME/.bashrc" ] && . "$HOME/.bashrc"
export PATH="$MODULE6_HUB_PREFIX/bin:$PATH"
if [ -n "${MODULE6_COURSE_DIR:-}" ]; then
  cd "$MODULE6_COURSE_DIR" || echo "the course directory $MODULE6_COURSE_DIR is not reachable" >&2
else
  cd "$HOME"
fi
