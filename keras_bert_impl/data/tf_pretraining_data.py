"""BERT pretraining data, TensorFlow side: TFRecord files, `tf.data` readers and dynamic masking.

Files are the original's (google-research/bert `create_pretraining_data.py` / `run_pretraining.py`):
one `tf.train.Example` per instance with

| feature                | type         | shape                       |
| ---------------------- | ------------ | --------------------------- |
| `input_ids`            | int64 list   | [max_seq_length]            |
| `input_mask`           | int64 list   | [max_seq_length]            |
| `segment_ids`          | int64 list   | [max_seq_length]            |
| `masked_lm_positions`  | int64 list   | [max_predictions_per_seq]   |
| `masked_lm_ids`        | int64 list   | [max_predictions_per_seq]   |
| `masked_lm_weights`    | float list   | [max_predictions_per_seq]   |
| `next_sentence_labels` | int64 list   | [1]                         |

so files written by the original are readable here and ours by the original.

What the readers give a Keras `model.fit` (every array int32 except the weights):

    x = {"token_ids":           int32 [batch, max_seq_length],       # input_ids
         "segment_ids":         int32 [batch, max_seq_length],
         "padding_mask":        int32 [batch, max_seq_length],       # input_mask (1 = real token)
         "masked_lm_positions": int32 [batch, max_predictions_per_seq]}
    y = {"masked_lm_ids":        int32 [batch, max_predictions_per_seq],
         "masked_lm_weights":    float32 [batch, max_predictions_per_seq],  # 1.0 real, 0.0 padding
         "next_sentence_labels": int32 [batch]}                       # 1 = random next / swapped

Dynamic masking (RoBERTa-style) starts from *unmasked* packed pairs,
`{"token_ids", "segment_ids", "padding_mask", "word_starts", "next_sentence_labels"}`, and masks them
inside the `tf.data` pipeline with fresh randomness every epoch (`apply_dynamic_masking`), producing the
same `(x, y)` as above. Unmasked pairs come straight from text (`unmasked_dataset_from_text`) or from
TFRecords written with `with_masks=False` (`unmasked_pretraining_dataset`).

`tf.data` runs under every Keras backend; the datasets here feed `model.fit` on TensorFlow, JAX and
PyTorch alike.
"""

import random
from typing import Callable, Iterable, Optional, Sequence, Union

import numpy as np
import tensorflow as tf

from keras_bert_impl.config import PRETRAINING_OBJECTIVES
from keras_bert_impl.data import pretraining_data as pd_lib
from keras_bert_impl.utils.errors import UserInputError

# ---------------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------------


def _int64_feature(values) -> tf.train.Feature:
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))


def _float_feature(values) -> tf.train.Feature:
    return tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in values]))


def instance_to_tf_example(
    instance: pd_lib.TrainingInstance,
    tokenizer,
    max_seq_length: int,
    max_predictions_per_seq: int,
    with_masks: bool = True,
) -> tf.train.Example:
    """The `tf.train.Example` of one instance, with the original's feature names, types and order.

    Args:
        instance: A `keras_bert_impl.data.pretraining_data.TrainingInstance`.
        tokenizer: Anything with `convert_tokens_to_ids`.
        max_seq_length: Padded sequence length.
        max_predictions_per_seq: Padded number of masked-LM predictions.
        with_masks: False for an unmasked instance: `word_starts` replaces the `masked_lm_*` features.

    Returns:
        A `tf.train.Example`.

    Examples:

    >>> import types
    >>> from keras_bert_impl.data.pretraining_data import TrainingInstance
    >>> vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4}
    >>> tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    >>> instance = TrainingInstance(["[CLS]", "[MASK]", "[SEP]", "a", "[SEP]"], [0, 0, 0, 1, 1], True, [1], ["a"])
    >>> ex = instance_to_tf_example(instance, tokenizer, 8, 2)
    >>> list(ex.features.feature["input_ids"].int64_list.value)
    [1, 3, 2, 4, 2, 0, 0, 0]
    """
    arrays = pd_lib.instance_to_features(instance, tokenizer, max_seq_length, max_predictions_per_seq, with_masks)
    feature = {}
    for name, values in arrays.items():
        feature[name] = _float_feature(values) if values.dtype.kind == "f" else _int64_feature(values)
    return tf.train.Example(features=tf.train.Features(feature=feature))


def write_instances_to_example_files(
    instances: Iterable[pd_lib.TrainingInstance],
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
        instances: An iterable of `TrainingInstance`s (e.g. `pretraining_data.create_training_instances`).
        tokenizer: Anything with `convert_tokens_to_ids`.
        output_files: A path, a comma-separated string of paths, or a list of paths.
        max_seq_length: Padded sequence length.
        max_predictions_per_seq: Padded number of masked-LM predictions.
        with_masks: False to write unmasked instances (for `unmasked_pretraining_dataset`).
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
    >>> from keras_bert_impl.data.pretraining_data import TrainingInstance
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


# ---------------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------------


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
    >>> from keras_bert_impl.data.pretraining_data import TrainingInstance
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


def _unmasked_parsed_to_features(parsed: dict) -> dict:
    return {
        "token_ids": tf.cast(parsed["input_ids"], tf.int32),
        "segment_ids": tf.cast(parsed["segment_ids"], tf.int32),
        "padding_mask": tf.cast(parsed["input_mask"], tf.int32),
        "word_starts": tf.cast(parsed["word_starts"], tf.int32),
        "next_sentence_labels": tf.cast(tf.squeeze(parsed["next_sentence_labels"], axis=-1), tf.int32),
    }


def _list_files(file_patterns) -> list:
    if isinstance(file_patterns, str):
        file_patterns = file_patterns.split(",")
    files = []
    for pattern in file_patterns:
        if pattern:
            files.extend(sorted(tf.io.gfile.glob(pattern)))
    if not files:
        raise ValueError(f"no file matches {file_patterns!r}")
    return files


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


def _records(files, is_training, shuffle_buffer_size, cycle_length, seed, repeat):
    """Serialized records: as `run_pretraining.py`'s input_fn (shuffled files, interleave, shuffle) for training."""
    if is_training:
        d = tf.data.Dataset.from_tensor_slices(tf.constant(files))
        d = d.shuffle(buffer_size=len(files), seed=seed, reshuffle_each_iteration=True)
        if repeat:
            d = d.repeat()
        cycle = cycle_length or min(4, len(files))
        d = d.interleave(
            tf.data.TFRecordDataset,
            cycle_length=cycle,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=seed is not None,
        )
        d = d.shuffle(buffer_size=shuffle_buffer_size, seed=seed, reshuffle_each_iteration=True)
    else:
        d = tf.data.TFRecordDataset(files)
        if repeat:
            d = d.repeat()
    return d


def pretraining_dataset(
    file_patterns: Union[str, Sequence[str]],
    max_seq_length: int,
    max_predictions_per_seq: int,
    batch_size: int,
    is_training: bool = True,
    drop_remainder: Optional[bool] = None,
    shuffle_buffer_size: int = 100,
    cycle_length: Optional[int] = None,
    seed: Optional[int] = None,
    repeat: Optional[bool] = None,
) -> tf.data.Dataset:
    """A `tf.data.Dataset` of `(x, y)` batches read from masked pretraining TFRecords (ours or the original's).

    Training mode follows `run_pretraining.py`: the file list is shuffled, repeated, read `cycle_length`
    files at a time (interleaved), and records are shuffled with a buffer of `shuffle_buffer_size`.
    Evaluation mode reads the files in order, once. Multi-worker sharding is by DATA (`shard_by_data`):
    each worker keeps its replicas' slices of every global batch of `batch_size`. The structure is in the module docstring: `x` has
    `token_ids`, `segment_ids`, `padding_mask`, `masked_lm_positions`; `y` has `masked_lm_ids`,
    `masked_lm_weights`, `next_sentence_labels`; all int32 except the float32 weights.

    Args:
        file_patterns: Glob pattern(s): a string (comma-separated allowed) or a list.
        max_seq_length: Sequence length the files were written with.
        max_predictions_per_seq: Predictions per sequence the files were written with.
        batch_size: Examples per batch.
        is_training: Shuffle and repeat (True) or read once in order (False).
        drop_remainder: Drop the last partial batch (static shapes, as TPUs want); default `is_training`.
        shuffle_buffer_size: Record shuffle buffer for training (the original uses 100).
        cycle_length: Files read in parallel for training; default `min(4, number of files)`.
        seed: Seed for the shuffles (and deterministic interleave); None for nondeterministic.
        repeat: Repeat forever (give `steps_per_epoch` to `fit`); default `is_training`.

    Returns:
        A batched `tf.data.Dataset` of `(x, y)`.

    Examples:

    >>> import types
    >>> from keras_bert_impl.data.pretraining_data import TrainingInstance
    >>> vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4}
    >>> tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    >>> instance = TrainingInstance(["[CLS]", "[MASK]", "[SEP]", "a", "[SEP]"], [0, 0, 0, 1, 1], True, [1], ["a"])
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
    >>> write_instances_to_example_files([instance] * 3, tokenizer, path, 8, 2)
    3
    >>> ds = pretraining_dataset(path, 8, 2, batch_size=2, is_training=False)
    >>> [tuple(x["token_ids"].shape) for x, y in ds]  # training mode repeats: model.fit(ds, steps_per_epoch=...)
    [(2, 8), (1, 8)]
    """
    if drop_remainder is None:
        drop_remainder = is_training
    if repeat is None:
        repeat = is_training
    files = _list_files(file_patterns)
    check_record_shapes(files, {"input_ids": ("--max_seq_length", max_seq_length),
                                "masked_lm_positions": ("--max_predictions_per_seq", max_predictions_per_seq)})
    spec = original_feature_spec(max_seq_length, max_predictions_per_seq)
    d = _records(files, is_training, shuffle_buffer_size, cycle_length, seed, repeat)
    # Batch the serialized records first: one vectorized parse per batch.
    d = d.batch(batch_size, drop_remainder=drop_remainder)
    d = d.map(
        lambda serialized: parsed_to_inputs_and_labels(tf.io.parse_example(serialized, spec)),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    return shard_by_data(d.prefetch(tf.data.AUTOTUNE))


def shard_by_data(dataset):
    """`dataset` with tf.distribute's auto-sharding set to DATA: under MultiWorkerMirroredStrategy every
    worker reads the same pipeline and keeps its own replicas' slices of each global batch (disjoint,
    their union the whole batch), so global batch k holds the examples of one process's batch k
    whatever the number of workers. Sharding by FILE would read less but changes the batches and needs
    at least as many files as workers. A single process (Mirrored, TPU, one device) is unaffected.

    Examples:

    >>> d = shard_by_data(tf.data.Dataset.range(4).batch(2))
    >>> d.options().experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.DATA
    True
    """
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)


# ---------------------------------------------------------------------------------------------------
# Dynamic masking
# ---------------------------------------------------------------------------------------------------


def mask_features(
    features: dict,
    seed,
    *,
    vocab_size: int,
    mask_token_id: int,
    special_token_ids: Sequence[int],
    masked_lm_prob: float = 0.15,
    max_predictions_per_seq: int = 20,
    whole_word_mask: bool = False,
    random_token_range: Optional[Sequence[int]] = None,
    mask_token_prob: float = 0.8,
    keep_token_prob: float = 0.1,
    random_token_prob: float = 0.1,
):
    """Masks unmasked packed examples with the original's rules, as a pure function of a stateless seed.

    Works on one example (`[seq]` tensors) or a batch (`[batch, seq]`). Per example, as
    `pretraining_data.create_masked_lm_predictions`: candidates are the real tokens (`padding_mask` 1)
    other than `special_token_ids` ([CLS], [SEP], [PAD] ...); with `whole_word_mask` a candidate with
    `word_starts` 0 joins the word right before it; words are taken in a random order while the number of
    predictions stays within `min(max_predictions_per_seq, max(1, round(n * masked_lm_prob)))` (n = real
    tokens; a word that would overflow is skipped); each chosen word becomes [MASK] (`mask_token_prob`, 80%),
    stays (`keep_token_prob`, 10%) or becomes random tokens (`random_token_prob`, 10%), decided once per word
    by one uniform draw u: [MASK] if u < mask_token_prob, random if u >= 1 - random_token_prob, else kept.
    Positions come out sorted, zero-padded.

    Args:
        features: Dict with int `token_ids`, `segment_ids`, `padding_mask`, `next_sentence_labels`, and
            `word_starts` when `whole_word_mask`.
        seed: A shape-[2] integer tensor (stateless random seed); the same seed gives the same masks.
        vocab_size: Vocabulary size (random replacements are uniform over `random_token_range`).
        mask_token_id: Id of "[MASK]".
        special_token_ids: Ids never masked, e.g. `[cls_id, sep_id, pad_id]`.
        masked_lm_prob: Fraction of tokens to predict.
        max_predictions_per_seq: Upper bound on predictions, and the padded length of the outputs.
        whole_word_mask: Mask whole words (needs `features["word_starts"]`).
        random_token_range: `(low, high)` ids of random replacements; default `(0, vocab_size)`, the whole
            vocabulary as the original.
        mask_token_prob: Probability that a chosen word becomes [MASK] (paper Table 8's MASK).
        keep_token_prob: Probability that it stays itself (SAME).
        random_token_prob: Probability that it becomes random tokens (RND, uniform over
            `random_token_range`, so possibly the token itself). The three sum to 1.

    Returns:
        `(x, y)` in the structure of `pretraining_dataset`.

    Examples:

    >>> f = {"token_ids": tf.constant([2, 7, 8, 9, 3, 0]), "segment_ids": tf.zeros([6], tf.int32),
    ...      "padding_mask": tf.constant([1, 1, 1, 1, 1, 0]), "next_sentence_labels": tf.constant(0)}
    >>> x, y = mask_features(f, tf.constant([1, 2]), vocab_size=10, mask_token_id=4,
    ...                      special_token_ids=[0, 2, 3], max_predictions_per_seq=3)
    >>> int(tf.reduce_sum(y["masked_lm_weights"]))
    1
    """
    pd_lib.check_masking_split(mask_token_prob, keep_token_prob, random_token_prob)
    low, high = random_token_range if random_token_range is not None else (0, vocab_size)
    token_ids = tf.cast(tf.convert_to_tensor(features["token_ids"]), tf.int32)
    unbatched = token_ids.shape.rank == 1

    def batched(t):
        t = tf.convert_to_tensor(t)
        return t[tf.newaxis] if unbatched else t

    token_ids = batched(token_ids)
    padding = tf.cast(batched(features["padding_mask"]), tf.bool)
    batch = tf.shape(token_ids)[0]
    seq_len = tf.shape(token_ids)[1]

    # Candidates: real tokens except the special ones (the original skips [CLS] and [SEP]).
    special = tf.constant(list(special_token_ids), tf.int32)
    is_special = tf.reduce_any(token_ids[..., tf.newaxis] == special, axis=-1)
    is_cand = padding & ~is_special

    # Word groups: a candidate starts a new group unless it is a "##" piece right after a candidate.
    if whole_word_mask:
        if "word_starts" not in features:
            raise ValueError("whole_word_mask needs a 'word_starts' feature")
        word_starts = tf.cast(batched(features["word_starts"]), tf.bool)
    else:
        word_starts = tf.ones_like(is_cand)
    prev_cand = tf.concat([tf.zeros_like(is_cand[:, :1]), is_cand[:, :-1]], axis=1)
    is_start = is_cand & (word_starts | ~prev_cand)
    group_id = tf.cumsum(tf.cast(is_start, tf.int32), axis=1) - 1  # valid where is_cand
    group_id_safe = tf.maximum(group_id, 0)
    num_groups = tf.reduce_sum(tf.cast(is_start, tf.int32), axis=1)  # [batch]

    # Group sizes [batch, seq] (group g of row b at [b, g]).
    row = tf.repeat(tf.range(batch)[:, tf.newaxis], seq_len, axis=1)
    flat_group = tf.where(is_cand, row * seq_len + group_id_safe, batch * seq_len)  # dummy slot for non-candidates
    sizes = tf.math.unsorted_segment_sum(tf.cast(is_cand, tf.int32), flat_group, batch * seq_len + 1)
    sizes = tf.reshape(sizes[:-1], [batch, seq_len])

    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=3)

    # Shuffle the groups (original: rng.shuffle(cand_indexes)): sort random keys; absent groups last.
    group_index = tf.range(seq_len)[tf.newaxis, :]
    keys = tf.random.stateless_uniform([batch, seq_len], seed=seeds[0])
    keys = tf.where(group_index < num_groups[:, tf.newaxis], keys, 2.0)
    order = tf.argsort(keys, axis=1, stable=True)  # group ids in shuffled order
    sizes_ordered = tf.gather(sizes, order, batch_dims=1)

    num_tokens = tf.reduce_sum(tf.cast(padding, tf.int32), axis=1)
    num_to_predict = tf.cast(tf.round(tf.cast(num_tokens, tf.float64) * masked_lm_prob), tf.int32)
    num_to_predict = tf.minimum(max_predictions_per_seq, tf.maximum(1, num_to_predict))

    if whole_word_mask:
        # Greedy in shuffled order: take a word if it still fits, else skip it (original loop).
        def step(count, size):
            take = (size > 0) & (count + size <= num_to_predict)
            return count + tf.where(take, size, 0)

        counts = tf.scan(step, tf.transpose(sizes_ordered), initializer=tf.zeros([batch], tf.int32))
        counts = tf.transpose(counts)  # [batch, seq]: predictions after each word
        prev_counts = tf.concat([tf.zeros_like(counts[:, :1]), counts[:, :-1]], axis=1)
        chosen_ordered = counts > prev_counts
    else:
        # One-token words: the first num_to_predict of the shuffled order.
        chosen_ordered = (group_index < num_to_predict[:, tf.newaxis]) & (sizes_ordered > 0)
    inverse = tf.argsort(order, axis=1, stable=True)
    chosen_group = tf.gather(chosen_ordered, inverse, batch_dims=1)  # [batch, group]
    chosen = is_cand & tf.gather(chosen_group, group_id_safe, batch_dims=1)

    # MASK/SAME/RND (80/10/10 by default), once per word; random replacement tokens per position.
    # Thresholds: [MASK] below mask_token_prob (0.8), random from 1 - random_token_prob (1 - 0.1 == 0.9).
    decision = tf.gather(tf.random.stateless_uniform([batch, seq_len], seed=seeds[1]), group_id_safe, batch_dims=1)
    random_tokens = tf.random.stateless_uniform(
        [batch, seq_len], seed=seeds[2], minval=low, maxval=high, dtype=tf.int32
    )
    is_masked = chosen & (decision < float(mask_token_prob))
    masked_ids = tf.where(is_masked, mask_token_id, token_ids)
    masked_ids = tf.where(chosen & ~is_masked & (decision >= 1.0 - float(random_token_prob)), random_tokens, masked_ids)

    # Sorted positions, zero-padded to max_predictions_per_seq.
    positions = tf.where(chosen, tf.broadcast_to(group_index, tf.shape(chosen)), seq_len)
    positions = tf.concat([positions, tf.fill([batch, max_predictions_per_seq], seq_len)], axis=1)
    positions = tf.sort(positions, axis=1)[:, :max_predictions_per_seq]
    valid = positions < seq_len
    positions = tf.where(valid, positions, 0)
    labels = tf.where(valid, tf.gather(token_ids, positions, batch_dims=1), 0)

    x = {
        "token_ids": masked_ids,
        "segment_ids": tf.cast(batched(features["segment_ids"]), tf.int32),
        "padding_mask": tf.cast(padding, tf.int32),
        "masked_lm_positions": positions,
    }
    y = {
        "masked_lm_ids": labels,
        "masked_lm_weights": tf.cast(valid, tf.float32),
        "next_sentence_labels": tf.cast(tf.reshape(features["next_sentence_labels"], [-1]), tf.int32),
    }
    if unbatched:
        x = {k: v[0] for k, v in x.items()}
        y = {k: v[0] for k, v in y.items()}
    return x, y


def apply_dynamic_masking(
    dataset: tf.data.Dataset,
    *,
    vocab_size: int,
    mask_token_id: int,
    special_token_ids: Sequence[int],
    masked_lm_prob: float = 0.15,
    max_predictions_per_seq: int = 20,
    whole_word_mask: bool = False,
    random_token_range: Optional[Sequence[int]] = None,
    seed: Optional[int] = None,
    num_parallel_calls=tf.data.AUTOTUNE,
    mask_token_prob: float = 0.8,
    keep_token_prob: float = 0.1,
    random_token_prob: float = 0.1,
) -> tf.data.Dataset:
    """Masks a dataset of unmasked packed examples on the fly, differently every epoch (RoBERTa).

    Each element (one example or a batch) gets a stateless seed from
    `tf.data.Dataset.random(seed, rerandomize_each_iteration=True)`, so every pass over the dataset (each
    new iterator, each `repeat`) draws new masks, while a fixed `seed` makes the whole sequence of epochs
    reproducible. The masking rules are those of `mask_features`.

    Args:
        dataset: Elements are dicts with `token_ids`, `segment_ids`, `padding_mask`, `next_sentence_labels`
            (and `word_starts` for whole-word masking), unbatched or batched.
        vocab_size: Vocabulary size.
        mask_token_id: Id of "[MASK]".
        special_token_ids: Ids never masked, e.g. `[cls_id, sep_id, pad_id]`.
        masked_lm_prob: Fraction of tokens to predict.
        max_predictions_per_seq: Upper bound on predictions per sequence.
        whole_word_mask: Mask whole words.
        random_token_range: `(low, high)` ids for random replacements; default the whole vocabulary.
        seed: Seed of the sequence of epochs; None for nondeterministic.
        num_parallel_calls: Parallelism of the map.
        mask_token_prob: Probability that a chosen word becomes [MASK] (0.8).
        keep_token_prob: Probability that it stays itself (0.1).
        random_token_prob: Probability that it becomes random tokens (0.1); the three sum to 1.

    Returns:
        A dataset of `(x, y)` as `pretraining_dataset` gives.

    Examples:

    >>> import os, tempfile
    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "vocab.txt"), "w") as f:
    ...     _ = f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog", "sat", "ran"]))
    >>> with open(os.path.join(d, "corpus.txt"), "w") as f:
    ...     _ = f.write("the cat sat\\nthe dog ran\\n\\nthe dog sat\\nthe cat ran\\n")
    >>> tokenizer = BertTokenizer(os.path.join(d, "vocab.txt"))
    >>> ds = unmasked_dataset_from_text([os.path.join(d, "corpus.txt")], tokenizer, 16).batch(32)
    >>> ds = apply_dynamic_masking(ds, vocab_size=len(tokenizer.vocab), mask_token_id=4,
    ...                            special_token_ids=[0, 2, 3], seed=1)
    >>> x, y = next(iter(ds))
    >>> sorted(x), sorted(y)
    (['masked_lm_positions', 'padding_mask', 'segment_ids', 'token_ids'], ['masked_lm_ids', 'masked_lm_weights', 'next_sentence_labels'])
    """
    pd_lib.check_masking_split(mask_token_prob, keep_token_prob, random_token_prob)  # at the call, not in the map
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
    kwargs = dict(
        mask_token_prob=mask_token_prob,
        keep_token_prob=keep_token_prob,
        random_token_prob=random_token_prob,
        vocab_size=vocab_size,
        mask_token_id=mask_token_id,
        special_token_ids=special_token_ids,
        masked_lm_prob=masked_lm_prob,
        max_predictions_per_seq=max_predictions_per_seq,
        whole_word_mask=whole_word_mask,
        random_token_range=random_token_range,
    )
    return tf.data.Dataset.zip((dataset, seeds)).map(
        lambda features, s: mask_features(features, s, **kwargs), num_parallel_calls=num_parallel_calls
    )


def masking_token_ids(vocab) -> dict:
    """The ids `apply_dynamic_masking` needs, from a BERT vocabulary (dict token -> id).

    Args:
        vocab: `tokenizer.vocab`.

    Returns:
        `{"vocab_size", "mask_token_id", "special_token_ids"}` ([PAD], [CLS], [SEP] as special).

    Examples:

    >>> masking_token_ids({"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4})
    {'vocab_size': 5, 'mask_token_id': 3, 'special_token_ids': [0, 1, 2]}
    """
    return {
        "vocab_size": len(vocab),
        "mask_token_id": vocab["[MASK]"],
        "special_token_ids": [vocab[t] for t in ("[PAD]", "[CLS]", "[SEP]") if t in vocab],
    }


def _unmasked_instance_arrays(instance, tokenizer, max_seq_length):
    f = pd_lib.instance_to_features(instance, tokenizer, max_seq_length, 0, with_masks=False)
    return {
        "token_ids": f["input_ids"].astype(np.int32),
        "segment_ids": f["segment_ids"].astype(np.int32),
        "padding_mask": f["input_mask"].astype(np.int32),
        "word_starts": f["word_starts"].astype(np.int32),
        "next_sentence_labels": np.int32(f["next_sentence_labels"][0]),
    }


def unmasked_dataset_from_text(
    input_files: Sequence[str],
    tokenizer,
    max_seq_length: int = 128,
    dupe_factor: int = 1,
    short_seq_prob: float = 0.1,
    sentence_order: bool = False,
    shard_size_documents: Optional[int] = 1000,
    random_seed: int = 12345,
) -> tf.data.Dataset:
    """Unmasked packed NSP (or SOP) pairs straight from text, streamed through `tf.data` (no files).

    The pairs are those of `pretraining_data.create_training_instances(..., do_masking=False)` (the same
    document/pair logic as the masked files, same `random_seed` semantics), padded to `max_seq_length`.
    Every pass over the dataset re-reads the text and rebuilds the same pairs; mask them with
    `apply_dynamic_masking` for fresh masks every epoch.

    Args:
        input_files: Text files (one sentence per line, blank line between documents).
        tokenizer: Anything with `tokenize`, `convert_tokens_to_ids`, `vocab`.
        max_seq_length: Padded sequence length.
        dupe_factor: Passes over each shard of documents (different pairs each pass).
        short_seq_prob: Probability of a shorter target length.
        sentence_order: Sentence-order (ALBERT) pairs instead of next-sentence pairs.
        shard_size_documents: Documents held in memory at once (the NSP random document comes from the shard).
        random_seed: Seed of the `random.Random` choosing the pairs.

    Returns:
        An unbatched dataset of dicts: int32 `token_ids`, `segment_ids`, `padding_mask`, `word_starts`
        ([max_seq_length]) and scalar `next_sentence_labels`.

    Examples:

    >>> import os, tempfile
    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "vocab.txt"), "w") as f:
    ...     _ = f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog", "sat", "ran"]))
    >>> with open(os.path.join(d, "corpus.txt"), "w") as f:
    ...     _ = f.write("the cat sat\\nthe dog ran\\n\\nthe dog sat\\nthe cat ran\\n")
    >>> tokenizer = BertTokenizer(os.path.join(d, "vocab.txt"))
    >>> ds = unmasked_dataset_from_text([os.path.join(d, "corpus.txt")], tokenizer, 16)
    >>> sorted(next(iter(ds)))
    ['next_sentence_labels', 'padding_mask', 'segment_ids', 'token_ids', 'word_starts']
    """
    input_files = list(input_files)

    def generator():
        instances = pd_lib.create_training_instances(
            pd_lib.read_documents(input_files, tokenizer),
            list(tokenizer.vocab.keys()),
            random.Random(random_seed),
            max_seq_length=max_seq_length,
            dupe_factor=dupe_factor,
            short_seq_prob=short_seq_prob,
            sentence_order=sentence_order,
            shard_size_documents=shard_size_documents,
            do_masking=False,
        )
        for instance in instances:
            yield _unmasked_instance_arrays(instance, tokenizer, max_seq_length)

    seq = tf.TensorSpec([max_seq_length], tf.int32)
    signature = {
        "token_ids": seq,
        "segment_ids": seq,
        "padding_mask": seq,
        "word_starts": seq,
        "next_sentence_labels": tf.TensorSpec([], tf.int32),
    }
    return tf.data.Dataset.from_generator(generator, output_signature=signature)


def unmasked_pretraining_dataset(
    file_patterns: Union[str, Sequence[str]],
    max_seq_length: int,
    batch_size: int,
    *,
    is_training: bool = True,
    drop_remainder: Optional[bool] = None,
    shuffle_buffer_size: int = 100,
    cycle_length: Optional[int] = None,
    seed: Optional[int] = None,
    repeat: Optional[bool] = None,
    **masking,
) -> tf.data.Dataset:
    """`(x, y)` batches from unmasked TFRecords, masked on the fly (fresh masks every epoch).

    Reads files written with `write_instances_to_example_files(..., with_masks=False)` (e.g. by the recipe's
    `--dynamic_masking`) as `pretraining_dataset` reads masked ones, then applies `apply_dynamic_masking`
    to each batch. The output structure equals `pretraining_dataset`'s.

    Args:
        file_patterns: Glob pattern(s).
        max_seq_length: Sequence length the files were written with.
        batch_size: Examples per batch.
        is_training: Shuffle and repeat, or read once in order.
        drop_remainder: Drop the last partial batch; default `is_training`.
        shuffle_buffer_size: Record shuffle buffer for training.
        cycle_length: Files read in parallel for training.
        seed: Seed for shuffles and masks; None for nondeterministic.
        repeat: Repeat forever; default `is_training`.
        **masking: The masking arguments of `apply_dynamic_masking`: `vocab_size`, `mask_token_id`,
            `special_token_ids` (required; `masking_token_ids(vocab)` gives the last two),
            `masked_lm_prob`, `max_predictions_per_seq`, `whole_word_mask` (uses the files'
            `word_starts`), `random_token_range`, `mask_token_prob`, `keep_token_prob`, `random_token_prob`.

    Returns:
        A batched dataset of `(x, y)`.

    Examples:

    >>> import os, tempfile, types
    >>> from keras_bert_impl.data.pretraining_data import TrainingInstance
    >>> vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4, "b": 5}
    >>> tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    >>> instance = TrainingInstance(["[CLS]", "a", "b", "[SEP]", "a", "[SEP]"], [0, 0, 0, 0, 1, 1], False)
    >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
    >>> write_instances_to_example_files([instance] * 2, tokenizer, path, 8, 2, with_masks=False)
    2
    >>> ids = masking_token_ids(tokenizer.vocab)
    >>> ds = unmasked_pretraining_dataset(path, 8, 2, is_training=False, max_predictions_per_seq=2, seed=1, **ids)
    >>> x, y = next(iter(ds))
    >>> tuple(x["masked_lm_positions"].shape), tuple(y["masked_lm_weights"].shape)
    ((2, 2), (2, 2))
    """
    if drop_remainder is None:
        drop_remainder = is_training
    if repeat is None:
        repeat = is_training
    files = _list_files(file_patterns)
    spec = unmasked_feature_spec(max_seq_length)
    d = _records(files, is_training, shuffle_buffer_size, cycle_length, seed, repeat)
    d = d.batch(batch_size, drop_remainder=drop_remainder)
    d = d.map(lambda s: _unmasked_parsed_to_features(tf.io.parse_example(s, spec)), num_parallel_calls=tf.data.AUTOTUNE)
    d = apply_dynamic_masking(d, seed=seed, **masking)
    return d.prefetch(tf.data.AUTOTUNE)


# ---------------------------------------------------------------------------------------------------
# Pretraining objectives other than masked LM + next sentence
# ---------------------------------------------------------------------------------------------------


def left_to_right_lm_batch(x: dict, y: dict):
    """A left-to-right LM example from a masked one: the original tokens and next-token targets.

    The masked files hold `[MASK]`/random tokens at `masked_lm_positions`; the original token there is
    `masked_lm_ids` (where `masked_lm_weights` > 0). Those are put back, and position t gets the token at
    t + 1 as its target, weighted 1 where that token is real (not padding, not past the end).

    Args:
        x, y: the `(x, y)` of `pretraining_dataset` (batched [batch, ...] or one example).

    Returns:
        `(x, y)`: x {`token_ids` (restored), `segment_ids`, `padding_mask`} [..., seq]; y
        {`next_token_ids` int32 [..., seq] (0 at the last position), `next_token_weights` float32
        [..., seq]}.

    Examples:

    >>> x = {"token_ids": tf.constant([[2, 4, 7, 3, 0]]), "segment_ids": tf.zeros((1, 5), tf.int32),
    ...      "padding_mask": tf.constant([[1, 1, 1, 1, 0]]), "masked_lm_positions": tf.constant([[1, 2, 0]])}
    >>> y = {"masked_lm_ids": tf.constant([[5, 6, 0]]), "masked_lm_weights": tf.constant([[1.0, 1.0, 0.0]]),
    ...      "next_sentence_labels": tf.constant([0])}
    >>> x, y = left_to_right_lm_batch(x, y)
    >>> x["token_ids"].numpy().tolist(), y["next_token_ids"].numpy().tolist()
    ([[2, 5, 6, 3, 0]], [[5, 6, 3, 0, 0]])
    >>> y["next_token_weights"].numpy().tolist()
    [[1.0, 1.0, 1.0, 0.0, 0.0]]
    """
    token_ids = tf.cast(x["token_ids"], tf.int32)  # [..., T]
    seq_length = tf.shape(token_ids)[-1]
    # [..., P, T]: one-hot of each real prediction's position.
    hits = tf.one_hot(tf.cast(x["masked_lm_positions"], tf.int32), seq_length, dtype=tf.int32)
    hits *= tf.cast(tf.cast(y["masked_lm_weights"], tf.float32) > 0, tf.int32)[..., None]
    restored_ids = tf.reduce_sum(hits * tf.cast(y["masked_lm_ids"], tf.int32)[..., None], axis=-2)  # [..., T]
    restored = tf.reduce_max(hits, axis=-2) > 0  # [..., T]
    token_ids = tf.where(restored, restored_ids, token_ids)
    padding_mask = tf.cast(x["padding_mask"], tf.int32)
    pad = tf.zeros_like(token_ids[..., :1])  # [..., 1]
    next_token_ids = tf.concat([token_ids[..., 1:], pad], axis=-1)  # [..., T]
    next_token_weights = tf.cast(tf.concat([padding_mask[..., 1:], pad], axis=-1), tf.float32)
    inputs = {"token_ids": token_ids, "segment_ids": tf.cast(x["segment_ids"], tf.int32), "padding_mask": padding_mask}
    return inputs, {"next_token_ids": next_token_ids, "next_token_weights": next_token_weights}


def masked_lm_only_batch(x: dict, y: dict):
    """`(x, y)` without `next_sentence_labels`: the targets of a masked-LM-only ("mlm") pretrainer."""
    return x, {k: v for k, v in y.items() if k != "next_sentence_labels"}


def objective_dataset(dataset: tf.data.Dataset, objective: str) -> tf.data.Dataset:
    """The `(x, y)` batches of `pretraining_dataset` (or `unmasked_pretraining_dataset`) for `objective`.

    "mlm_nsp" and "sop" (the labels' meaning is the files'): unchanged; "mlm": without
    `next_sentence_labels` (`masked_lm_only_batch`); "ltr": the original tokens and next-token targets
    (`left_to_right_lm_batch`).

    Examples:

    >>> x = {"token_ids": tf.constant([[2, 4, 3]]), "segment_ids": tf.zeros((1, 3), tf.int32),
    ...      "padding_mask": tf.ones((1, 3), tf.int32), "masked_lm_positions": tf.constant([[1]])}
    >>> y = {"masked_lm_ids": tf.constant([[5]]), "masked_lm_weights": tf.constant([[1.0]]),
    ...      "next_sentence_labels": tf.constant([0])}
    >>> ds = tf.data.Dataset.from_tensors((x, y))
    >>> sorted(next(iter(objective_dataset(ds, "mlm")))[1])
    ['masked_lm_ids', 'masked_lm_weights']
    >>> sorted(next(iter(objective_dataset(ds, "ltr")))[1])
    ['next_token_ids', 'next_token_weights']
    """
    if objective not in PRETRAINING_OBJECTIVES:
        raise UserInputError(f"objective must be one of {', '.join(PRETRAINING_OBJECTIVES)}; got {objective!r}.")
    if objective == "mlm":
        return dataset.map(masked_lm_only_batch, num_parallel_calls=tf.data.AUTOTUNE)
    if objective == "ltr":
        return dataset.map(left_to_right_lm_batch, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset
