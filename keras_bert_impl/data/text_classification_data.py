"""Text classification on your own data: records with labels of any kind, the label set they make, and long
texts as windows whose logits are pooled.

`read_labelled_records` reads one split of a JSON lines, JSON, CSV, TSV or parquet file (the files the
datasets ecosystem writes) into `glue_data.InputExample`s whose labels are what the file holds: an integer,
a string, or a float (a CSV or TSV cell holding the digits of an integer or a float is that number). The
text columns: `--text_column` (and `--text_pair_column`) when given, else `sentence1` and `sentence2` when a
record has both, else the one of `text` or `sentence` it has (transformers' run_glue.py takes the same
first pair).

`label_set` makes the label set of the training examples as transformers' run_glue.py does: float labels
make a regression (None); otherwise the distinct labels sorted (integers by value, then strings), as
their names (str), at least two of them (a classifier of one label would be a regression that scores 1.0:
one label value is refused, unless `regression=True` asks for a regression on integer labels). `label_ids` maps labelled examples to class ids (floats for a regression); a label
outside the set is an error naming its file and line.

`pool_window_logits` pools the logits of a long text's windows (`tokenizers.packing.pack_windows`) into
the text's logits: their mean or their maximum, per class.

Examples:

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "train.jsonl")
>>> with open(path, "w") as f:
...     _ = f.write('{"text": "fine", "label": "good"}\\n{"text": "meh", "label": "bad"}\\n')
>>> examples = read_labelled_records(path, "train")
>>> label_set(examples), label_ids(examples, label_set(examples)).tolist()
(['bad', 'good'], [1, 0])
"""

import math
import re

import numpy as np

from keras_bert_impl.data.dataset_files import field, read_records, require_examples, require_text, text_field
from keras_bert_impl.data.glue_data import InputExample, tsv_records
from keras_bert_impl.utils.errors import UserInputError

# What `--long_input` does with a text longer than `--max_seq_length`: cut it (the original), or classify its
# windows and pool their logits by their mean or their maximum.
LONG_INPUT_MODES = ("truncate", "mean", "max")
# config.json's entry of the `--long_input` mode a model was fine-tuned with.
LONG_INPUT_KEY = "long_input"

# The text columns taken when none is named: a pair, else one text.
DEFAULT_PAIR_COLUMNS = ("sentence1", "sentence2")
DEFAULT_TEXT_COLUMNS = ("text", "sentence")

_INTEGER = re.compile(r"[-+]?\d+")


def text_columns(record, where, text_column=None, text_pair_column=None):
    """(text column, pair column or None) of a record: those given, else the defaults (module docstring)."""
    if text_column:
        return text_column, text_pair_column or None
    if all(column in record for column in DEFAULT_PAIR_COLUMNS):
        return DEFAULT_PAIR_COLUMNS[0], DEFAULT_PAIR_COLUMNS[1] if text_pair_column is None else text_pair_column or None
    found = next((column for column in DEFAULT_TEXT_COLUMNS if column in record), None)
    if found is None:
        raise UserInputError(f"{where}: no text column; the columns are {sorted(record)}; expected {' or '.join(DEFAULT_TEXT_COLUMNS)} "
                             f"(or {' and '.join(DEFAULT_PAIR_COLUMNS)}), or name it with --text_column.")
    return found, text_pair_column or None


def label_value(value, where):
    """A record's label: an int, a finite float or a non-empty str; a CSV or TSV cell holding the digits of
    an integer or a float is that number; a JSON boolean is its text ("True"/"False")."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) and math.isfinite(value):
        return float(value)
    if isinstance(value, str) and value.strip():
        text = value.strip()
        if _INTEGER.fullmatch(text):
            return int(text)
        try:
            number = float(text)
        except ValueError:
            return text
        return number if math.isfinite(number) else text
    raise UserInputError(f"{where}: label {value!r}; expected an integer, a number or a text.")


def read_labelled_records(path, split, text_column=None, text_pair_column=None, label_column="label"):
    """One split of your own classification data as `InputExample`s (module docstring).

    Args:
        path: a JSON lines, JSON, CSV, TSV (header line, no quoting, as GLUE's) or parquet file.
        split: "train", "dev" or "test" (a test split's labels are not read: label None).
        text_column, text_pair_column: the text columns; None: the defaults ("" pair column: none).
        label_column: the label's column.

    Returns:
        list of `InputExample`; `guid` is "path:line" (or "path:[i]"), `label` an int, float or str.

    Raises:
        UserInputError: a missing file or column, a text that is not a string or is empty, a missing label, a
            file without examples; naming the file and line.
    """
    records = tsv_records(path) if path.lower().endswith(".tsv") else read_records(path)
    examples = []
    for where, record in records:
        first, second = text_columns(record, where, text_column, text_pair_column)
        text_a = require_text(text_field(record, first, where), where, f"column {first!r}")
        text_b = text_field(record, second, where) if second else None  # empty: packed as one segment
        label = None if split.startswith("test") else label_value(field(record, label_column, where), where)
        examples.append(InputExample(where, text_a, text_b, label))
    return require_examples(examples, path)


def label_set(examples, regression=False):
    """The label names of training examples (ints sorted by value, then strs, as str), or None when a label
    is a float or `regression` (a regression).

    Raises:
        UserInputError: a text among float labels (or with `regression`), naming its file and line; a
            classification with fewer than two label values, naming the file.

    Examples:

    >>> from keras_bert_impl.data.glue_data import InputExample
    >>> label_set([InputExample("train.csv:2", "fine", None, "good"), InputExample("train.csv:3", "meh", None, "good")])
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: train.csv: every example has the label 'good'; a classifier needs at least two label values (for a regression: float labels, or --regression)
    """
    if regression or any(isinstance(e.label, float) for e in examples):
        text = next((e for e in examples if isinstance(e.label, str)), None)
        if text is not None:
            raise UserInputError(f"{text.guid}: label {text.label!r} is not a number, and " + (
                "--regression asks for a regression." if regression else "other labels are floats (a regression)."))
        return None
    integers = sorted({e.label for e in examples if isinstance(e.label, int)})
    names = [str(v) for v in integers] + sorted({e.label for e in examples if isinstance(e.label, str)} - set(
        str(v) for v in integers))
    if len(names) < 2:
        path = examples[0].guid.rsplit(":", 1)[0]
        raise UserInputError(f"{path}: every example has the label {examples[0].label!r}; a classifier needs at "
                             "least two label values (for a regression: float labels, or --regression)")
    return names


def label_ids(examples, label_names):
    """Class ids int32 [N] of labelled examples (`label_names`: the label set; None: float32 scores [N]).

    Raises:
        UserInputError: a label outside `label_names` (or, for a regression, not a number), naming the
            example's file and line and the labels.
    """
    if label_names is None:
        for e in examples:
            if isinstance(e.label, str):
                raise UserInputError(f"{e.guid}: label {e.label!r} is not a number (the model is a regression).")
        return np.asarray([e.label for e in examples], "float32")
    index = {name: i for i, name in enumerate(label_names)}
    for e in examples:
        if str(e.label) not in index:
            raise UserInputError(f"{e.guid}: label {e.label!r} is not one of the model's labels {label_names}.")
    return np.asarray([index[str(e.label)] for e in examples], "int32")


def pool_window_logits(logits, example_index, num_examples, mode):
    """Each example's logits from those of its windows: their mean or their maximum per class.

    Args:
        logits: float [windows, C].
        example_index: int [windows], the example of each window (`tokenizers.packing.pack_windows`).
        num_examples: N; every example has at least one window.
        mode: "mean" or "max".

    Returns:
        float32 [N, C].

    Examples:

    >>> pool_window_logits([[1.0, 0.0], [3.0, -2.0], [0.5, 0.5]], [0, 0, 1], 2, "mean").tolist()
    [[2.0, -1.0], [0.5, 0.5]]
    >>> pool_window_logits([[1.0, 0.0], [3.0, -2.0], [0.5, 0.5]], [0, 0, 1], 2, "max").tolist()
    [[3.0, 0.0], [0.5, 0.5]]
    """
    if mode not in LONG_INPUT_MODES[1:]:
        raise ValueError(f"pooling mode must be one of {LONG_INPUT_MODES[1:]}, got {mode!r}.")
    logits = np.asarray(logits, "float32")
    example_index = np.asarray(example_index, "int64")
    pooled = np.full((num_examples, logits.shape[-1]), -np.inf if mode == "max" else 0.0, "float32")
    if mode == "max":
        np.maximum.at(pooled, example_index, logits)
        return pooled
    np.add.at(pooled, example_index, logits)
    return pooled / np.bincount(example_index, minlength=num_examples)[:, None].astype("float32")
