#!/usr/bin/env bash
# Build the hub's two Python environments under DEST (default /opt/module6-hub/envs, localhub.py's ENVS):
#   DEST/student     the student package (./course), JupyterLab, nbgrader with the student tools only
#                    (Validate, the Assignment List) and jupyterhub-singleuser: nothing of the instructor package
#   DEST/instructor  the instructor package (autograder, nbgrader with formgrader) and jupyterhub-singleuser,
#                    installed from wheels (not editable: no account but root may read the checkout)
# Both are made from a system interpreter every account can run (PYTHON, default /usr/bin/python3.11,
# else /usr/bin/python3; 3.11 or newer):
# the hub starts each user's server as that user, so an interpreter under /root would not start.
# Needs uv (pip install uv; it is in the [test] extra) and network access to PyPI. Rebuilt only when
# the inputs change (a stamp per environment).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
DEST="${1:-/opt/module6-hub/envs}"
if [ -z "${PYTHON:-}" ]; then
  if [ -x /usr/bin/python3.11 ]; then PYTHON=/usr/bin/python3.11; else PYTHON=/usr/bin/python3; fi
fi
UV="${UV:-$(command -v uv || echo "$REPO/.venv/bin/uv")}"
# Copies, not uv's default hard links into its cache: the student environment's nbgrader bundle is
# edited in place below (tools/student_validate_message.py), and through a hard link that edit would
# reach the cache and every other environment linked to the same file.
export UV_LINK_MODE=copy
JUPYTERHUB_SPEC="jupyterhub>=5.2,<6"
mkdir -p "$DEST"
stamp_of() {  # what the environments were built from (both packages' files): rebuild when any of it changes
  (cd "$REPO" && find course autograder pyproject.toml deploy/hub/build_envs.sh tools/student_validate_message.py \
      -type f ! -path '*/__pycache__/*' ! -name '*.pyc' ! -path 'course/build/*' ! -path '*.egg-info/*' -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16
}
STAMP="$(stamp_of)"

# JupyterLab defaults for every user of an environment: no "get notified about Jupyter news?"
# pop-up (it covers the page, and a class should not be asked), and every cell rendered, so that
# find-in-page sees the whole notebook.
lab_overrides() {
  mkdir -p "$1/share/jupyter/lab/settings"
  cat > "$1/share/jupyter/lab/settings/overrides.json" <<'JSON'
{
  "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false},
  "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}
}
JSON
}

# nbgrader's instructor pieces (formgrader, Create Assignment, the Course List) are switched off for
# students and locked; the Assignment List (fetch, submit, fetch feedback) and Validate stay, and so
# does the Nbgrader menu, which then holds the Assignment List alone (its other items' commands are
# not registered). nbgrader's own table: docs/source/configuration/jupyterhub_config.rst (0.9.6).
STUDENT_LAB_OFF="create-assignment course-list formgrader"
STUDENT_SERVER_OFF="formgrader course_list"

if [ "$(cat "$DEST/student/.stamp" 2>/dev/null)" != "$STAMP" ]; then
  rm -rf "$DEST/student"
  "$UV" venv --quiet --python "$PYTHON" "$DEST/student"
  VIRTUAL_ENV="$DEST/student" "$UV" pip install --quiet "$REPO/course" jupyterlab "nbgrader==0.9.6" "$JUPYTERHUB_SPEC"
  rm -rf "$REPO/course/build"  # setuptools' in-tree copy of the student package
  for plugin in $STUDENT_LAB_OFF; do
    "$DEST/student/bin/jupyter" labextension disable --level=sys_prefix "@jupyter/nbgrader:$plugin" >/dev/null 2>&1 \
      || { echo "could not disable @jupyter/nbgrader:$plugin" >&2; exit 1; }
  done
  "$DEST/student/bin/jupyter" labextension lock --level=sys_prefix $(printf '@jupyter/nbgrader:%s ' $STUDENT_LAB_OFF) >/dev/null 2>&1
  for ext in $STUDENT_SERVER_OFF; do
    "$DEST/student/bin/jupyter" server extension disable --sys-prefix "nbgrader.server_extensions.$ext" >/dev/null 2>&1 \
      || { echo "could not disable nbgrader.server_extensions.$ext" >&2; exit 1; }
  done
  "$DEST/student/bin/python" "$REPO/tools/student_validate_message.py" "$DEST/student" >/dev/null
  lab_overrides "$DEST/student"
  # The instructor package must not be importable by students (from /: not this checkout's folder).
  if (cd / && env -u PYTHONPATH "$DEST/student/bin/python" -c "import autograder" 2>/dev/null); then
    echo "the student environment imports autograder" >&2; exit 1
  fi
  echo "$STAMP" > "$DEST/student/.stamp"
fi

if [ "$(cat "$DEST/instructor/.stamp" 2>/dev/null)" != "$STAMP" ]; then
  rm -rf "$DEST/instructor"
  "$UV" venv --quiet --python "$PYTHON" "$DEST/instructor"
  # From wheels, with bytecode (the grading sandbox is read-only: it could not write any).
  # [dask]: the pod server grades on a grading cluster (README, "Grading from a pod"; localhub.py --grading-cluster).
  VIRTUAL_ENV="$DEST/instructor" "$UV" pip install --quiet --compile-bytecode "$REPO/course" "$REPO[dask]" "$JUPYTERHUB_SPEC"
  rm -rf "$REPO/course/build" "$REPO/build/lib" "$REPO"/build/bdist.*  # setuptools' in-tree leftovers
  lab_overrides "$DEST/instructor"
  echo "$STAMP" > "$DEST/instructor/.stamp"
fi
# Everyone runs the student environment; only root enters the instructor environment until localhub.py
# gives it to the instructors' group (mode 0750): a student never reads or runs the kit.
chmod 0755 "$DEST"
chmod -R a+rX "$DEST/student"
chmod -R go-w "$DEST/instructor"
chmod -R a+rX "$DEST/instructor"
chmod 0750 "$DEST/instructor"
echo "$DEST/student $DEST/instructor"
