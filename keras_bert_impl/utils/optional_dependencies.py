"""The optional dependencies: what a feature needs that the core install (keras, numpy, safetensors, scipy)
does not bring, and the one error that says so.

TensorFlow and tensorflow-text are the `[tensorflow]` extra: the TensorFlow backend and what is TensorFlow by
nature (SavedModel export, the in-graph tokenizer `tokenizers/tf_*`, tf.data dynamic masking, tf.distribute
strategies, Google TF1 checkpoints, vocabulary learning, `gs://` paths). The LiteRT and ONNX exports are the
`[export]` extra; the ONNX export alone, which needs no TensorFlow, the `[onnx]` extra. A feature used without its extra stops with a `MissingDependencyError`: a `UserInputError`,
so a recipe prints it as one line and exits 2 (`runners.cli.run_main`), with no traceback. The check runs
before the feature writes anything, so no folder is left behind.
"""

import importlib.util

from keras_bert_impl.utils.errors import UserInputError

# extra -> the import names it provides, in the order they are checked.
EXTRAS = {
    "tensorflow": ("tensorflow", "tensorflow_text"),
    "export": ("tensorflow", "tensorflow_text", "onnx", "onnxruntime", "ai_edge_litert"),
    "onnx": ("onnx", "onnxruntime"),
}


class MissingDependencyError(ImportError, UserInputError):
    """A feature used without the package it needs; the message names the feature and the pip command.

    An `ImportError` (what code that tries an import expects) and a `UserInputError` (a recipe prints one
    line and exits 2).

    Examples:

    >>> error = MissingDependencyError("SavedModel export", "tensorflow")
    >>> print(error)
    SavedModel export needs TensorFlow, which is not installed: pip install "keras_bert_impl[tensorflow]"
    """

    def __init__(self, feature, extra="tensorflow", missing="tensorflow"):
        what = {"tensorflow": "TensorFlow", "tensorflow_text": "tensorflow-text"}.get(missing, missing)
        super().__init__(f'{feature} needs {what}, which is not installed: pip install "keras_bert_impl[{extra}]"')
        self.feature = feature
        self.extra = extra


def is_installed(module):
    """Whether `module` (an import name, e.g. "tensorflow") can be imported, without importing it.

    Examples:

    >>> is_installed("json"), is_installed("no_such_module_here")
    (True, False)
    """
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module that is in sys.modules as None, or a broken parent package
        return False


def require(feature, extra="tensorflow", modules=None):
    """Raises `MissingDependencyError` naming `feature` and `extra` when a package of `extra` is not installed.

    Args:
        feature: what the user asked for, as the message names it ("SavedModel export", "--strategy tpu").
        extra: the extra that installs it ("tensorflow", "export" or "onnx").
        modules: the import names checked; default: every one of `EXTRAS[extra]`.

    Examples:

    >>> require("reading JSON", "tensorflow", modules=("json",))
    >>> try:
    ...     require("the in-graph tokenizer", "tensorflow", modules=("no_such_module_here",))
    ... except MissingDependencyError as error:
    ...     print(error)
    the in-graph tokenizer needs no_such_module_here, which is not installed: pip install "keras_bert_impl[tensorflow]"
    """
    for module in EXTRAS[extra] if modules is None else modules:
        if not is_installed(module):
            raise MissingDependencyError(feature, extra, module)


def require_tensorflow(feature):
    """`require(feature, "tensorflow", ("tensorflow",))`: TensorFlow itself, for a feature that does not use
    tensorflow-text.

    Examples:

    >>> import sys
    >>> blocked = sys.modules.get("tensorflow", False)
    >>> sys.modules["tensorflow"] = None  # as in an environment without TensorFlow
    >>> try:
    ...     require_tensorflow("a Google TF1 checkpoint")
    ... except MissingDependencyError as error:
    ...     print(error)
    a Google TF1 checkpoint needs TensorFlow, which is not installed: pip install "keras_bert_impl[tensorflow]"
    >>> if blocked is False:
    ...     del sys.modules["tensorflow"]
    ... else:
    ...     sys.modules["tensorflow"] = blocked
    """
    require(feature, "tensorflow", ("tensorflow",))
