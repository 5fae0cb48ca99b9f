"""The `>>>` examples in the docstrings of every keras_bert_impl module run and print what they show, on the
backend KERAS_BACKEND names.

One test per module, so that a failure names the module. Every example runs here except those marked
`# doctest: +SKIP`, whose docstring says why (the README lists them).
"""

import doctest
import importlib
import pkgutil

import keras
import pytest

import keras_bert_impl

OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# The examples that run across the package: a floor, so that a finder that silently finds nothing fails.
MIN_EXAMPLES_RUN = 300

MODULE_NAMES = sorted(
    [keras_bert_impl.__name__]
    + [info.name for info in pkgutil.walk_packages(keras_bert_impl.__path__, prefix=keras_bert_impl.__name__ + ".")]
)

# The backend-specific fast paths are imported only under their own backend (keras_bert_impl/backends).
_BACKEND_ONLY_PREFIXES = {"keras_bert_impl.backends.jax_": "jax", "keras_bert_impl.backends.torch_": "torch"}

_examples_run = {}


def _other_backends_module(module_name):
    """The backend a module belongs to when it is not the current one, else None."""
    for prefix, backend in _BACKEND_ONLY_PREFIXES.items():
        if module_name.startswith(prefix) and keras.backend.backend() != backend:
            return backend
    return None


def _run_module_doctests(module_name):
    """(attempted, failed, report) of the docstring examples of one module, each docstring in a fresh copy
    of the module's namespace."""
    module = importlib.import_module(module_name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, module_name)
    report = []
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS, verbose=False)
    for test in sorted(tests, key=lambda t: t.name):
        runner.run(test, out=report.append)
    return runner.tries, runner.failures, "".join(report)


@pytest.mark.parametrize("module_name", MODULE_NAMES)
def test_docstring_examples_print_what_they_show(module_name):
    other_backend = _other_backends_module(module_name)
    if other_backend:
        pytest.skip(f"{module_name} is imported only under KERAS_BACKEND={other_backend}")
    attempted, failed, report = _run_module_doctests(module_name)
    _examples_run[module_name] = attempted
    assert failed == 0, f"{failed} of {attempted} docstring examples of {module_name} failed:\n{report}"


def test_docstring_examples_ran_across_the_package():
    for module_name in MODULE_NAMES:
        if module_name not in _examples_run and not _other_backends_module(module_name):
            _examples_run[module_name] = _run_module_doctests(module_name)[0]
    total = sum(_examples_run.values())
    assert total >= MIN_EXAMPLES_RUN, f"only {total} docstring examples ran across keras_bert_impl"
