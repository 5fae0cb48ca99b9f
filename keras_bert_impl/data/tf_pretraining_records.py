"""BERT pretraining TFRecords: one `tf.train.Example` per instance, written and parsed in the format of
google-research/bert (`create_pretraining_data.py` writes it, `run_pretraining.py` reads it):

| feature                | type         | shape                       |
| ---------------------- | ------------ | --------------------------- |
| `input_ids`            | int64 list   | [max_seq_length]            |
| `input_mask`           | int64 list   | [max_seq_length]            |
| `segment_ids`          | int64 list   | [max_seq_length]            |
| `masked_lm_positions`  | int64 list   | [max_predictions_per_seq]   |
| `masked_lm_ids`        | int64 list   | [max_predictions_per_seq]   |
| `masked_lm_weights`    | float list   | [max_predictions_per_seq]   |
| `next_sentence_labels` | int64 list   | [1]                         |

so files written by the original are readable here and ours by the original. Unmasked files (for dynamic
masking, `data/tf_dynamic_masking.py`) have `word_starts` [max_seq_length] instead of the three
`masked_lm_*` features.

What the parsed features become for a Keras `model.fit` (every array int32 except the weights):

    x = {"token_ids":           int32 [batch, max_seq_length],       # input_ids
         "segment_ids":         int32 [batch, max_seq_length],
         "padding_mask":        int32 [batch, max_seq_length],       # input_mask (1 = real token)
         "masked_lm_positions": int32 [batch, max_predictions_per_seq]}
    y = {"masked_lm_ids":        int32 [batch, max_predictions_per_seq],
         "masked_lm_weights":    float32 [batch, max_predictions_per_seq],  # 1.0 real, 0.0 padding
         "next_sentence_labels": int32 [batch]}                       # 1 = random next / swapped

The `tf.data` pipelines that read these files are in `data/tf_pretraining_datasets.py`.
"""

from typing import Callable, Iterable, Optional, Sequence, Union

import tensorflow as tf

from keras_bert_impl.data.pretraining_instances import TrainingInstance, instance_to_features
from keras_bert_impl.utils.errors import UserInputError


def _int64_feature(values) -> tf.train.Feature:
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))


def _float_feature(values) -> tf.train.Feature:
    return tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in values]))


def instance_to_tf_example(
    instance: TrainingInstance,
    tokenizer,
    max_seq_length: int,
    max_predictions_per_seq: int,
    with_masks: bool = True,
) -> tf.train.Example:
    """The `tf.train.Example` of one instance, with the original's feature names, types and order.

    Args:
        instance: A `keras_bert_impl.data.pretraining_instances.TrainingInstance`.
        tokenizer: Anything with `convert_tokens_to_ids`.
        max_seq_length: Padded sequence length.
        max_predictions_per_seq: Padded number of masked-LM predictions.
        with_masks: False for an unmasked instance: `word_starts` replaces the `masked_lm_*` features.

    Returns:
        A `tf.train.Example`.

    Examples:

    >>> import types
    >>> from keras_bert_impl.data.pretraining_instances import TrainingInstance
    >>> vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4}
    >>> tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    >>> instance = TrainingInstance(["[CLS]", "[MASK]", "[SEP]", "a", "[SEP]"], [0, 0, 0, 1, 1], True, [1], ["a"])
    >>> ex = instance_to_tf_example(instance, tokenizer, 8, 2)
    >>> list(ex.features.feature["input_ids"].int64_list.value)
    [1, 3, 2, 4, 2, 0, 0, 0]
    """
    arrays = instance_to_features(instance, tokenizer, max_seq_length, max_predictions_per_seq, with_masks)
    feature = {}
    for name, values in arrays.items():
        feature[name] = _float_feature(values) if values.dtype.kind == "f" else _int64_feature(values)
    return tf.train.Example(features=tf.train.Features(feature=feature))


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
        output_files: A path, a comma-separated string of paths, or a list of paths.
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
    >>> from keras_bert_impl.data.pretraining_instances import TrainingInstance
    >>> vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4}
    >>> tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    >>> instance = TrainingInstance(["[CLS]", "[MASK]", "[SEP]", "a", "[SEP]"], [0, 0, 0, 1, 1], True, [1], ["a"])
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> files = [os.path.join(d, "a.tfrecord"), os.path.join(d, "b.tfrecord")]
    >>> write_instances_to_example_files([instance] * 3, tokenizer, files, 8, 2)
    3
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
            writers.append(tf.io.TFRecordWriter(tmp))
        writer_index = 0
        for instance in instances:
            example = instance_to_tf_example(instance, tokenizer, max_seq_length, max_predictions_per_seq, with_masks)
            # deterministic=True: proto map entries in sorted order, so a seed gives the same bytes in every process.
            writers[writer_index].write(example.SerializeToString(deterministic=True))
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
            tf.io.gfile.rename(tmp, final, overwrite=True)
    except BaseException:
        for writer in writers:
            try:
                writer.close()
            except Exception:  # pragma: no cover - best effort cleanup
                pass
        for tmp in tmp_files:
            if tf.io.gfile.exists(tmp):
                tf.io.gfile.remove(tmp)
        raise
    if progress_fn is not None:
        progress_fn(total_written)
    return total_written


def original_feature_spec(max_seq_length: int, max_predictions_per_seq: int) -> dict:
    """The `tf.io.parse_example` spec of the original's files (`run_pretraining.py` `input_fn_builder`).

    Args:
        max_seq_length: Sequence length the files were written with.
        max_predictions_per_seq: Predictions per sequence the files were written with.

    Returns:
        A dict of `tf.io.FixedLenFeature`.

    Examples:

    >>> original_feature_spec(128, 20)["masked_lm_weights"]
    FixedLenFeature(shape=[20], dtype=tf.float32, default_value=None)
    """
    return {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def unmasked_feature_spec(max_seq_length: int) -> dict:
    """The parse spec of unmasked files (`write_instances_to_example_files(..., with_masks=False)`).

    Args:
        max_seq_length: Sequence length the files were written with.

    Returns:
        A dict of `tf.io.FixedLenFeature`.

    Examples:

    >>> sorted(unmasked_feature_spec(128))
    ['input_ids', 'input_mask', 'next_sentence_labels', 'segment_ids', 'word_starts']
    """
    return {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "word_starts": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def parsed_to_inputs_and_labels(parsed: dict):
    """Maps parsed original features (batched or not) to the `(x, y)` structure, int32 (see module doc).

    Args:
        parsed: The dict from `tf.io.parse_example` / `parse_single_example` with `original_feature_spec`.

    Returns:
        `(x, y)` dicts.

    Examples:

    >>> import types
    >>> from keras_bert_impl.data.pretraining_instances import TrainingInstance
    >>> vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4}
    >>> tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    >>> instance = TrainingInstance(["[CLS]", "[MASK]", "[SEP]", "a", "[SEP]"], [0, 0, 0, 1, 1], True, [1], ["a"])
    >>> serialized = [instance_to_tf_example(instance, tokenizer, 8, 2).SerializeToString()]
    >>> x, y = parsed_to_inputs_and_labels(tf.io.parse_example(serialized, original_feature_spec(8, 2)))
    >>> x["masked_lm_positions"].numpy().tolist(), y["masked_lm_ids"].numpy().tolist()
    ([[1, 0]], [[4, 0]])
    """
    x = {
        "token_ids": tf.cast(parsed["input_ids"], tf.int32),
        "segment_ids": tf.cast(parsed["segment_ids"], tf.int32),
        "padding_mask": tf.cast(parsed["input_mask"], tf.int32),
        "masked_lm_positions": tf.cast(parsed["masked_lm_positions"], tf.int32),
    }
    y = {
        "masked_lm_ids": tf.cast(parsed["masked_lm_ids"], tf.int32),
        "masked_lm_weights": tf.cast(parsed["masked_lm_weights"], tf.float32),
        # [..., 1] in the files; a plain label per example here.
        "next_sentence_labels": tf.cast(tf.squeeze(parsed["next_sentence_labels"], axis=-1), tf.int32),
    }
    return x, y


def unmasked_parsed_to_features(parsed: dict) -> dict:
    """Maps parsed unmasked features (`unmasked_feature_spec`) to int32 `token_ids`, `segment_ids`,
    `padding_mask`, `word_starts` and `next_sentence_labels` (one label per example)."""
    return {
        "token_ids": tf.cast(parsed["input_ids"], tf.int32),
        "segment_ids": tf.cast(parsed["segment_ids"], tf.int32),
        "padding_mask": tf.cast(parsed["input_mask"], tf.int32),
        "word_starts": tf.cast(parsed["word_starts"], tf.int32),
        "next_sentence_labels": tf.cast(tf.squeeze(parsed["next_sentence_labels"], axis=-1), tf.int32),
    }


def check_record_shapes(files, expected):
    """Refuses TFRecord files that hold no record, are not TFRecords, or whose first record's features
    have other lengths than the flags: `expected` maps feature name -> (flag, length).

    Raises:
        UserInputError: naming the file(s), and for a length the feature and the flag.
    """
    for path in files:
        try:
            first = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
        except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as error:
            raise UserInputError(f"{path}: not a TFRecord file ({error.message.splitlines()[0]}).") from None
        if first is None:
            continue
        features = tf.train.Example.FromString(first.numpy()).features.feature
        for name, (flag, length) in expected.items():
            if name in features:
                found = len(features[name].int64_list.value)
                if found != length:
                    raise UserInputError(f"{path}: {name} has length {found}, but {flag}={length}; give the "
                                         "value the file was written with.")
        return
    raise UserInputError(f"{', '.join(files)}: no records (0 pretraining instances); nothing to train on.")
