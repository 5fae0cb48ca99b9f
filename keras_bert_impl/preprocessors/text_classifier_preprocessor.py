"""BertTextClassifierPreprocessor: texts or text pairs -> packed token ids, for `BertClassifier`."""

import keras

from keras_bert_impl.preprocessors.bert_preprocessor import BertPreprocessor, split_pair


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertTextClassifierPreprocessor(BertPreprocessor):
    """Texts (or pairs of texts) -> `[CLS] A [SEP] (B [SEP])`, as the original run_classifier.py packs them.

    `x` is a list of str (one text per example) or a tuple of two lists of str (sentence pairs, e.g. MNLI's
    premise and hypothesis). A pair is truncated by popping from the longer text, as the original's
    `_truncate_seq_pair`. The packing is the GLUE recipe's (`tokenizers.packing`, as
    `data.glue_data.encode_examples`). Labels pass through unchanged.

    Args:
        tokenizer: a `BertTokenizer`, or a directory holding its vocabulary.
        sequence_length: the packed length (default 128, the paper's GLUE length).

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
    """

    def call(self, x, y):
        texts, pair_texts = split_pair(x, "x")
        return self.pack(texts, pair_texts), y
