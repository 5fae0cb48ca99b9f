"""BertTokenClassifierPreprocessor: words and their labels -> packed sub-tokens with the labels at each
word's first sub-token, for `BertTokenClassifier` and `BertFeatureBasedTagger`."""

import warnings

import keras
import numpy as np

from keras_bert_impl.data.conll_data import IGNORE_LABEL_ID, word_pieces
from keras_bert_impl.preprocessors.bert_preprocessor import BertPreprocessor
from keras_bert_impl.tokenizers.bert_tokenizer import as_text_list


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertTokenClassifierPreprocessor(BertPreprocessor):
    """Sentences of words -> `[CLS] pieces [SEP]`, each word's label at its first piece and -100 elsewhere.

    `x` is a list of sentences, each a str (split on whitespace into words, as CoNLL files are) or a list
    of words. `y` holds each sentence's word labels (int ids): a list of lists, or an int array
    [batch, words] padded with -100. The labels come back as int32 [batch, sequence_length], -100 at the
    other pieces, [CLS], [SEP] and padding: the positions the task's loss and accuracy leave out.

    Each sentence gives one row: the words whose pieces do not fit into `sequence_length - 2` are left
    out, with a warning that counts them (the NER recipe instead splits a long sentence into several
    windows, `data.conll_data.convert_sentences_to_features`, so that every word is predicted).

    Args:
        tokenizer: a `BertTokenizer`, or a directory holding its vocabulary.
        sequence_length: the packed length (default 128).

    Examples:

    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "peter", "black", "##burn", "ran"])
    >>> preprocessor = BertTokenClassifierPreprocessor(tokenizer, sequence_length=7)
    >>> x, y, _ = preprocessor(["Peter Blackburn ran"], [[1, 2, 0]])
    >>> x["token_ids"].tolist(), y.tolist()
    ([[2, 4, 5, 6, 7, 3, 0]], [[-100, 1, 2, -100, 0, -100, -100]])
    >>> preprocessor.word_positions(["Peter Blackburn ran"])
    [[1, 2, 4]]
    """

    def _words(self, x):
        """`x` as a list of sentences, each a list of words."""
        if isinstance(x, (str, bytes)):
            x = [x]
        if isinstance(x, np.ndarray):
            x = x.tolist()
        if not isinstance(x, (list, tuple)):
            raise TypeError(f"x must be a list of sentences (str or lists of words), got {type(x).__name__}.")
        sentences = []
        for i, sentence in enumerate(x):
            if isinstance(sentence, bytes):
                sentence = sentence.decode("utf-8")
            sentences.append(sentence.split() if isinstance(sentence, str) else as_text_list(sentence, f"x[{i}]"))
        return sentences

    def _pack_words(self, x):
        """(inputs, first-piece position of each kept word per sentence, number of words per sentence)."""
        sentences = self._words(x)
        budget = self.sequence_length - 2
        length = self.sequence_length
        token_ids = np.full((len(sentences), length), self.tokenizer.pad_token_id, "int32")
        padding_mask = np.zeros((len(sentences), length), "int32")
        positions = []
        for i, words in enumerate(sentences):
            pieces, starts = [], []
            for word in words:
                word_tokens = word_pieces(self.tokenizer, word)
                if len(pieces) + len(word_tokens) > budget:
                    break
                starts.append(1 + len(pieces))  # 1: after [CLS]
                pieces += word_tokens
            ids = [self.tokenizer.cls_token_id, *self.tokenizer.convert_tokens_to_ids(pieces), self.tokenizer.sep_token_id]
            token_ids[i, : len(ids)] = ids
            padding_mask[i, : len(ids)] = 1
            positions.append(starts)
        x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": padding_mask}
        return x, positions, [len(words) for words in sentences]

    def word_positions(self, x):
        """For each sentence of `x`, the position of each word's first piece (the row of its logits)."""
        return self._pack_words(x)[1]

    def call(self, x, y):
        inputs, positions, num_words = self._pack_words(x)
        if y is None:
            return inputs, None
        rows = y.tolist() if isinstance(y, np.ndarray) else [list(np.asarray(row).reshape(-1)) for row in y]
        if len(rows) != len(positions):
            raise ValueError(f"y has labels for {len(rows)} sentences, x has {len(positions)}.")
        labels = np.full(inputs["token_ids"].shape, IGNORE_LABEL_ID, "int32")
        dropped = 0
        for i, (row, starts) in enumerate(zip(rows, positions)):
            row = [int(label) for label in row]
            while len(row) > num_words[i] and row[-1] == IGNORE_LABEL_ID:  # padding of a [batch, words] array
                row.pop()
            if len(row) != num_words[i]:
                raise ValueError(f"y[{i}] has {len(row)} labels, x[{i}] has {num_words[i]} words; one label a word.")
            labels[i, starts] = row[: len(starts)]
            dropped += sum(label != IGNORE_LABEL_ID for label in row[len(starts):])
        if dropped:
            warnings.warn(f"{dropped} labelled word(s) do not fit into sequence_length={self.sequence_length} and are "
                          "left out of training; raise sequence_length to keep them.", stacklevel=3)
        return inputs, labels
