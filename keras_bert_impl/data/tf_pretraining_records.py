"""BERT pretraining TFRecords in TensorFlow: the instances as `tf.train.Example`s and the `tf.io.parse_example`
specs of the format of google-research/bert (`create_pretraining_data.py` writes it, `run_pretraining.py`
reads it), which `data/pretraining_records.py` writes and reads without TensorFlow (byte for byte the same
files; `write_instances_to_example_files` and `check_record_shapes` are its). The features, and the `(x, y)`
that the parsed features become, are in that module's docstring.

The `tf.data` pipelines that read these files are in `data/tf_pretraining_datasets.py`.
"""

from keras_bert_impl.utils.optional_dependencies import require

# Without TensorFlow: one line naming the extra to install, before `import tensorflow` fails.
require("tf.data pipelines of pretraining files (data/tf_pretraining_records.py)", "tensorflow", ("tensorflow",))

import tensorflow as tf

from keras_bert_impl.data.pretraining_instances import TrainingInstance, instance_to_features
from keras_bert_impl.data.pretraining_records import (  # noqa: F401  (the writer and the check, re-exported)
    check_record_shapes,
    write_instances_to_example_files,
)


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
    """Maps parsed original features (batched or not) to the `(x, y)` structure, int32 (`data/pretraining_records.py`).

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
