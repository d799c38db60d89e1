# bash start-up file of a terminal in the instructor's JupyterLab on the hub (jupyter_server_config.py).
# The usual interactive files first, then what the README's instructor commands need.
[ -r /etc/bash.bashrc ] && . /etc/bash.bashrc
[ -r "$HOME/.bashrc" ] && . "$HOME/.bashrc"
export PATH="$MODULE6_HUB_PREFIX/bin:$PATH"
cd "$MODULE6_COURSE_DIR" || echo "the course directory $MODULE6_COURSE_DIR is not reachable" >&2
