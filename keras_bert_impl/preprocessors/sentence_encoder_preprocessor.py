"""BertSentenceEncoderPreprocessor: texts, or columns of texts, -> `[CLS] text [SEP]` of each, for
`BertSentenceEncoder`."""

import keras
import numpy as np

from keras_bert_impl.preprocessors.bert_preprocessor import BertPreprocessor
from keras_bert_impl.tokenizers import packing
from keras_bert_impl.tokenizers.bert_tokenizer import as_text_list
from keras_bert_impl.utils.errors import UserInputError


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertSentenceEncoderPreprocessor(BertPreprocessor):
    """Texts -> one packed `[CLS] text [SEP]` per text, in columns: int32 [batch, columns, seq].

    `x` is a list of str (one column: the texts to encode) or a tuple of lists of str, one text each per
    example (the columns a contrastive loss reads: (anchors, positives) or (anchors, positives, negatives),
    the two sentences of a scored pair, or the same texts twice for SimCSE). Every text is packed alone and
    cut to `sequence_length`, as sentence-transformers' tokenizer cuts it at `max_seq_length`. Labels (a
    scored pair's score) pass through unchanged.

    Args:
        tokenizer: a `BertTokenizer`, or a directory holding its vocabulary.
        sequence_length: the packed length (default 128). `from_pretrained` reads a sentence-transformers
            directory's `max_seq_length` (sentence_bert_config.json).

    Examples:

    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "cat", "sat", "dog", "ran"])
    >>> preprocessor = BertSentenceEncoderPreprocessor(tokenizer, sequence_length=5)
    >>> x, _, _ = preprocessor(["A cat sat", "dog"])
    >>> x["token_ids"].shape, x["token_ids"][:, 0].tolist()
    ((2, 1, 5), [[2, 4, 5, 6, 3], [2, 7, 3, 0, 0]])
    >>> x, _, _ = preprocessor((["a cat"], ["a dog"], ["dog ran"]))  # anchor, positive, negative
    >>> x["token_ids"][0].tolist()
    [[2, 4, 5, 3, 0], [2, 4, 7, 3, 0], [2, 7, 8, 3, 0]]
    """

    @classmethod
    def directory_settings(cls, checkpoint):
        """A sentence-transformers directory's packed length (sentence_bert_config.json's `max_seq_length`),
        taken before the directory's own (`ModelDirectory.max_seq_length`)."""
        length = (checkpoint.sentence_config or {}).get("max_seq_length")
        return {} if length is None else {"sequence_length": length}

    @classmethod
    def tokenizer_settings(cls, checkpoint):
        """sentence_bert_config.json's `do_lower_case: true` (the texts lower-cased before the tokenizer) makes
        the tokenizer lower-case."""
        return {"do_lower_case": True} if (checkpoint.sentence_config or {}).get("do_lower_case") else {}

    def columns(self, x):
        """The columns of `x` as lists of str, all of one length: [texts] for a list, the tuple's lists for a
        tuple."""
        if isinstance(x, tuple) and x and not any(isinstance(part, (str, bytes)) for part in x):
            columns = [as_text_list(part, f"x[{i}]") for i, part in enumerate(x)]
        else:
            columns = [as_text_list(x, "x")]
        for i, column in enumerate(columns[1:], start=1):
            if len(column) != len(columns[0]):
                raise UserInputError(f"x[{i}] has {len(column)} texts, x[0] has {len(columns[0])}; the columns "
                                     "must pair up (one text each per example).")
        return columns

    def rows(self, texts):
        """The texts packed as `call` packs them, unpadded, one column each: dict {"token_ids", "segment_ids",
        "padding_mask"} -> N lists of one int32 array, the input of `data.batching.predict_bucketed`."""
        rows = packing.pack_unpadded(self.tokenizer, as_text_list(texts, "texts"), None, self.sequence_length)
        return {key: [[row] for row in values] for key, values in rows.items()}

    def call(self, x, y):
        columns = self.columns(x)
        packed = [self.pack(column) for column in columns]  # K x {name: [B, T]}
        return {key: np.stack([p[key] for p in packed], axis=1) for key in packed[0]}, y  # [B, K, T]
