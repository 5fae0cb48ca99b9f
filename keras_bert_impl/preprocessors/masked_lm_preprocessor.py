"""BertMaskedLMPreprocessor: texts or sentence pairs -> masked inputs and the masked-LM and NSP targets,
for `BertPretrainer`."""

import random

import keras
import numpy as np

from keras_bert_impl.data.masked_lm_predictions import check_masking_split, create_masked_lm_predictions
from keras_bert_impl.preprocessors.bert_preprocessor import BertPreprocessor, split_pair
from keras_bert_impl.preprocessors.input_checks import check_label_ids


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertMaskedLMPreprocessor(BertPreprocessor):
    """Texts or (A, B) sentence pairs -> `[CLS] A [SEP] (B [SEP])` with the original's masking applied.

    `x` is a list of str, or a tuple of two lists of str (sentence A and sentence B of each example).
    Each packed sequence is masked by the original `create_masked_lm_predictions` (`masked_lm_prob` of
    its tokens, at most `max_predictions_per_seq`; each chosen word becomes [MASK] 80% of the time, a
    random token 10%, itself 10%, or the split of `mask_token_prob` / `random_token_prob` /
    `keep_token_prob`), drawn from a `random.Random(seed)` that advances with every call: each
    call masks anew (dynamic masking when `fit` reads a dataset batch by batch; arrays given to `fit` are
    preprocessed, and so masked, once).

    `y` holds the next-sentence labels (0: B follows A, 1: B is random); with them the targets are the dict
    {`masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`} that `BertPretrainer` trains on.
    The inputs gain `masked_lm_positions`, int32 [batch, max_predictions_per_seq].

    Args:
        tokenizer: a `BertTokenizer` with a [MASK] token, or a directory holding its vocabulary.
        sequence_length: the packed length (default 128).
        masked_lm_prob: fraction of the tokens to predict (0.15).
        max_predictions_per_seq: predictions per sequence (20, the original's for length 128).
        do_whole_word_mask: mask all the pieces of a word together.
        seed: seed of the masking.
        mask_token_prob: probability that a chosen word becomes [MASK] (0.8; paper Table 8's MASK).
        keep_token_prob: probability that it stays itself (0.1; SAME).
        random_token_prob: probability that it becomes a random vocabulary token (0.1; RND). The three
            sum to 1.

    Examples:

    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "down"])
    >>> preprocessor = BertMaskedLMPreprocessor(tokenizer, sequence_length=8, max_predictions_per_seq=2)
    >>> x, y, _ = preprocessor((["the cat"], ["sat down"]), [0])
    >>> sorted(x)
    ['masked_lm_positions', 'padding_mask', 'segment_ids', 'token_ids']
    >>> y["masked_lm_weights"].tolist(), y["next_sentence_labels"].tolist()
    ([[1.0, 0.0]], [0])
    """

    def __init__(self, tokenizer, sequence_length=None, masked_lm_prob=0.15, max_predictions_per_seq=20,
                 do_whole_word_mask=False, seed=0, mask_token_prob=0.8, keep_token_prob=0.1,
                 random_token_prob=0.1, **kwargs):
        super().__init__(tokenizer, sequence_length, **kwargs)
        if not 0.0 < masked_lm_prob <= 1.0:
            raise ValueError(f"masked_lm_prob must be in (0, 1], got {masked_lm_prob}.")
        if int(max_predictions_per_seq) < 1:
            raise ValueError(f"max_predictions_per_seq must be >= 1, got {max_predictions_per_seq}.")
        check_masking_split(mask_token_prob, keep_token_prob, random_token_prob)
        self.masked_lm_prob = float(masked_lm_prob)
        self.mask_token_prob = float(mask_token_prob)
        self.keep_token_prob = float(keep_token_prob)
        self.random_token_prob = float(random_token_prob)
        self.max_predictions_per_seq = int(max_predictions_per_seq)
        self.do_whole_word_mask = bool(do_whole_word_mask)
        self.seed = int(seed)
        self._rng = random.Random(self.seed)

    def check_tokenizer(self):
        if self.tokenizer.mask_token_id is None:
            raise ValueError("BertMaskedLMPreprocessor: the vocabulary has no [MASK] token.")

    def task_config(self):
        return {"masked_lm_prob": self.masked_lm_prob, "max_predictions_per_seq": self.max_predictions_per_seq,
                "do_whole_word_mask": self.do_whole_word_mask, "seed": self.seed,
                "mask_token_prob": self.mask_token_prob, "keep_token_prob": self.keep_token_prob,
                "random_token_prob": self.random_token_prob}

    def call(self, x, y):
        first, second = split_pair(x, "x")
        packed = self.pack(first, second)
        batch, predictions = len(first), self.max_predictions_per_seq
        positions = np.zeros((batch, predictions), "int32")
        masked_ids = np.zeros((batch, predictions), "int32")
        weights = np.zeros((batch, predictions), "float32")
        vocabulary = self.tokenizer.vocabulary
        for i in range(batch):
            length = int(packed["padding_mask"][i].sum())
            tokens = self.tokenizer.convert_ids_to_tokens(packed["token_ids"][i, :length].tolist())
            masked_tokens, masked_positions, labels = create_masked_lm_predictions(
                tokens, self.masked_lm_prob, predictions, vocabulary, self._rng, self.do_whole_word_mask,
                self.mask_token_prob, self.keep_token_prob, self.random_token_prob)
            packed["token_ids"][i, :length] = self.tokenizer.convert_tokens_to_ids(masked_tokens)
            n = len(masked_positions)
            positions[i, :n] = masked_positions
            masked_ids[i, :n] = self.tokenizer.convert_tokens_to_ids(labels)
            weights[i, :n] = 1.0
        packed["masked_lm_positions"] = positions
        if y is None:
            return packed, None
        next_sentence_labels = check_label_ids(y, 2, what="a next-sentence label (1: B is random)").reshape(-1)
        if len(next_sentence_labels) != batch:
            raise ValueError(f"y has {len(next_sentence_labels)} next-sentence labels, x has {batch} examples.")
        return packed, {"masked_lm_ids": masked_ids, "masked_lm_weights": weights,
                        "next_sentence_labels": next_sentence_labels}
