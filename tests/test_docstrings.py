"""The `>>>` examples in the docstrings of every keras_bert_impl module run and print what they show, on the
backend KERAS_BACKEND names.

One test per module, so that a failure names the module. Every example runs here except those marked
`# doctest: +SKIP`, whose docstring says why (docs/testing.md lists them). The modules that import TensorFlow, or
whose examples use it, are marked `tensorflow` (deselected in an environment without it).
"""

import doctest
import importlib
import importlib.util
import pkgutil
import re

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


def _needs_tensorflow(module_name):
    """Whether a module imports TensorFlow when imported (the `tf_*` modules: `require(...)` or `import
    tensorflow` at its top level) or its examples use it (`import tensorflow`, `tf.`, outside comments)."""
    with open(importlib.util.find_spec(module_name).origin, encoding="utf-8") as f:
        source = f.read()
    if re.search(r"^(import tensorflow|from tensorflow|require\()", source, re.M):
        return True
    examples = re.findall(r"^\s*(?:>>>|\.\.\.) (.*)$", source, re.M)
    return any(re.search(r"import tensorflow|\btf\.[a-z]", line.split("#")[0]) for line in examples)


TENSORFLOW_MODULES = {name for name in MODULE_NAMES if _needs_tensorflow(name)}
TENSORFLOW_INSTALLED = importlib.util.find_spec("tensorflow") is not None


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


@pytest.mark.parametrize("module_name", [
    pytest.param(name, marks=pytest.mark.tensorflow) if name in TENSORFLOW_MODULES else name for name in MODULE_NAMES])
def test_docstring_examples_print_what_they_show(module_name):
    other_backend = _other_backends_module(module_name)
    if other_backend:
        pytest.skip(f"{module_name} is imported only under KERAS_BACKEND={other_backend}")
    attempted, failed, report = _run_module_doctests(module_name)
    _examples_run[module_name] = attempted
    assert failed == 0, f"{failed} of {attempted} docstring examples of {module_name} failed:\n{report}"


def test_docstring_examples_ran_across_the_package():
    for module_name in MODULE_NAMES:
        if module_name in TENSORFLOW_MODULES and not TENSORFLOW_INSTALLED:
            continue
        if module_name not in _examples_run and not _other_backends_module(module_name):
            _examples_run[module_name] = _run_module_doctests(module_name)[0]
    total = sum(_examples_run.values())
    assert total >= MIN_EXAMPLES_RUN, f"only {total} docstring examples ran across keras_bert_impl"
