"""SQuAD features: examples -> the model's doc-stride windows and targets, exactly as google-research/bert's
run_squad.py `convert_examples_to_features` builds them.

`convert_examples_to_features`: WordPiece per doc token (`tok_to_orig_index`, `orig_to_tok_index`), the
answer narrowed to the tightest sub-token span matching the tokenized answer (`_improve_answer_span`), the
question truncated to `max_query_length`, and the document cut into `tokenizers.packing.doc_stride_windows`:
overlapping windows of at most `max_seq_length - len(query) - 3` tokens every `doc_stride` tokens, each
token flagged with whether its window gives it the most context, laid out `[CLS] query [SEP] window [SEP]`
with segment ids 0 / 1. Training targets are the answer's token positions in the window, or 0 ([CLS]) when
the answer is not inside the window or the question is impossible. `features_to_arrays` and
`features_to_lists` give the model inputs (and targets) as numpy arrays or unpadded lists.

Examples:

>>> from keras_bert_impl.data.squad_data import squad_example
>>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
>>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "who", "sang", "?", "ann", "."])
>>> example, _ = squad_example("q1", "Who sang?", "Ann sang.", answer_text="Ann", answer_start=0, is_training=True)
>>> features = convert_examples_to_features([example], tokenizer, max_seq_length=16, doc_stride=8,
...                                         max_query_length=8, is_training=True)
>>> features[0].tokens, features[0].start_position, features[0].end_position
(['[CLS]', 'who', 'sang', '?', '[SEP]', 'ann', 'sang', '.', '[SEP]'], 5, 5)
>>> x, y = features_to_arrays(features)
>>> x["token_ids"].shape, y["start_positions"].tolist()
((1, 16), [5])
"""

import dataclasses

import numpy as np

from keras_bert_impl.tokenizers import packing

# The first unique_id of the original (features are numbered from here, in order).
FIRST_UNIQUE_ID = 1000000000


@dataclasses.dataclass
class InputFeature:
    """One `[CLS] query [SEP] doc span [SEP]` window of one example (the original's InputFeatures).

    Attributes:
        unique_id: a number unique over all features (from 1000000000, as in the original).
        example_index: the index of the example in the list of examples.
        doc_span_index: which window of the example's document this is.
        tokens: the WordPiece tokens of the window (no padding).
        token_to_orig_map: {position in `tokens`: doc token index} for the document positions.
        token_is_max_context: {position in `tokens`: whether this window gives that token the most context}.
        input_ids, input_mask, segment_ids: int lists of length max_seq_length (padded with 0).
        start_position, end_position: training targets (0 = [CLS] = no answer in this window), else None.
        is_impossible: the example is impossible (v2.0).
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: list
    token_to_orig_map: dict
    token_is_max_context: dict
    input_ids: list
    input_mask: list
    segment_ids: list
    start_position: int = None
    end_position: int = None
    is_impossible: bool = False


def _improve_answer_span(doc_tokens, input_start, input_end, tokenizer, orig_answer_text):
    """The tightest sub-token span [new_start, new_end] inside [input_start, input_end] whose tokens,
    joined by spaces, equal the tokenized answer; the input span when there is none.

    E.g. context "(1895-1943)." with answer "1895": the doc token "(1895-1943)." is the WordPiece tokens
    "( 1895 - 1943 ) ." and the answer is narrowed from all six to "1895".
    """
    tok_answer_text = " ".join(tokenizer.tokenize(orig_answer_text))
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            text_span = " ".join(doc_tokens[new_start : new_end + 1])
            if text_span == tok_answer_text:
                return new_start, new_end
    return input_start, input_end


def convert_examples_to_features(
    examples, tokenizer, max_seq_length=384, doc_stride=128, max_query_length=64, is_training=False, progress=False
):
    """Turns examples into fixed-length features (the original `convert_examples_to_features`).

    Args:
        examples: `SquadExample`s (`squad_data.read_squad_examples`, `squad_data.squad_example`).
        tokenizer: a `BertTokenizer` (its `do_lower_case` must match the checkpoint).
        max_seq_length: length of every feature, special tokens included.
        doc_stride: tokens between the starts of consecutive document windows.
        max_query_length: the question is cut to this many WordPiece tokens.
        is_training: compute `start_position` / `end_position`.
        progress: show a progress bar (with its ETA) over the examples.

    Returns:
        list of `InputFeature`, in example order, `unique_id` from 1000000000.
    """
    pad_id = tokenizer.pad_token_id
    features = []
    unique_id = FIRST_UNIQUE_ID
    bar = None
    if progress:
        from keras_bert_impl.utils.progress import progress_bar  # Keras, for the bar only: featurizing needs none

        bar = progress_bar(len(examples), unit_name="example")
    for example_index, example in enumerate(examples):
        if bar is not None and example_index % 100 == 0:
            bar.update(example_index)
        query_tokens = tokenizer.tokenize(example.question_text)[:max_query_length]

        tok_to_orig_index = []  # WordPiece index -> doc token index
        orig_to_tok_index = []  # doc token index -> its first WordPiece index
        all_doc_tokens = []
        for i, token in enumerate(example.doc_tokens):
            orig_to_tok_index.append(len(all_doc_tokens))
            for sub_token in tokenizer.tokenize(token):
                tok_to_orig_index.append(i)
                all_doc_tokens.append(sub_token)

        tok_start_position = tok_end_position = None
        if is_training and example.is_impossible:
            tok_start_position = tok_end_position = -1
        if is_training and not example.is_impossible:
            tok_start_position = orig_to_tok_index[example.start_position]
            if example.end_position < len(example.doc_tokens) - 1:
                tok_end_position = orig_to_tok_index[example.end_position + 1] - 1
            else:
                tok_end_position = len(all_doc_tokens) - 1
            tok_start_position, tok_end_position = _improve_answer_span(
                all_doc_tokens, tok_start_position, tok_end_position, tokenizer, example.orig_answer_text
            )

        # The -3 accounts for [CLS], [SEP] and [SEP].
        if max_seq_length - len(query_tokens) - 3 < 1:
            raise ValueError(
                f"question {example.qas_id!r}: max_seq_length={max_seq_length} leaves no room for the document "
                f"after its {len(query_tokens)} query tokens and the 3 special tokens; lower max_query_length."
            )
        windows = packing.doc_stride_windows(query_tokens, all_doc_tokens, max_seq_length, doc_stride)
        for doc_span_index, window in enumerate(windows):
            positions = range(window.doc_offset, window.doc_offset + window.length)  # the window's document tokens
            token_to_orig_map = {p: tok_to_orig_index[window.start + i] for i, p in enumerate(positions)}
            token_is_max_context = dict(zip(positions, window.max_context))
            input_ids = packing.pad(tokenizer.convert_tokens_to_ids(window.tokens), max_seq_length, pad_id)
            input_mask = packing.pad([1] * len(window.tokens), max_seq_length)
            segment_ids = packing.pad(window.segment_ids, max_seq_length)

            start_position = end_position = None
            if is_training and not example.is_impossible:
                # The answer must lie entirely inside this window; otherwise the target is [CLS].
                doc_start = window.start
                doc_end = window.start + window.length - 1
                if tok_start_position >= doc_start and tok_end_position <= doc_end:
                    start_position = tok_start_position - doc_start + window.doc_offset
                    end_position = tok_end_position - doc_start + window.doc_offset
                else:
                    start_position = end_position = 0
            if is_training and example.is_impossible:
                start_position = end_position = 0

            features.append(
                InputFeature(
                    unique_id=unique_id,
                    example_index=example_index,
                    doc_span_index=doc_span_index,
                    tokens=window.tokens,
                    token_to_orig_map=token_to_orig_map,
                    token_is_max_context=token_is_max_context,
                    input_ids=input_ids,
                    input_mask=input_mask,
                    segment_ids=segment_ids,
                    start_position=start_position,
                    end_position=end_position,
                    is_impossible=example.is_impossible,
                )
            )
            unique_id += 1
    if bar is not None:
        bar.update(len(examples), finalize=True)
    return features


def features_to_arrays(features):
    """The model inputs, and the training targets when the features have them, as numpy arrays.

    Returns:
        (x, y): x = {"token_ids", "segment_ids", "padding_mask"} int32 [N, max_seq_length];
        y = {"start_positions", "end_positions"} int32 [N], or None for features without targets.
    """
    x = {
        "token_ids": np.asarray([f.input_ids for f in features], "int32"),  # [N, T]
        "segment_ids": np.asarray([f.segment_ids for f in features], "int32"),  # [N, T]
        "padding_mask": np.asarray([f.input_mask for f in features], "int32"),  # [N, T]
    }
    return x, _span_targets(features)


def _span_targets(features):
    """{"start_positions", "end_positions"} int32 [N], or None when a feature has no target."""
    if not features or any(f.start_position is None for f in features):
        return None
    return {
        "start_positions": np.asarray([f.start_position for f in features], "int32"),  # [N]
        "end_positions": np.asarray([f.end_position for f in features], "int32"),  # [N]
    }


def features_to_lists(features):
    """The model inputs of every feature without its padding (variable-length int lists), for the
    length-bucketing batches of `keras_bert_impl.data.batching` (dynamic padding).

    Returns:
        (x, y): x = {"token_ids", "segment_ids", "padding_mask"}: lists of N int lists; y as in
        `features_to_arrays` (int32 [N] arrays, or None).
    """
    x = {
        "token_ids": [f.input_ids[: len(f.tokens)] for f in features],
        "segment_ids": [f.segment_ids[: len(f.tokens)] for f in features],
        "padding_mask": [f.input_mask[: len(f.tokens)] for f in features],
    }
    return x, _span_targets(features)
