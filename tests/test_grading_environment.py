"""The desk's import check (``course.grading_environment``): what graded code may import, told before submitting."""

import fractions
import types

import numpy as np
import pytest

from course.grading_environment import (UnavailableImport, UnavailableImportError, check_imports,
                                        imports_in_source, is_allowed, unavailable_imports)


def _module(name):
    return types.ModuleType(name)


def test_standard_library_numpy_and_course_are_allowed():
    namespace = {"In": ["", "import numpy as np", "import math, fractions\nfrom collections import Counter",
                        "from course.widgets import kl_explorer", "from IPython.display import display"],
                 "np": np, "frac": fractions.Fraction(4, 5), "counts": {"a": 1}, "__name__": "__main__"}
    exec("def f(x):\n    return x", namespace)  # defined by the notebook itself: module __main__
    assert unavailable_imports(namespace) == ()
    check_imports(namespace)  # raises nothing


@pytest.mark.parametrize("source, package, evidence", [
    ("import scipy.special", "scipy", "import scipy.special"),
    ("from scipy.special import log_softmax", "scipy", "from scipy.special import ..."),
    ("def f(z):\n    import torch\n    return z", "torch", "import torch"),
    ("import importlib\nm = importlib.import_module('pandas')", "pandas", "import_module('pandas')"),
    ("m = __import__('jax.numpy')", "jax", "__import__('jax.numpy')"),
])
def test_an_import_in_the_history_is_named_with_where_it_was_seen(source, package, evidence):
    assert unavailable_imports({"In": ["", source]}) == (UnavailableImport(package, evidence),)


def test_names_from_foreign_packages_are_found_without_the_history():
    fake = _module("scipy.special")
    def log_softmax(z):
        return z
    log_softmax.__module__ = "scipy.special._logsumexp"
    Frame = type("DataFrame", (), {"__module__": "pandas.core.frame"})
    namespace = {"sp": fake, "log_softmax": log_softmax, "table": Frame(), "_hidden": _module("torch")}
    found = unavailable_imports(namespace)
    assert [item.package for item in found] == ["scipy", "pandas"]  # one record per package; _names skipped
    assert found[0].evidence == "the name 'sp'"


def test_the_message_names_the_package_the_rule_and_what_to_do():
    with pytest.raises(UnavailableImportError) as info:
        check_imports({"In": ["from scipy.special import log_softmax"]})
    assert isinstance(info.value, ImportError)
    text = str(info.value)
    assert text.startswith("`scipy` is not available when your work is graded "
                           "(seen in: from scipy.special import ...).")
    assert "Graded code may import the Python standard library, NumPy and `course` only" in text
    assert "restart the kernel" in text


def test_a_flavour_may_provide_its_own_package():
    namespace = {"In": ["from autograder.selfstudy import check"], "check": print}
    assert [i.package for i in unavailable_imports(namespace)] == ["autograder"]
    assert unavailable_imports(namespace, provided=("autograder",)) == ()
    with pytest.raises(TypeError, match="provided"):
        unavailable_imports(namespace, provided="autograder")


def test_hostile_and_odd_input_is_survived():
    class Hostile:
        def __getattr__(self, name):
            raise RuntimeError("no")
        @property
        def __module__(self):  # noqa: PLE0105 -- an instance that lies about its module
            raise RuntimeError("no")
    namespace = {"In": ["%%bash\nls", "x = (", "a" * 300_000, 42, None], "h": Hostile(), 3: "x"}
    assert unavailable_imports(namespace) == ()
    assert imports_in_source("from . import sibling") == []  # relative: the student's own files
    with pytest.raises(TypeError, match="globals"):
        unavailable_imports(["not", "a", "dict"])
    assert is_allowed("math") and is_allowed("numpy.linalg") and not is_allowed("scipy")


def test_the_instructors_hidden_tests_are_not_the_students_code():
    hidden = ('"""2 points"""\n### BEGIN HIDDEN TESTS\nfrom autograder.checks import grade\n'
              'grade("15_stable_log_softmax", "public", globals())\n### END HIDDEN TESTS')
    grade = lambda *a: None  # noqa: E731
    grade.__module__ = "autograder.checks"
    assert unavailable_imports({"In": ["", hidden], "grade": grade}) == ()
    assert [i.package for i in unavailable_imports({"In": ["from autograder.checks import grade"],
                                                     "grade": grade})] == ["autograder"]


_NESTED = '''
import importlib

def f(z):
    from scipy.special import log_softmax
    return log_softmax(z)

def g():
    return importlib.import_module("sklearn.metrics")

def h():
    return __import__("jax")

class Model:
    def method(self):
        def inner():
            import torch
        return inner

    @staticmethod
    def helper():
        import polars

    @property
    def size(self):
        import pandas
'''


def test_imports_inside_functions_and_classes_are_found_without_the_history():
    """The compiled code of what the notebook defines is read: an import in a function body, a method,
    a nested function, a static method or a property, and import_module/__import__ with a literal."""
    namespace = {"__name__": "__main__"}
    exec(_NESTED, namespace)
    del namespace["__builtins__"]
    found = {item.package: item.evidence for item in unavailable_imports(namespace)}
    assert found == {
        "scipy": "import scipy.special in the code of f",
        "sklearn": "import_module('sklearn.metrics') in the code of g",
        "jax": "__import__('jax') in the code of h",
        "torch": "import torch in the code of Model.method.<locals>.inner",
        "polars": "import polars in the code of Model.helper",
        "pandas": "import pandas in the code of Model.size",
    }
    with pytest.raises(UnavailableImportError, match="`scipy` is not available when your work is graded"):
        check_imports(namespace)


def test_the_history_sees_imports_nested_anywhere():
    found = unavailable_imports({"In": ["", _NESTED]})
    assert {item.package for item in found} == {"scipy", "sklearn", "jax", "torch", "polars", "pandas"}


def test_allowed_imports_inside_functions_raise_nothing():
    namespace = {"__name__": "__main__"}
    exec("import importlib\n"
         "def f(x):\n    import math, numpy as np\n    from collections import Counter\n"
         "    from course.widgets import kl\n    from IPython.display import display\n"
         "    from . import sibling\n    return importlib.import_module('json'), __import__('numpy.linalg')\n"
         "class C:\n    def m(self):\n        import fractions\n        return 'scipy'  # a string, not an import\n",
         namespace)
    del namespace["__builtins__"]
    assert unavailable_imports(namespace) == ()


def test_functions_of_other_modules_are_not_read_as_the_notebooks_own():
    """A function imported from an allowed module (its body imports whatever it likes) is not the
    student's code; a function whose module is foreign is reported by its origin, once."""
    import json
    namespace = {"__name__": "__main__", "dumps": json.dumps, "np": np}
    assert unavailable_imports(namespace) == ()
    foreign = {"__name__": "scipy.fake"}
    exec("def log_softmax(x):\n    import numpy\n    return x", foreign)
    assert unavailable_imports({"__name__": "__main__", "log_softmax": foreign["log_softmax"]}) == \
        (UnavailableImport("scipy", "the name 'log_softmax'"),)
