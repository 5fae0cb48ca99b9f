"""Checks of what a task model is given in `fit`, `evaluate`, `predict` and the `*_on_batch` methods, before Keras
sees it: the inputs `x` (raw text or the backbone's dict of token ids) and the labels `y`.

A mistake is a one-line `UserInputError` naming the element and what was expected, the same on every
backend: `predict([None])`, `predict([])` or `predict([1, 2])` would otherwise reach Keras' data adapters
(`KeyError: 'pop from an empty set'`, `Unrecognized data type`), and a class id out of range trains on JAX
at a loss of 0 while TensorFlow and PyTorch fail in the loss with a raw error.

The task models (`models.task_model.BertTaskModel`) call these; the rules per task are theirs (`num_classes`,
-100 for "no label" of the token taggers, `num_choices`). Datasets (`tf.data`, `keras.utils.PyDataset`,
generators) are not read ahead: their batches go to Keras as they come.
"""

import keras
import numpy as np

from keras_bert_impl.data.conll_features import IGNORE_LABEL_ID
from keras_bert_impl.utils.errors import UserInputError, describe


def check_given(x, name="x"):
    """Refuses an `x` that holds no example: None, or an empty list or tuple.

    Examples:

    >>> check_given([])
    Traceback (most recent call last):
    ...
    keras_bert_impl.utils.errors.UserInputError: x is empty; expected at least one example (texts, or the backbone's dict of token ids).
    """
    if x is None:
        raise UserInputError(f"{name} is None; expected texts (a str or a list of str) or the backbone's dict of "
                             "token ids.")
    if isinstance(x, (list, tuple)) and len(x) == 0:
        raise UserInputError(f"{name} is empty; expected at least one example (texts, or the backbone's dict of "
                             "token ids).")


def _is_array(value):
    """Whether `value` is a numeric array or a backend tensor (not text)."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in ("U", "S", "O")
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, (str, bytes))


def is_text_input(x):
    """Whether `x` is meant as raw text, for the model's preprocessor: a str, a string array, or a list or tuple
    that is not a list of numeric arrays (so `[None]`, `[1, 2]` or `["a", nan]` go to the preprocessor, which
    names the element that is not a str, rather than to Keras).

    Examples:

    >>> is_text_input(["a fine film", None]), is_text_input({"token_ids": np.ones((1, 4))})
    (True, False)
    """
    if isinstance(x, (str, bytes)):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind in ("U", "S", "O")
    if isinstance(x, (list, tuple)):
        return not all(_is_array(item) for item in x)
    return False


def _as_numpy(values):
    """`values` as a numpy array (a list, array or backend tensor); None when the list is ragged."""
    if isinstance(values, (list, tuple)):
        try:
            return np.asarray(values)
        except ValueError:  # ragged nesting
            return None
    if isinstance(values, np.ndarray):
        return values
    return np.asarray(keras.ops.convert_to_numpy(values))


def _elements(values, index=""):
    """(index as "[i][j]", value) of every leaf of nested lists, tuples and arrays, in order."""
    if isinstance(values, (list, tuple)) or (isinstance(values, np.ndarray) and values.ndim > 0):
        for i, value in enumerate(values):
            yield from _elements(value, f"{index}[{i}]")
    else:
        yield index, values


def _is_integer(value):
    return isinstance(value, (int, np.integer, bool, np.bool_))


def check_label_ids(y, num_classes, name="y", ignore=None, what="a class id", count_name="num_classes"):
    """`y` (any nesting of lists, arrays or tensors) when every element is an integer id in 0..num_classes-1 (or
    `ignore`, "no label"; `num_classes` None: any integer >= 0); else a `UserInputError` naming the first element that is not (None, a float, a str,
    an id out of range). Returns an int32 numpy array, or the nested lists themselves when they are ragged
    (per-sentence word labels).

    Examples:

    >>> check_label_ids([0, 1, 1], num_classes=2)
    array([0, 1, 1], dtype=int32)
    >>> check_label_ids([[0, 4], [-100, 9]], num_classes=5, ignore=-100, what="a label id")
    Traceback (most recent call last):
    ...
    keras_bert_impl.utils.errors.UserInputError: y[1][1] is 9 (an int); expected a label id: an integer in 0..4 (num_classes=5) or -100 (no label).
    """
    if num_classes is None:
        expected = f"{what}: an integer >= 0"
    else:
        expected = f"{what}: an integer in 0..{num_classes - 1} ({count_name}={num_classes})"
    if ignore is not None:
        expected += f" or {ignore} (no label)"
    limit = np.iinfo("int32").max if num_classes is None else num_classes

    def valid(ids):
        return ((ids >= 0) & (ids < limit)) | (ids == ignore if ignore is not None else False)

    array = _as_numpy(y)
    if array is not None and array.dtype.kind in ("i", "u", "b") and valid(array).all():
        return array.astype("int32")
    for index, value in _elements(y if array is None else array):
        if not _is_integer(value) or not valid(value):
            raise UserInputError(f"{name}{index} is {describe(value)}; expected {expected}.")
    if array is None:
        return y
    if array.size == 0:
        raise UserInputError(f"{name} is empty; expected {what} per example.")
    return array.astype("int32")


def check_targets(y, name="y"):
    """`y` as a float32 array when every element is a finite number (regression targets); else a
    `UserInputError` naming the first element that is not (None, a str, NaN, infinity).

    Examples:

    >>> check_targets([0.5, float("nan")])
    Traceback (most recent call last):
    ...
    keras_bert_impl.utils.errors.UserInputError: y[1] is nan (a float); expected a finite number (a regression target).
    """
    array = _as_numpy(y)
    if array is not None and array.dtype.kind in ("i", "u", "f") and np.isfinite(array).all():
        return array.astype("float32")
    for index, value in _elements(y if array is None else array):
        if not isinstance(value, (int, float, np.integer, np.floating)) or not np.isfinite(value):
            raise UserInputError(f"{name}{index} is {describe(value)}; expected a finite number (a regression target).")
    raise UserInputError(f"{name}: expected one finite number per example, got a ragged nesting.")


def check_num_examples(y, x, name="y"):
    """Refuses labels `y` (first axis: examples) whose count differs from the examples of the token-id dict `x`."""
    count = int(np.shape(y)[0]) if np.ndim(y) else 1
    examples = int(next(iter(x.values())).shape[0])
    if count != examples:
        raise UserInputError(f"{name} has {count} labels for {examples} examples; expected one label per example.")


def check_tag_ids(y, num_classes):
    """The labels of a token tagger (`check_label_ids` with -100, "no label"): per word of raw sentences (a list
    of lists, or an array [batch, words] padded with -100), or per token of token ids ([batch, seq])."""
    return check_label_ids(y, num_classes, ignore=IGNORE_LABEL_ID, what="a label id")


def check_one_label_per_token(x, y):
    """Refuses token labels `y` whose shape is not that of the token-id dict `x`'s `token_ids` ([batch, seq])."""
    if y is not None and tuple(np.shape(y)) != tuple(x["token_ids"].shape):
        raise UserInputError(f"y has shape {tuple(np.shape(y))}; expected one label per token, the shape of "
                             f"x['token_ids'] {tuple(x['token_ids'].shape)} (-100 where there is none).")
