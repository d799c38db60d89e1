"""nbgrader settings of the student environment that ``make lab`` creates (copied to its etc/jupyter).

Students keep one nbgrader tool, Validate. It runs their notebook; with ``validate_all`` a failing
open check ("Check that it does" cell) or an answer cell that raises makes it report failure,
instead of "Success" on the strength of released hidden-test cells that hold no tests.
"""

c = get_config()  # noqa: F821 -- injected by traitlets when it runs this file
c.Validator.validate_all = True
