"""Batches of BERT pretraining files without TensorFlow: numpy `(x, y)` batches read from the masked
TFRecords of `data/pretraining_records.py`, for `model.fit` on JAX and torch when TensorFlow is not
installed (`runners/pretrain.py` takes `data/tf_pretraining_datasets.py`'s `tf.data` pipelines whenever
TensorFlow is installed).

Training reads as `run_pretraining.py`'s input_fn does: the file list shuffled, `cycle_length` files read in
turn one record each, the records shuffled through a buffer of `shuffle_buffer_size`, endlessly; the
shuffles are Python's `random.Random(seed)`, so a seed gives the same batches in every run (not the same
order as `tf.data`'s shuffles). Evaluation reads the files in order, once. The batches of the objectives
other than masked LM + next sentence (`objective_batches`) are those of `data/tf_pretraining_objectives.py`.
Dynamic masking (unmasked files masked on the fly) is a `tf.data` pipeline: it needs the `[tensorflow]`
extra.
"""

import itertools
import random

import numpy as np

from keras_bert_impl.config import PRETRAINING_OBJECTIVES
from keras_bert_impl.data.pretraining_records import (
    check_record_shapes,
    examples_to_inputs_and_labels,
    read_examples,
)
from keras_bert_impl.utils import file_io
from keras_bert_impl.utils.errors import UserInputError


def list_files(file_patterns):
    """The files matching glob pattern(s): a comma-separated string or a list; each pattern's matches sorted.

    Raises:
        UserInputError: nothing matches.
    """
    if isinstance(file_patterns, str):
        file_patterns = file_patterns.split(",")
    files = [path for pattern in file_patterns if pattern for path in file_io.glob(pattern)]
    if not files:
        raise UserInputError(f"no file matches {','.join(file_patterns)!r}")
    return files


def _training_examples(files, rng, shuffle_buffer_size, cycle_length, repeat):
    """The examples of `files` in `run_pretraining.py`'s training order, drawn with `rng`."""
    while True:
        order = list(files)
        rng.shuffle(order)
        cycle = cycle_length or min(4, len(order))
        buffer = []
        for start in range(0, len(order), cycle):
            readers = [read_examples(path) for path in order[start:start + cycle]]
            while readers:
                for reader in list(readers):
                    example = next(reader, None)
                    if example is None:
                        readers.remove(reader)
                        continue
                    buffer.append(example)
                    if len(buffer) >= shuffle_buffer_size:
                        yield buffer.pop(rng.randrange(len(buffer)))
        while buffer:
            yield buffer.pop(rng.randrange(len(buffer)))
        if not repeat:
            return


def pretraining_batches(file_patterns, max_seq_length, max_predictions_per_seq, batch_size, is_training=True,
                        drop_remainder=None, shuffle_buffer_size=100, cycle_length=None, seed=None, repeat=None,
                        skip_batches=0, objective="mlm_nsp", process_share=None):
    """A generator of numpy `(x, y)` batches read from masked pretraining files (ours or the original's).

    The structure is `data/pretraining_records.py`'s (for "mlm_nsp" and "sop"), or that of `objective`
    (`objective_batches`). Arguments as `tf_pretraining_datasets.pretraining_dataset`'s, and:

    Args:
        skip_batches: Batches skipped first (those a resumed run trained on already).
        objective: One of `config.PRETRAINING_OBJECTIVES`.
        process_share: `(index, count)`: in a multi-process JAX job, this process's rows of each global batch
            (`batching.share_of_batch`); None for the whole batch.

    Examples:

    >>> import os, tempfile, types
    >>> from keras_bert_impl.data.pretraining_instances import TrainingInstance
    >>> from keras_bert_impl.data.pretraining_records import write_instances_to_example_files
    >>> vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4}
    >>> tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    >>> instance = TrainingInstance(["[CLS]", "[MASK]", "[SEP]", "a", "[SEP]"], [0, 0, 0, 1, 1], True, [1], ["a"])
    >>> path = os.path.join(tempfile.mkdtemp(), "a.tfrecord")
    >>> write_instances_to_example_files([instance] * 3, tokenizer, path, 8, 2)
    3
    >>> [x["token_ids"].shape for x, y in pretraining_batches(path, 8, 2, batch_size=2, is_training=False)]
    [(2, 8), (1, 8)]
    """
    from keras_bert_impl.data.batching import share_of_batch

    if objective not in PRETRAINING_OBJECTIVES:
        raise UserInputError(f"objective must be one of {', '.join(PRETRAINING_OBJECTIVES)}; got {objective!r}.")
    files = list_files(file_patterns)
    check_record_shapes(files, {"input_ids": ("--max_seq_length", max_seq_length),
                                "masked_lm_positions": ("--max_predictions_per_seq", max_predictions_per_seq)})
    drop_remainder = is_training if drop_remainder is None else drop_remainder
    repeat = is_training if repeat is None else repeat
    if is_training:
        examples = _training_examples(files, random.Random(seed), shuffle_buffer_size, cycle_length, repeat)
    else:
        examples = itertools.chain.from_iterable(read_examples(path) for path in itertools.chain.from_iterable(
            itertools.repeat(files) if repeat else [files]))
    index = 0
    while True:
        rows = list(itertools.islice(examples, batch_size))
        if not rows or (drop_remainder and len(rows) < batch_size):
            return
        index += 1
        if index <= skip_batches:
            continue
        batch = objective_batches(*examples_to_inputs_and_labels(rows), objective)
        yield batch if process_share is None else share_of_batch(batch, *process_share)


def left_to_right_lm_batch(x, y):
    """A left-to-right LM batch from a masked one (numpy): the original tokens, with position t's target the
    token at t + 1, weighted 1 where that token is real; `tf_pretraining_objectives.left_to_right_lm_batch`
    in numpy.

    Examples:

    >>> x = {"token_ids": np.array([[2, 4, 7, 3, 0]]), "segment_ids": np.zeros((1, 5), np.int32),
    ...      "padding_mask": np.array([[1, 1, 1, 1, 0]]), "masked_lm_positions": np.array([[1, 2, 0]])}
    >>> y = {"masked_lm_ids": np.array([[5, 6, 0]]), "masked_lm_weights": np.array([[1.0, 1.0, 0.0]]),
    ...      "next_sentence_labels": np.array([0])}
    >>> x, y = left_to_right_lm_batch(x, y)
    >>> x["token_ids"].tolist(), y["next_token_ids"].tolist(), y["next_token_weights"].tolist()
    ([[2, 5, 6, 3, 0]], [[5, 6, 3, 0, 0]], [[1.0, 1.0, 1.0, 0.0, 0.0]])
    """
    token_ids = np.array(x["token_ids"], np.int32)  # [batch, T]
    rows, predictions = np.nonzero(np.asarray(y["masked_lm_weights"]) > 0)  # the real predictions
    token_ids[rows, np.asarray(x["masked_lm_positions"])[rows, predictions]] = np.asarray(
        y["masked_lm_ids"])[rows, predictions]
    padding_mask = np.asarray(x["padding_mask"], np.int32)
    pad = np.zeros_like(token_ids[:, :1])  # [batch, 1]
    inputs = {"token_ids": token_ids, "segment_ids": np.asarray(x["segment_ids"], np.int32),
              "padding_mask": padding_mask}
    return inputs, {"next_token_ids": np.concatenate([token_ids[:, 1:], pad], axis=-1),
                    "next_token_weights": np.concatenate([padding_mask[:, 1:], pad], axis=-1).astype(np.float32)}


def objective_batches(x, y, objective):
    """The `(x, y)` of a masked batch for `objective`: "mlm_nsp" and "sop" unchanged; "mlm" without
    `next_sentence_labels`; "ltr" `left_to_right_lm_batch` (as `tf_pretraining_objectives.objective_dataset`).

    Examples:

    >>> x = {"token_ids": np.array([[2, 4, 3]]), "segment_ids": np.zeros((1, 3), np.int32),
    ...      "padding_mask": np.ones((1, 3), np.int32), "masked_lm_positions": np.array([[1]])}
    >>> y = {"masked_lm_ids": np.array([[5]]), "masked_lm_weights": np.array([[1.0]]),
    ...      "next_sentence_labels": np.array([0])}
    >>> sorted(objective_batches(x, y, "mlm")[1])
    ['masked_lm_ids', 'masked_lm_weights']
    """
    if objective == "mlm":
        return x, {k: v for k, v in y.items() if k != "next_sentence_labels"}
    if objective == "ltr":
        return left_to_right_lm_batch(x, y)
    return x, y
