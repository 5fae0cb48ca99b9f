"""BertSpanQAPreprocessor: questions and contexts (and answers) -> the SQuAD recipe's doc-stride windows (and
each window's answer token span)."""

import keras
import numpy as np

from keras_bert_impl.data.squad_data import squad_example
from keras_bert_impl.data.squad_features import convert_examples_to_features, features_to_arrays
from keras_bert_impl.preprocessors.bert_preprocessor import BertPreprocessor, per_window, split_pair
from keras_bert_impl.preprocessors.input_checks import check_label_ids
from keras_bert_impl.tokenizers.bert_tokenizer import as_text_list
from keras_bert_impl.utils.errors import UserInputError


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertSpanQAPreprocessor(BertPreprocessor):
    """(questions, contexts) -> the windows `[CLS] question [SEP] context window [SEP]` of the SQuAD recipe.

    `x` is a tuple of two lists of str, the questions and their contexts. Each question becomes the windows
    that run_squad.py makes of it (`data.squad_data.squad_example`, then
    `data.squad_features.convert_examples_to_features`, the recipe's own code): the question cut to
    `max_query_length` WordPiece tokens, the context split on whitespace into words (every CJK ideograph a
    word), tokenized word by word and cut into windows of `sequence_length` tokens, a new window every
    `doc_stride` tokens. `fit`,
    `evaluate` and `predict` get one row per window: a long context gives several rows (`predict` returns the
    logits of each window), a context without a token none.

    `y`, for `fit` and `evaluate`, is a tuple `(answer_starts, answer_texts)`: the character offset of each
    answer in its context and its text (SQuAD's `answer_start` and `text`); an empty text means no answer.
    It becomes the dict {`start_positions`, `end_positions`} of int32 [windows], as run_squad.py labels each
    window: the answer's first and last token (narrowed to the tokens of the answer text) when the whole
    answer lies inside the window, else 0 ([CLS], "no answer here"); 0 in every window of a question without
    answer. An answer whose text is not at its offset (run_squad.py's check) is an error. A `sample_weight`
    given per question is repeated for each of its windows.

    `windows(x, y)` returns the recipe's examples and features of the windows, which map each window's
    outputs back to the context: `data.squad_postprocessing.compute_predictions` turns the windows' logits
    into answers.

    `from_pretrained(directory)` takes the `max_seq_length`, `doc_stride` and `max_query_length` the model was
    fine-tuned with (config.json, as run_squad.py writes it).

    Args:
        tokenizer: a `BertTokenizer`, or a directory holding its vocabulary.
        sequence_length: the packed length of a window (default 384, the paper's SQuAD length).
        doc_stride: tokens between the starts of consecutive windows (default 128, the recipe's).
        max_query_length: the question is cut to this many tokens (default 64, the recipe's).

    Examples:

    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "who", "?", "ann", "met", "bob"])
    >>> preprocessor = BertSpanQAPreprocessor(tokenizer, sequence_length=9)
    >>> x, y, _ = preprocessor((["Who?"], ["Ann met Bob"]), ([8], ["Bob"]))
    >>> x["token_ids"].tolist(), y["start_positions"].tolist(), y["end_positions"].tolist()
    ([[2, 4, 5, 3, 6, 7, 8, 3, 0]], [6], [6])

    A context longer than a window gives several, each labelled:

    >>> preprocessor = BertSpanQAPreprocessor(tokenizer, sequence_length=7, doc_stride=1)
    >>> x, y, weights = preprocessor((["Who?"], ["Ann met Bob"]), ([8], ["Bob"]), sample_weight=[0.5])
    >>> x["token_ids"].tolist(), y["start_positions"].tolist(), weights.tolist()
    ([[2, 4, 5, 3, 6, 7, 3], [2, 4, 5, 3, 7, 8, 3]], [0, 5], [0.5, 0.5])
    >>> examples, features = preprocessor.windows((["Who?"], ["Ann met Bob"]))
    >>> [(f.example_index, f.token_to_orig_map, f.token_is_max_context) for f in features]
    [(0, {4: 0, 5: 1}, {4: True, 5: True}), (0, {4: 1, 5: 2}, {4: False, 5: True})]
    """

    default_sequence_length = 384

    def __init__(self, tokenizer, sequence_length=None, doc_stride=128, max_query_length=64, **kwargs):
        super().__init__(tokenizer, sequence_length, **kwargs)
        for name, value in (("doc_stride", doc_stride), ("max_query_length", max_query_length)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"BertSpanQAPreprocessor: {name} must be an int >= 1, got {value!r}.")
        self.doc_stride = int(doc_stride)
        self.max_query_length = int(max_query_length)

    def task_config(self):
        return {"doc_stride": self.doc_stride, "max_query_length": self.max_query_length}

    @classmethod
    def directory_settings(cls, checkpoint):
        """`doc_stride` and `max_query_length` of config.json's "squad" entry (run_squad.py writes them)."""
        squad = checkpoint.setting("squad") or {}
        return {key: int(squad[key]) for key in ("doc_stride", "max_query_length") if squad.get(key) is not None}

    def windows(self, x, y=None):
        """The SQuAD recipe's examples and windows of `x` (and `y`), as `__call__` packs them.

        Returns:
            (examples, features): a `data.squad_data.SquadExample` per question (`qas_id` its index as a
            str; `doc_tokens` the context's words, `doc_token_char_starts` their first characters) and a
            `data.squad_features.InputFeature` per window, in order: its `example_index`, `tokens`,
            `token_to_orig_map` (window position -> context word), `token_is_max_context`, the padded
            inputs and, with `y`, the targets. `data.squad_postprocessing.compute_predictions(examples,
            features, raw_results(features, start_logits, end_logits), ...)` gives the answers.
        """
        questions, contexts = split_pair(x, "x")
        if contexts is None:
            raise UserInputError("BertSpanQAPreprocessor takes x = (questions, contexts), two lists of str.")
        starts, texts = [None] * len(contexts), [""] * len(contexts)
        if y is not None:
            if not (isinstance(y, (tuple, list)) and len(y) == 2):
                raise UserInputError("BertSpanQAPreprocessor takes y = (answer_starts, answer_texts): each answer's "
                                "character offset in its context and its text.")
            starts = check_label_ids(y[0], None, "answer_starts", what="a character offset").reshape(-1).tolist()
            texts = as_text_list(y[1], "answer_texts")
            if not len(starts) == len(texts) == len(contexts):
                raise UserInputError(f"{len(contexts)} contexts but {len(starts)} answer_starts and {len(texts)} "
                                 "answer_texts.")
        examples = []
        for i, (question, context, start, text) in enumerate(zip(questions, contexts, starts, texts)):
            example, reason = squad_example(str(i), question, context, text, start, is_impossible=not text,
                                            is_training=y is not None)
            if reason is not None:
                raise UserInputError(f"y[{i}]: answer_texts[{i}] {text!r} is not at answer_starts[{i}]={start} of its "
                                 f"context ({reason}).")
            examples.append(example)
        features = convert_examples_to_features(examples, self.tokenizer, self.sequence_length, self.doc_stride,
                                                self.max_query_length, is_training=y is not None)
        return examples, features

    def __call__(self, x, y=None, sample_weight=None):
        """Raw questions and contexts (and answers, and per-question sample weights) -> one row per window."""
        examples, features = self.windows(x, y)
        inputs, targets = features_to_arrays(features)
        return inputs, targets, per_window(sample_weight, [f.example_index for f in features], len(examples))

    def call(self, x, y):
        return self(x, y)[:2]
