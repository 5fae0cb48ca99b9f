"""BertTextClassifierPreprocessor: texts or text pairs -> packed token ids (a long text: its windows), for
`BertClassifier`."""

import keras
import numpy as np

from keras_bert_impl.data import batching
from keras_bert_impl.data.text_classification_data import LONG_INPUT_KEY, LONG_INPUT_MODES
from keras_bert_impl.preprocessors.bert_preprocessor import BertPreprocessor, per_window, split_pair
from keras_bert_impl.tokenizers import packing


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertTextClassifierPreprocessor(BertPreprocessor):
    """Texts (or pairs of texts) -> `[CLS] A [SEP] (B [SEP])`, as the original run_classifier.py packs them.

    `x` is a list of str (one text per example) or a tuple of two lists of str (sentence pairs, e.g. MNLI's
    premise and hypothesis). A pair is truncated by popping from the longer text, as the original's
    `_truncate_seq_pair`. The packing is the GLUE recipe's (`tokenizers.packing`, as
    `data.glue_data.encode_examples`). Labels pass through unchanged.

    With `long_input` "mean" or "max" (run_glue.py's `--long_input`), a single text longer than
    `sequence_length` is not cut: it becomes its windows of `sequence_length` tokens, one row each
    (`tokenizers.packing.pack_windows`), each window taking its text's label and `sample_weight`; `windows(x)`
    tells the text of each row, and `data.class_scores.window_logits` pools the rows' logits by their mean
    or maximum. `from_pretrained(directory)` takes the mode the model was fine-tuned with (config.json's
    `long_input`).

    Args:
        tokenizer: a `BertTokenizer`, or a directory holding its vocabulary.
        sequence_length: the packed length (default 128, the paper's GLUE length).
        long_input: "truncate" (default), "mean" or "max".

    Examples:

    >>> import os, tempfile
    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "great", "movie", "bad"])
    >>> preprocessor = BertTextClassifierPreprocessor(tokenizer, sequence_length=6)
    >>> x, y, _ = preprocessor(["A great movie", "bad"], [1, 0])
    >>> x["token_ids"].tolist()
    [[2, 4, 5, 6, 3, 0], [2, 7, 3, 0, 0, 0]]
    >>> x, _, _ = preprocessor((["a movie"], ["bad"]))
    >>> x["token_ids"].tolist(), x["segment_ids"].tolist()
    ([[2, 4, 6, 3, 7, 3]], [[0, 0, 0, 0, 1, 1]])

    A long text's windows:

    >>> preprocessor = BertTextClassifierPreprocessor(tokenizer, sequence_length=4, long_input="mean")
    >>> x, y, _ = preprocessor(["A great movie", "bad"], [1, 0])
    >>> x["token_ids"].tolist(), y.tolist(), preprocessor.windows(["A great movie", "bad"])[1].tolist()
    ([[2, 4, 5, 3], [2, 6, 3, 0], [2, 7, 3, 0]], [1, 1, 0], [0, 0, 1])
    """

    def __init__(self, tokenizer, sequence_length=None, long_input="truncate", **kwargs):
        super().__init__(tokenizer, sequence_length, **kwargs)
        if long_input not in LONG_INPUT_MODES:
            raise ValueError(f"BertTextClassifierPreprocessor: long_input must be one of {LONG_INPUT_MODES}, "
                             f"got {long_input!r}.")
        self.long_input = long_input

    def task_config(self):
        return {"long_input": self.long_input}

    @classmethod
    def directory_settings(cls, checkpoint):
        """The `long_input` mode config.json records (run_glue.py writes it when it is not "truncate")."""
        return {"long_input": checkpoint.setting(LONG_INPUT_KEY, "truncate")}

    def windows(self, x):
        """The rows of `x` as the model reads them, unpadded, and the example of each row.

        Returns:
            (rows, example_index): rows the dict {"token_ids", "segment_ids", "padding_mask"} -> list of
            int32 arrays (the input of `data.batching.predict_bucketed`); example_index int64 [rows]
            (`arange(N)` with "truncate").
        """
        texts, pair_texts = split_pair(x, "x")
        if self.long_input == "truncate":
            rows = packing.pack_unpadded(self.tokenizer, texts, pair_texts, self.sequence_length)
            return rows, np.arange(len(texts), dtype="int64")
        if pair_texts is not None:
            raise ValueError(f"long_input={self.long_input!r} classifies the windows of single texts; x holds "
                             "text pairs (use long_input='truncate').")
        return packing.pack_windows(self.tokenizer, texts, self.sequence_length)

    def __call__(self, x, y=None, sample_weight=None):
        """Raw texts (and labels, and per-text sample weights) -> one row per text (per window of a long text)."""
        if self.long_input == "truncate":
            return super().__call__(x, y, sample_weight)
        rows, example_index = self.windows(x)
        inputs = batching.pad_batch(rows, np.arange(len(example_index)), length=self.sequence_length)
        if y is not None:
            y = np.asarray(y if isinstance(y, (list, tuple)) else keras.ops.convert_to_numpy(y))[example_index]
        num_texts = int(example_index[-1]) + 1 if len(example_index) else 0
        return inputs, y, per_window(sample_weight, example_index, num_texts)

    def call(self, x, y):
        texts, pair_texts = split_pair(x, "x")
        return self.pack(texts, pair_texts), y
