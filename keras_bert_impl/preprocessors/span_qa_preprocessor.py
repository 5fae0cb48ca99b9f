"""BertSpanQAPreprocessor: questions and contexts (and answers) -> packed token ids (and answer token spans)."""

import keras
import numpy as np

from keras_bert_impl.preprocessors.bert_preprocessor import BertPreprocessor, as_int_array, split_pair
from keras_bert_impl.tokenizers.bert_tokenizer import as_text_list


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertSpanQAPreprocessor(BertPreprocessor):
    """(questions, contexts) -> `[CLS] question [SEP] context [SEP]`; answers -> their first and last token.

    `x` is a tuple of two lists of str, the questions and their contexts; each pair is truncated as the
    original `_truncate_seq_pair` (a long context loses its end). `y`, for `fit` and `evaluate`, is a tuple
    `(answer_starts, answer_texts)`: the character offset of each answer in its context and its text (SQuAD's
    `answer_start` and `text`); an empty text means no answer. It becomes the dict {`start_positions`,
    `end_positions`} of int32 [batch]: the first and last context token overlapping the answer, or 0 ([CLS],
    "no answer here") when the text is empty or the answer was truncated away, as the original run_squad.py
    labels a feature without the answer. An answer whose text is not at its offset is an error.

    One row per question: a context longer than `sequence_length` is cut, not split into the strided
    windows of the SQuAD recipe (`data.squad_data.convert_examples_to_features`).

    Args:
        tokenizer: a `BertTokenizer`, or a directory holding its vocabulary.
        sequence_length: the packed length (default 384, the paper's SQuAD length).

    Examples:

    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "who", "?", "ann", "met", "bob"])
    >>> preprocessor = BertSpanQAPreprocessor(tokenizer, sequence_length=9)
    >>> x, y, _ = preprocessor((["Who?"], ["Ann met Bob"]), ([8], ["Bob"]))
    >>> x["token_ids"].tolist(), y["start_positions"].tolist(), y["end_positions"].tolist()
    ([[2, 4, 5, 3, 6, 7, 8, 3, 0]], [6], [6])
    """

    default_sequence_length = 384

    def call(self, x, y):
        questions, contexts = split_pair(x, "x")
        if contexts is None:
            raise TypeError("BertSpanQAPreprocessor takes x = (questions, contexts), two lists of str.")
        packed = self.pack(questions, contexts, return_offsets=True)
        offsets = packed.pop("offsets")  # [B, T, 2]
        if y is None:
            return packed, None
        if not (isinstance(y, (tuple, list)) and len(y) == 2):
            raise TypeError("BertSpanQAPreprocessor takes y = (answer_starts, answer_texts): each answer's character "
                            "offset in its context and its text.")
        starts, texts = as_int_array(y[0], "answer_starts").reshape(-1), as_text_list(y[1], "answer_texts")
        if not len(starts) == len(texts) == len(contexts):
            raise ValueError(f"{len(contexts)} contexts but {len(starts)} answer_starts and {len(texts)} answer_texts.")
        start_positions = np.zeros(len(contexts), "int32")
        end_positions = np.zeros(len(contexts), "int32")
        for i, (context, start, text) in enumerate(zip(contexts, starts, texts)):
            if not text:
                continue
            if context[start : start + len(text)] != text:
                raise ValueError(f"y[{i}]: answer_texts[{i}] {text!r} is not at answer_starts[{i}]={start} of its "
                                 f"context (found {context[start:start + len(text)]!r}).")
            in_context = np.flatnonzero((packed["segment_ids"][i] == 1) & (packed["padding_mask"][i] == 1))[:-1]
            token_starts, token_ends = offsets[i, in_context, 0], offsets[i, in_context, 1]
            if len(in_context) == 0 or token_ends[-1] < start + len(text):
                continue  # the answer was truncated away: labelled "no answer" ([CLS])
            start_positions[i] = in_context[np.argmax(token_ends > start)]
            end_positions[i] = in_context[np.flatnonzero(token_starts < start + len(text))[-1]]
        return packed, {"start_positions": start_positions, "end_positions": end_positions}
