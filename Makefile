# Every target sets itself up: a missing .venv is created with the machine's python3 and the
# project is installed into it (again whenever pyproject.toml changes).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Parallel test workers: the machine's cores (the suite is sized for 2).
JOBS   ?= auto

.PHONY: test check demo lab release selfstudy bench dist clean-state hub

$(STAMP): pyproject.toml course/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ./course -e '.[test]'
	@# Bytecode for the editable packages, as pip writes it for an installed wheel: every graded
	@# notebook imports course modules in a read-only sandbox, where none can be written (and
	@# PYTHONDONTWRITEBYTECODE machines write none anywhere), so each would compile them again.
	$(PY) -m compileall -q course autograder
	@touch $@

## make test: the whole test suite (unit, doctests, notebooks, nbgrader pipeline, grader, browser)
test: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup

## make check: the fast lane while you edit (reference numerics, exercise checks, doctests; no nbgrader
## run, no notebook, no browser, no hub): a couple of minutes on 2 cores. make test stays the gate.
check: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup -m "not slow and not browser and not postgres" \
	  tests/test_reference_*.py tests/test_checks_*.py tests/test_import_layers.py tests/test_function_length.py \
	  course autograder/reference

## make demo: build the releases, grade a simulated class in a scratch copy (module6, then module6_further), print the grade tables
demo: $(STAMP)
	$(PY) -m autograder.demo

## make lab: JupyterLab on working copies of both flavours (your edits there are never overwritten):
##   build/lab/graded/module6 and build/lab/graded/module6_further (the graded notebooks) in the student environment $(STUDENT_VENV) (the student
##   package, JupyterLab and nbgrader's Validate only) on port $(LAB_PORT), and $(SELFSTUDY) (local checks,
##   hints, worked solutions) in the full environment on port $(SELFSTUDY_PORT), with its own Jupyter
##   config folder $(SELFSTUDY_JUPYTER) where nbgrader's instructor tools are off. Both addresses are
##   printed last; Ctrl+C stops both.
SELFSTUDY      ?= build/lab/selfstudy
SELFSTUDY_JUPYTER ?= build/lab/selfstudy-jupyter
STUDENT_VENV   ?= .venv-student
STUDENT_STAMP  := $(STUDENT_VENV)/.installed
LAB_PORT       ?= 8888
SELFSTUDY_PORT ?= 8889
# Extra arguments for both servers. In a container (running as root, no browser inside):
#   make lab LAB_ARGS="--allow-root --no-browser --ServerApp.ip=0.0.0.0"
LAB_ARGS       ?=

# nbgrader's instructor tools (Create Assignment, Formgrader, the nbgrader menu) and the exchange-based
# Assignment/Course lists are switched off for learners by tools/student_lab_config.py (the one list).
$(STUDENT_STAMP): course/pyproject.toml tools/student_nbgrader_config.py tools/student_validate_message.py tools/student_lab_config.py
	@test -x $(STUDENT_VENV)/bin/python || $(PYTHON) -m venv $(STUDENT_VENV)
	$(STUDENT_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(STUDENT_VENV)/bin/python -m pip install --quiet ./course jupyterlab nbgrader
	rm -rf course/build  # setuptools' in-tree copy of the student package, as after make dist
	$(STUDENT_VENV)/bin/python tools/student_lab_config.py sys_prefix
	$(STUDENT_VENV)/bin/python tools/student_validate_message.py $(STUDENT_VENV)
	@touch $@

lab: $(STAMP) $(STUDENT_STAMP)
	mkdir -p build/lab/graded
	cp -rn release/module6 release/module6_further build/lab/graded/
	$(PY) -m autograder.authoring.selfstudy_build $(SELFSTUDY)
	JUPYTER_CONFIG_DIR=$(CURDIR)/$(SELFSTUDY_JUPYTER) $(PY) tools/student_lab_config.py user
	JUPYTER_CONFIG_DIR=$(CURDIR)/$(SELFSTUDY_JUPYTER) $(PY) tools/run_lab.py \
	  $(CURDIR)/$(STUDENT_VENV)/bin/jupyter build/lab/graded $(LAB_PORT) \
	  $(CURDIR)/$(VENV)/bin/jupyter $(SELFSTUDY) $(SELFSTUDY_PORT) "$(LAB_ARGS)"

## make selfstudy: build the self-study notebooks into $(SELFSTUDY) (local checks, hints, gated worked
##   solutions); notebooks you have edited there are kept, and the build says which
selfstudy: $(STAMP)
	$(PY) -m autograder.authoring.selfstudy_build $(SELFSTUDY)

## make release: regenerate release/<assignment> from source/<assignment> with nbgrader (every assignment)
release: $(STAMP)
	$(PY) -m autograder.authoring.release
	$(PY) -m autograder.authoring.worked_example

## make bench: speed and memory benchmarks (by hand, never part of the tests)
bench: $(STAMP)
	$(PY) benchmarks/bench_causal_logprobs.py

## make dist: both wheels into dist/: module6-course (students) and module6-instructor (instructors)
dist: $(STAMP)
	rm -rf dist && mkdir -p dist
	$(PY) -m pip wheel --quiet --no-deps ./course -w dist
	$(PY) -m pip wheel --quiet --no-deps . -w dist
	# setuptools' in-tree leftovers only (build/lab holds a learner's notebooks)
	rm -rf build/lib build/bdist.* course/build
	@ls -l dist

## make hub: (as root) a local JupyterHub on 127.0.0.1:$(HUB_PORT) with three students and an instructor
##   (Unix accounts of its own, marked as the hub's, PAM), nbgrader's exchange, formgrader for the instructor
##   (deploy/hub/, README "Run it on a JupyterHub"); closes this checkout to other accounts, lays the hub out
##   in /srv/module6-hub/NAME, prints the URL and the accounts. Ctrl+C stops it; running it again resumes.
##   `make hub HUB_ARGS="--name m6b"` runs a second hub beside the first (HUB_PORT=8010); `HUB_ARGS=--remove`
##   deletes this hub's accounts (only those it made) and folder (not the environments).
##   `make hub HUB_ARGS=--pod-server` adds the instructor's server `pod`, which cannot sandbox (README).
HUB_PORT ?= 8000
HUB_ARGS ?=
hub: $(STAMP)
	$(PY) deploy/hub/localhub.py --port $(HUB_PORT) $(HUB_ARGS)
