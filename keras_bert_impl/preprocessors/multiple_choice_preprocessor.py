"""BertMultipleChoicePreprocessor: a context and its candidate endings -> one packed sequence per choice."""

import keras
import numpy as np

from keras_bert_impl.data.swag_data import pack_choices
from keras_bert_impl.preprocessors.bert_preprocessor import BertPreprocessor
from keras_bert_impl.tokenizers.bert_tokenizer import as_text_list
from keras_bert_impl.utils.errors import UserInputError


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertMultipleChoicePreprocessor(BertPreprocessor):
    """(contexts, endings) -> `[CLS] context [SEP] ending_c [SEP]` for each choice c: int32 [batch, choices, seq].

    `x` is a tuple `(contexts, endings)`: `contexts` a list of str, `endings` a list of as many lists of
    `num_choices` str (SWAG: the start of the ending and each candidate, joined by a space). Each choice is
    packed as a text pair, truncated as the original `_truncate_seq_pair` (`tokenizers.packing`, as the SWAG
    recipe's `data.swag_data.encode_swag_examples`). Labels (the right choice's index) pass through unchanged.

    Args:
        tokenizer: a `BertTokenizer`, or a directory holding its vocabulary.
        sequence_length: the packed length of each choice (default 128).

    Examples:

    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "he", "ran", "sat", "sang"])
    >>> preprocessor = BertMultipleChoicePreprocessor(tokenizer, sequence_length=5)
    >>> x, y, _ = preprocessor((["He"], [["ran", "sat", "sang"]]), [0])
    >>> x["token_ids"].shape
    (1, 3, 5)
    >>> x["token_ids"][0].tolist()
    [[2, 4, 3, 5, 3], [2, 4, 3, 6, 3], [2, 4, 3, 7, 3]]
    """

    def _choices(self, x):
        """(contexts, endings) of `x`, checked: N str and N lists of C str."""
        if not (isinstance(x, (tuple, list)) and len(x) == 2):
            raise UserInputError("BertMultipleChoicePreprocessor takes x = (contexts, endings): a list of contexts and, "
                            "for each, a list of its candidate endings.")
        contexts = as_text_list(x[0], "contexts")
        endings = x[1].tolist() if isinstance(x[1], np.ndarray) else list(x[1])
        if len(endings) != len(contexts):
            raise UserInputError(f"{len(contexts)} contexts but {len(endings)} lists of endings; one list per context.")
        rows = [as_text_list(choices, f"endings[{i}]") for i, choices in enumerate(endings)]
        num_choices = len(rows[0]) if rows else 0
        for i, choices in enumerate(rows):
            if len(choices) != num_choices:
                raise UserInputError(f"endings[{i}] has {len(choices)} choices, endings[0] has {num_choices}; "
                                 "every example needs the same number.")
        return contexts, rows

    def choices(self, x):
        """Every choice of `x` packed as `call` packs it, unpadded (the SWAG recipe's `data.swag_data.pack_choices`):
        dict {"token_ids", "segment_ids", "padding_mask"} -> N lists of C int32 arrays, the input of
        `data.batching.predict_bucketed`."""
        contexts, rows = self._choices(x)
        return pack_choices(self.tokenizer, contexts, rows, self.sequence_length)

    def call(self, x, y):
        contexts, rows = self._choices(x)
        num_choices = len(rows[0]) if rows else 0
        flat = self.pack([c for c, choices in zip(contexts, rows) for _ in choices],
                         [e for choices in rows for e in choices])  # [B * C, T]
        return {k: v.reshape(len(rows), num_choices, -1) for k, v in flat.items()}, y
