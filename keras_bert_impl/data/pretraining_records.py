"""BERT pretraining files: one `tf.train.Example` per instance in TFRecord files, in the format of
google-research/bert (`create_pretraining_data.py` writes it, `run_pretraining.py` reads it), written and
read here in pure Python (`utils/record_files.py`, `data/example_records.py`), so no backend needs
TensorFlow for them:

| feature                | type         | shape                       |
| ---------------------- | ------------ | --------------------------- |
| `input_ids`            | int64 list   | [max_seq_length]            |
| `input_mask`           | int64 list   | [max_seq_length]            |
| `segment_ids`          | int64 list   | [max_seq_length]            |
| `masked_lm_positions`  | int64 list   | [max_predictions_per_seq]   |
| `masked_lm_ids`        | int64 list   | [max_predictions_per_seq]   |
| `masked_lm_weights`    | float list   | [max_predictions_per_seq]   |
| `next_sentence_labels` | int64 list   | [1]                         |

Files written by the original are readable here and ours by the original; the bytes equal those of
`tf.io.TFRecordWriter` writing `tf.train.Example.SerializeToString(deterministic=True)` (the map entries in
sorted order, so a seed gives the same bytes in every process). Unmasked files (for dynamic masking,
`data/tf_dynamic_masking.py`) have `word_starts` [max_seq_length] instead of the three `masked_lm_*` features.

What a record becomes for a Keras `model.fit` (every array int32 except the weights):

    x = {"token_ids":           int32 [batch, max_seq_length],       # input_ids
         "segment_ids":         int32 [batch, max_seq_length],
         "padding_mask":        int32 [batch, max_seq_length],       # input_mask (1 = real token)
         "masked_lm_positions": int32 [batch, max_predictions_per_seq]}
    y = {"masked_lm_ids":        int32 [batch, max_predictions_per_seq],
         "masked_lm_weights":    float32 [batch, max_predictions_per_seq],  # 1.0 real, 0.0 padding
         "next_sentence_labels": int32 [batch]}                       # 1 = random next / swapped

Batches of them are read without TensorFlow by `data/pretraining_batches.py` and as `tf.data` pipelines by
`data/tf_pretraining_datasets.py`.
"""

import os
from typing import Callable, Iterable, Optional, Sequence, Union

import numpy as np

from keras_bert_impl.data.example_records import decode_example, encode_example
from keras_bert_impl.data.pretraining_instances import TrainingInstance, instance_to_features
from keras_bert_impl.utils import file_io, record_files
from keras_bert_impl.utils.errors import UserInputError


def instance_to_example_bytes(instance: TrainingInstance, tokenizer, max_seq_length: int, max_predictions_per_seq: int,
                              with_masks: bool = True) -> bytes:
    """The serialized `tf.train.Example` of one instance, with the original's feature names and types.

    Examples:

    >>> import types
    >>> vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4}
    >>> tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    >>> instance = TrainingInstance(["[CLS]", "[MASK]", "[SEP]", "a", "[SEP]"], [0, 0, 0, 1, 1], True, [1], ["a"])
    >>> decode_example(instance_to_example_bytes(instance, tokenizer, 8, 2))["input_ids"].tolist()
    [1, 3, 2, 4, 2, 0, 0, 0]
    """
    return encode_example(instance_to_features(instance, tokenizer, max_seq_length, max_predictions_per_seq,
                                               with_masks))


def write_instances_to_example_files(
    instances: Iterable[TrainingInstance],
    tokenizer,
    output_files: Union[str, Sequence[str]],
    max_seq_length: int,
    max_predictions_per_seq: int,
    with_masks: bool = True,
    progress_fn: Optional[Callable[[int], None]] = None,
    progress_every: int = 10000,
    source: str = "the corpus",
) -> int:
    """Writes instances to TFRecord files, round-robin over `output_files` (as the original), atomically.

    Each file is written as `FILE.tmp` and renamed to `FILE` only after every instance was written; if
    anything raises (or the process dies), no file named `FILE` is left half-written: the `.tmp` files
    are removed on an exception and an existing `FILE` is untouched. `instances` is consumed lazily, so a
    streaming generator keeps memory bounded.

    Args:
        instances: An iterable of `TrainingInstance`s (e.g. `pretraining_instances.create_training_instances`).
        tokenizer: Anything with `convert_tokens_to_ids`.
        output_files: A path, a comma-separated string of paths, or a list of paths (local, or URLs: `file_io`).
        max_seq_length: Padded sequence length.
        max_predictions_per_seq: Padded number of masked-LM predictions.
        with_masks: False to write unmasked instances (for `tf_pretraining_datasets.unmasked_pretraining_dataset`).
        progress_fn: Called with the number of instances written so far, every `progress_every` instances
            and once at the end.
        progress_every: Instances between two `progress_fn` calls.
        source: what the instances come from, for the message when there are none.

    Returns:
        The number of instances written.

    Raises:
        UserInputError: `instances` is empty (naming `source`); no output file is left.

    Examples:

    >>> import types
    >>> vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4}
    >>> tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    >>> instance = TrainingInstance(["[CLS]", "[MASK]", "[SEP]", "a", "[SEP]"], [0, 0, 0, 1, 1], True, [1], ["a"])
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> files = [os.path.join(d, "a.tfrecord"), os.path.join(d, "b.tfrecord")]
    >>> write_instances_to_example_files([instance] * 3, tokenizer, files, 8, 2)
    3
    >>> len(list(read_examples(files[0]))), len(list(read_examples(files[1])))
    (2, 1)
    """
    if isinstance(output_files, str):
        output_files = [f for f in output_files.split(",") if f]
    output_files = list(output_files)
    if not output_files:
        raise ValueError("no output file given")
    tmp_files = [f + ".tmp" for f in output_files]
    writers = []
    total_written = 0
    try:
        for tmp in tmp_files:
            writers.append(record_files.RecordWriter(tmp))
        writer_index = 0
        for instance in instances:
            writers[writer_index].write(
                instance_to_example_bytes(instance, tokenizer, max_seq_length, max_predictions_per_seq, with_masks))
            writer_index = (writer_index + 1) % len(writers)
            total_written += 1
            if progress_fn is not None and total_written % progress_every == 0:
                progress_fn(total_written)
        for writer in writers:
            writer.close()
        writers = []
        if total_written == 0:
            raise UserInputError(f"{source}: no training instances (no document has text); wrote nothing to "
                                 f"{', '.join(output_files)}.")
        for tmp, final in zip(tmp_files, output_files):
            file_io.replace(tmp, final)
    except BaseException:
        for writer in writers:
            try:
                writer.close()
            except Exception:  # pragma: no cover - best effort cleanup
                pass
        for tmp in tmp_files:
            file_io.remove_if_exists(tmp)
        raise
    if progress_fn is not None:
        progress_fn(total_written)
    return total_written


def read_examples(path):
    """Yields the features (name -> numpy array) of each record of the pretraining file at `path`.

    Raises:
        UserInputError: the file is not a TFRecord file of Examples, or is truncated or corrupt.
    """
    for index, data in enumerate(record_files.read_records(path)):
        try:
            yield decode_example(data)
        except (ValueError, UnicodeDecodeError) as error:
            raise UserInputError(f"{path}: record {index} is not a tf.train.Example ({error}).") from None


def check_record_shapes(files, expected):
    """Refuses pretraining files that hold no record, are not TFRecords, or whose first record's features
    have other lengths than the flags: `expected` maps feature name -> (flag, length).

    Raises:
        UserInputError: naming the file(s), and for a length the feature and the flag.

    Examples:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
    >>> with record_files.RecordWriter(path) as writer:
    ...     writer.write(encode_example({"input_ids": [1, 2, 3]}))
    >>> try:
    ...     check_record_shapes([path], {"input_ids": ("--max_seq_length", 8)})
    ... except UserInputError as error:
    ...     print(str(error).replace(path, "a.tfrecord"))
    a.tfrecord: input_ids has length 3, but --max_seq_length=8; give the value the file was written with.
    """
    for path in files:
        first = next(iter(read_examples(path)), None)
        if first is None:
            continue
        for name, (flag, length) in expected.items():
            if name in first and len(first[name]) != length:
                raise UserInputError(f"{path}: {name} has length {len(first[name])}, but {flag}={length}; give the "
                                     "value the file was written with.")
        return
    raise UserInputError(f"{', '.join(files)}: no records (0 pretraining instances); nothing to train on.")


def examples_to_inputs_and_labels(examples):
    """The `(x, y)` batch (see the module docstring) of a list of decoded masked examples.

    Examples:

    >>> example = {"input_ids": np.array([1, 3, 2]), "input_mask": np.array([1, 1, 1]),
    ...            "segment_ids": np.array([0, 0, 0]), "masked_lm_positions": np.array([1]),
    ...            "masked_lm_ids": np.array([4]), "masked_lm_weights": np.array([1.0], np.float32),
    ...            "next_sentence_labels": np.array([1])}
    >>> x, y = examples_to_inputs_and_labels([example, example])
    >>> x["token_ids"].shape, x["token_ids"].dtype, y["next_sentence_labels"].tolist()
    ((2, 3), dtype('int32'), [1, 1])
    """
    stacked = {name: np.stack([example[name] for example in examples]) for name in examples[0]}
    x = {
        "token_ids": stacked["input_ids"].astype(np.int32),
        "segment_ids": stacked["segment_ids"].astype(np.int32),
        "padding_mask": stacked["input_mask"].astype(np.int32),
        "masked_lm_positions": stacked["masked_lm_positions"].astype(np.int32),
    }
    y = {
        "masked_lm_ids": stacked["masked_lm_ids"].astype(np.int32),
        "masked_lm_weights": stacked["masked_lm_weights"].astype(np.float32),
        "next_sentence_labels": stacked["next_sentence_labels"][:, 0].astype(np.int32),
    }
    return x, y
