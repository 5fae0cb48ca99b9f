"""BertTokenClassifierPreprocessor: words and their labels -> the NER recipe's windows of whole words, with the
labels at each word's first sub-token, for `BertTokenClassifier` and `BertFeatureBasedTagger`."""

import keras
import numpy as np

from keras_bert_impl.data.conll_features import IGNORE_LABEL_ID, features_to_arrays, words_to_features
from keras_bert_impl.preprocessors.bert_preprocessor import BertPreprocessor, per_window
from keras_bert_impl.tokenizers.basic_tokenizer import split_words
from keras_bert_impl.tokenizers.bert_tokenizer import as_text_list
from keras_bert_impl.utils.errors import UserInputError


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertTokenClassifierPreprocessor(BertPreprocessor):
    """Sentences of words -> `[CLS] pieces [SEP]` windows, each word's label at its first piece and -100 elsewhere.

    `x` is a list of sentences, each a str or a list of words. A str is split on whitespace into words, as
    CoNLL files are, and every CJK ideograph is a word of its own, as the NER SavedModel splits it
    (`tokenizers.basic_tokenizer.split_words`: unspaced Chinese is one word a character). `y` holds each
    sentence's word labels (int ids, -100 for a word without one): a list of lists, or an int array
    [batch, words] padded with -100. The labels come back as int32 [windows, sequence_length],
    -100 at the other pieces, [CLS], [SEP] and padding: the positions the task's loss and accuracy leave out.

    The windows are the NER recipe's (`data.conll_features.words_to_features`, which its
    `convert_sentences_to_features` runs; no document context): a sentence whose pieces fit into
    `sequence_length - 2` is one window, a longer one is split into windows of consecutive whole words, so
    that every word is predicted once (a single word longer than a window keeps its first pieces). `fit`,
    `evaluate` and `predict` get one row per window; a `sample_weight` given per sentence is repeated for
    each of its windows. `windows(x)` tells which sentence and which words each row predicts.

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
    >>> [(w.sentence_index, w.word_indices, w.token_positions) for w in preprocessor.windows(["Peter Blackburn ran"])]
    [(0, [0, 1, 2], [1, 2, 4])]

    A sentence longer than a window gives several:

    >>> preprocessor = BertTokenClassifierPreprocessor(tokenizer, sequence_length=5)
    >>> x, y, _ = preprocessor(["Peter Blackburn ran"], [[1, 2, 0]])
    >>> x["token_ids"].tolist(), y.tolist()
    ([[2, 4, 5, 6, 3], [2, 7, 3, 0, 0]], [[-100, 1, 2, -100, -100], [-100, 0, -100, -100, -100]])
    >>> [(w.sentence_index, w.word_indices, w.token_positions) for w in preprocessor.windows(["Peter Blackburn ran"])]
    [(0, [0, 1], [1, 2]), (0, [2], [1])]

    Unspaced Chinese is one word a character:

    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "周", "杰", "在", "广", "州"])
    >>> preprocessor = BertTokenClassifierPreprocessor(tokenizer, sequence_length=8)
    >>> x, y, _ = preprocessor(["周杰在广州"], [[1, 2, 0, 3, 4]])
    >>> x["token_ids"].tolist(), y.tolist()
    ([[2, 4, 5, 6, 7, 8, 3, 0]], [[-100, 1, 2, 0, 3, 4, -100, -100]])
    """

    def _words(self, x):
        """`x` as a list of sentences, each a list of words."""
        if isinstance(x, (str, bytes)):
            x = [x]
        if isinstance(x, np.ndarray):
            x = x.tolist()
        if not isinstance(x, (list, tuple)):
            raise UserInputError(f"x must be a list of sentences (str or lists of words), got {type(x).__name__}.")
        sentences = []
        for i, sentence in enumerate(x):
            words = as_text_list(sentence, f"x[{i}]")
            sentences.append(split_words(words[0]) if isinstance(sentence, (str, bytes)) else words)
        return sentences

    def _word_labels(self, y, sentences):
        """Each sentence's word labels (a list of ints), checked against its number of words."""
        rows = y.tolist() if isinstance(y, np.ndarray) else [list(np.asarray(row).reshape(-1)) for row in y]
        if len(rows) != len(sentences):
            raise UserInputError(f"y has labels for {len(rows)} sentences, x has {len(sentences)}.")
        labels = []
        for i, (row, words) in enumerate(zip(rows, sentences)):
            row = [int(label) for label in row]
            while len(row) > len(words) and row[-1] == IGNORE_LABEL_ID:  # padding of a [batch, words] array
                row.pop()
            if len(row) != len(words):
                raise UserInputError(f"y[{i}] has {len(row)} labels, x[{i}] has {len(words)} words; one label a word.")
            labels.append(row)
        return labels

    def windows(self, x, y=None):
        """The windows of the sentences of `x` (with `y`, their labels), in order, as `__call__` packs them.

        Returns:
            list of `data.conll_features.NerFeature`: each window's `sentence_index`, the `word_indices` it
            predicts and their `token_positions` (the rows of their logits), its padded inputs and labels.
        """
        return self._windows(self._words(x), y)

    def _windows(self, sentences, y):
        labels = None if y is None else self._word_labels(y, sentences)
        return words_to_features(sentences, self.tokenizer, self.sequence_length, labels)

    def __call__(self, x, y=None, sample_weight=None):
        """Raw sentences (and word labels, and per-sentence sample weights) -> one row per window."""
        sentences = self._words(x)
        features = self._windows(sentences, y)
        inputs, labels, _ = features_to_arrays(features, pad_to_multiple_of=None)
        weights = per_window(sample_weight, [f.sentence_index for f in features], len(sentences))
        return inputs, (None if y is None else labels), weights

    def call(self, x, y):
        return self(x, y)[:2]
