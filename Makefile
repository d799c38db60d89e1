# Every target sets itself up: a missing .venv is created with the machine's python3 and the
# project is installed into it (again whenever pyproject.toml changes).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Parallel test workers: the machine's cores (the suite is sized for 2).
JOBS   ?= auto

.PHONY: test demo lab release selfstudy bench dist clean-state

$(STAMP): pyproject.toml course/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ./course -e '.[test]'
	@touch $@

## make test: the whole test suite (unit, doctests, notebooks, nbgrader pipeline, grader, browser)
test: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadgroup

## make demo: build the release, grade a simulated class in a scratch copy, print the grade table
demo: $(STAMP)
	$(PY) -m autograder.demo

## make lab: JupyterLab on working copies of both flavours (your edits there are never overwritten):
##   build/lab/<assignment> (the graded student notebooks) and build/lab/selfstudy/<assignment> (checks, hints, solutions)
lab: $(STAMP)
	mkdir -p build/lab
	cp -rn release/module6 release/module6_further build/lab/
	$(PY) -m autograder.authoring.selfstudy_build build/lab/selfstudy --keep-existing
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m jupyter lab --notebook-dir=build/lab

## make selfstudy: build the self-study notebooks (local checks, hints, gated worked solutions)
selfstudy: $(STAMP)
	$(PY) -m autograder.authoring.selfstudy_build

## make release: regenerate release/<assignment> from source/<assignment> with nbgrader (every assignment)
release: $(STAMP)
	$(PY) -m autograder.authoring.release

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
