"""BertPreprocessor: what the task preprocessors share: a tokenizer, a packed length, saving and loading.

A task model built with a preprocessor (`BertClassifier(..., preprocessor=...)`, or any task's
`from_pretrained(dir)` when `dir` holds a vocabulary) takes raw strings in `fit`, `evaluate` and `predict`:
the model calls `preprocessor(x, y, sample_weight)` and trains on the token ids it returns. Each task has
its own subclass, which defines what `x` and `y` are (texts, text pairs, words and word labels, questions
and answer spans, contexts and endings, sentence pairs to mask).

The preprocessors compute in numpy with the Python `BertTokenizer` (the original's rules), so they run
under every backend. They make the features of the task's recipe, through the same code
(`tokenizers.packing`, the `data` featurizers), and pad them to a fixed `sequence_length`: one compiled
step shape for every batch. The span QA and token classification preprocessors split a long example into
the recipe's windows, one row each, and repeat its `sample_weight` for each (`per_window`).
"""

import os

import keras
import numpy as np

from keras_bert_impl.checkpoints.model_directory import ModelDirectory, write_tokenizer_files
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer, as_text_list
from keras_bert_impl.tokenizers.vocabulary import check_vocab_size
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import atomic_open
from keras_bert_impl.utils.model_files import VOCAB_FILE


class BertPreprocessor:
    """Base class of the task preprocessors: raw text -> the backbone's int32 inputs, at `sequence_length`.

    Args:
        tokenizer: a `BertTokenizer`, or a checkpoint directory holding its vocabulary.
        sequence_length: the packed length, [CLS] and [SEP] included (at least 3).

    A subclass implements `call(x, y)` -> `(x_ids, y_ids)`, and lists its other constructor arguments
    in `task_config()`.
    """

    # The `sequence_length` of `from_pretrained` when neither the caller nor the directory gives one.
    default_sequence_length = 128

    def __init__(self, tokenizer, sequence_length=None, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__} got unexpected argument(s): {', '.join(sorted(kwargs))}.")
        if isinstance(tokenizer, (str, os.PathLike)):
            tokenizer = BertTokenizer.from_pretrained(tokenizer)
        if not isinstance(tokenizer, BertTokenizer):
            raise TypeError(f"{type(self).__name__}: tokenizer must be a BertTokenizer or a directory holding "
                            f"vocab.txt, got {type(tokenizer).__name__}.")
        sequence_length = self.default_sequence_length if sequence_length is None else sequence_length
        if isinstance(sequence_length, bool) or not isinstance(sequence_length, (int, np.integer)) or sequence_length < 3:
            raise ValueError(f"{type(self).__name__}: sequence_length must be an int >= 3 ([CLS], a token, [SEP]), "
                             f"got {sequence_length!r}.")
        self.tokenizer = tokenizer
        self.sequence_length = int(sequence_length)
        if self.tokenizer.vocab is not None:  # else it is read later (`load_vocabulary`)
            self.check_tokenizer()

    def check_tokenizer(self):
        """Raises `ValueError` when the vocabulary lacks a token the task needs (a subclass's rule)."""

    # ------------------------------------------------------------------------------ preprocessing
    def __call__(self, x, y=None, sample_weight=None):
        """Raw inputs (and labels) -> `(x, y, sample_weight)` as the task model takes them."""
        x, y = self.call(x, y)
        return x, y, sample_weight

    def call(self, x, y):
        raise NotImplementedError

    def pack(self, texts, pair_texts=None):
        """`[CLS] A [SEP] (B [SEP])` of each text (pair), truncated as the original, padded to `sequence_length`
        (`tokenizers.packing`, through `BertTokenizer.__call__`, as the GLUE and SWAG featurizers pack)."""
        return self.tokenizer(texts, pair_texts, max_length=self.sequence_length, padding="max_length")

    def check_vocabulary(self, vocab_size, where, allow_smaller=True):
        """Refuses a vocabulary with ids beyond the model's `vocab_size`, and unless `allow_smaller` one that is
        not the model's (see `check_vocab_size`)."""
        check_vocab_size(self.tokenizer, vocab_size, where, allow_smaller=allow_smaller)

    # ------------------------------------------------------------------------------ saving
    @classmethod
    def from_pretrained(cls, path, sequence_length=None, **kwargs):
        """The preprocessor of a checkpoint directory (or model name, or its `ModelDirectory`): its vocabulary
        and casing (`BertTokenizer.from_pretrained`) and, unless given, the sequence length the model was
        fine-tuned at (the task's `directory_settings`' `sequence_length`, else `ModelDirectory.max_seq_length`:
        config.json's `max_seq_length`, else tokenizer_config.json's `sequence_length`), else the task's
        default, and the task's other settings the directory records (`directory_settings`), unless given in
        `kwargs`; the tokenizer's arguments the task reads from the directory (`tokenizer_settings`)."""
        checkpoint = path if isinstance(path, ModelDirectory) else ModelDirectory(path)
        stored = dict(cls.directory_settings(checkpoint))
        stored_length = stored.pop("sequence_length", None)
        if sequence_length is None:
            sequence_length = stored_length or checkpoint.max_seq_length
        kwargs = {**stored, **kwargs}
        tokenizer = BertTokenizer.from_pretrained(checkpoint.directory, **cls.tokenizer_settings(checkpoint))
        return cls(tokenizer, sequence_length=sequence_length, **kwargs)

    @classmethod
    def directory_settings(cls, checkpoint):
        """The constructor arguments a model directory (`ModelDirectory`) records for this task (e.g. SQuAD's
        `doc_stride`; a `sequence_length` of the task's own files, before the directory's own); none by
        default."""
        return {}

    @classmethod
    def tokenizer_settings(cls, checkpoint):
        """`BertTokenizer.from_pretrained` arguments this task reads from a model directory beyond the tokenizer's
        own files (e.g. a sentence-transformers directory's casing); none by default."""
        return {}

    def save_pretrained(self, directory):
        """Writes vocab.txt and tokenizer_config.json (casing, `normalize` when set and `sequence_length`) for
        `from_pretrained` here and transformers' `BertTokenizer` (which ignores `sequence_length` and
        `normalize`), through the model directory's writer (`model_directory.write_tokenizer_files`)."""
        write_tokenizer_files(directory, self.tokenizer, self.sequence_length)

    # ------------------------------------------------------------------------------ .keras files
    def save_vocabulary(self, directory):
        """Writes the vocabulary as `directory`/vocab.txt (the assets of a `.keras` file)."""
        with atomic_open(os.path.join(directory, VOCAB_FILE)) as f:
            f.write("".join(token + "\n" for token in self.tokenizer.vocabulary))

    def load_vocabulary(self, directory):
        """Reads the vocabulary `save_vocabulary` wrote, when the tokenizer has none (a preprocessor rebuilt
        from its config); a preprocessor with a vocabulary keeps it."""
        if self.tokenizer.vocab is None:
            self.tokenizer.set_vocabulary(os.path.join(directory, VOCAB_FILE))
            self.check_tokenizer()

    def task_config(self):
        """The subclass's constructor arguments other than the tokenizer and `sequence_length`."""
        return {}

    def get_config(self):
        """The settings (the tokenizer's `normalize` only when set); the vocabulary is not among them: a
        `.keras` file holds it in its assets (`save_vocabulary`, called by the task model's `save_assets`)."""
        config = {
            "do_lower_case": self.tokenizer.do_lower_case,
            "split_special_tokens": self.tokenizer.split_special_tokens,
            "sequence_length": self.sequence_length,
            **self.task_config(),
        }
        if self.tokenizer.normalize is not None:  # NFKC (`BertTokenizer(normalize=...)`), off by default
            config["normalize"] = self.tokenizer.normalize
        return config

    @classmethod
    def from_config(cls, config):
        """The preprocessor of `get_config`, its tokenizer without a vocabulary until `load_vocabulary`; a config
        that holds the vocabulary itself (`.keras` files written before it moved to the assets) has one."""
        config = dict(config)
        tokenizer = BertTokenizer(
            config.pop("vocabulary", None),
            do_lower_case=config.pop("do_lower_case"),
            split_special_tokens=config.pop("split_special_tokens", True),
            normalize=config.pop("normalize", None),
        )
        return cls(tokenizer, **config)

    def __repr__(self):
        vocab_size = None if self.tokenizer.vocab is None else self.tokenizer.vocab_size
        return (f"{type(self).__name__}(vocab_size={vocab_size}, "
                f"do_lower_case={self.tokenizer.do_lower_case}, sequence_length={self.sequence_length})")


def split_pair(x, what):
    """`x` as (first texts, second texts or None): a tuple of two sequences of str is a batch of pairs."""
    if isinstance(x, tuple) and len(x) == 2 and not any(isinstance(part, (str, bytes)) for part in x):
        first, second = as_text_list(x[0], f"{what}[0]"), as_text_list(x[1], f"{what}[1]")
        if len(first) != len(second):
            raise UserInputError(f"{what}: {len(first)} first texts but {len(second)} second texts; they must pair up.")
        return first, second
    return as_text_list(x, what), None


def per_window(sample_weight, example_index, num_examples):
    """A per-example `sample_weight` (first axis: the examples) repeated for each window (row) of its example,
    `example_index` giving each row's example; None stays None."""
    if sample_weight is None:
        return None
    weights = np.asarray(sample_weight if isinstance(sample_weight, (list, tuple))
                         else keras.ops.convert_to_numpy(sample_weight))
    if weights.ndim == 0 or len(weights) != num_examples:
        raise ValueError(f"sample_weight has shape {weights.shape}; expected one weight per example "
                         f"({num_examples}), which every window of the example takes.")
    return weights[np.asarray(example_index, "int64")]
