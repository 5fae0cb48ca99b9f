"""CoNLL NER features: word sequences -> the model's windows of whole words, and predictions back to words.

Every word is WordPiece-tokenized on its own; its label id sits on its first sub-token, every other
position gets -100 (see `keras_bert_impl.models.token_classifier`). A window is `[CLS] tokens [SEP]` of at
most `max_seq_length` positions. It predicts one "centre span": a sentence, or -- when a sentence has more
than `max_seq_length - 2` sub-tokens -- a piece of consecutive whole words of it
(`tokenizers.packing.whole_word_windows`; long sentences are split, never cut: EVERY word gets a
prediction). A single word longer than the budget keeps its first `max_seq_length - 2` sub-tokens (its
label is on the first). With `use_document_context=True` the rest of the window is filled with the
sub-tokens that surround the centre span in its document ("we include the maximal document context";
`tokenizers.packing.document_context`): as many on the left as on the right, the unused share of one side
going to the other; context tokens carry label -100 and are never predicted.

`convert_sentences_to_features` builds the windows of the NER recipe's `ConllSentence`s (tags -> label ids);
`words_to_features` those of any word sequences with label ids, which `BertTokenClassifierPreprocessor`
builds for raw text. `predictions_to_word_tags` maps the windows' predictions back to one tag per word.
"""

import dataclasses

import numpy as np

from keras_bert_impl.data.tag_schemes import from_bio, to_bio
from keras_bert_impl.tokenizers import packing
from keras_bert_impl.utils.errors import UserInputError

IGNORE_LABEL_ID = -100


@dataclasses.dataclass
class NerFeature:
    """One model window.

    Attributes:
        sentence_index: index of the sentence whose words it predicts.
        word_indices: indices (in that sentence) of the words it predicts.
        token_positions: position in the window of each such word's first sub-token.
        token_ids, segment_ids, padding_mask: int32 [max_seq_length] model inputs.
        label_ids: int32 [max_seq_length]: the BIO label id at `token_positions` (-100 for a label outside the
            label list, see `convert_sentences_to_features`), -100 elsewhere.
        label_mask: int32 [max_seq_length]: 1 at `token_positions`, 0 elsewhere.
        tokens: the window's WordPiece tokens (without padding), for inspection.
    """

    sentence_index: int
    word_indices: list
    token_positions: list
    token_ids: np.ndarray
    segment_ids: np.ndarray
    padding_mask: np.ndarray
    label_ids: np.ndarray
    label_mask: np.ndarray
    tokens: list


def word_pieces(tokenizer, word):
    """The WordPiece tokens of one word; `["[UNK]"]` for a word that normalizes to nothing."""
    pieces = tokenizer.tokenize(word)
    # A word that normalizes to nothing (e.g. only control characters) still needs a position.
    return pieces if pieces else ["[UNK]"]



def convert_sentences_to_features(sentences, tokenizer, label_list, max_seq_length, use_document_context=False,
                                  strict=True):
    """WordPiece-tokenizes the sentences and builds the model windows (see the module docstring).

    Args:
        sentences: list of `ConllSentence` (labels in any scheme; they are converted to BIO, `tag_schemes.to_bio`).
        tokenizer: a `BertTokenizer`.
        label_list: the BIO label list (e.g. from `build_label_list`).
        max_seq_length: window length, [CLS] and [SEP] included (>= 3).
        use_document_context: fill each window with the surrounding sub-tokens of the document.
        strict: a label not in `label_list` is a `UserInputError`; when False its word gets label id -100
            (nothing to train on) and is still predicted and scored (a fine-tuned model's fixed label list
            evaluated on data with other labels).

    Returns:
        list of `NerFeature`, in sentence order (one or more per sentence).

    Examples:

    >>> from keras_bert_impl.data.conll_data import ConllSentence, build_label_list
    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "peter", "black", "##burn"])
    >>> sentences = [ConllSentence(["Peter", "Blackburn"], ["I-PER", "I-PER"], 0, [1, 2])]
    >>> labels = build_label_list(sentences)
    >>> features = convert_sentences_to_features(sentences, tokenizer, labels, 64)
    >>> features[0].tokens, features[0].label_ids[:5].tolist()
    (['[CLS]', 'peter', 'black', '##burn', '[SEP]'], [-100, 1, 2, -100, -100])
    """
    _check_max_seq_length(max_seq_length)
    label_to_id = {label: i for i, label in enumerate(label_list)}
    label_ids = []  # per sentence, the label id of each word
    for sentence in sentences:
        label_ids.append([])
        for w, label in enumerate(to_bio(sentence.labels)):
            if label not in label_to_id and strict:
                raise UserInputError(f"{sentence.where(w)}: unknown label {sentence.labels[w]!r}; the labels are "
                                     f"{', '.join(label_list)}.")
            label_ids[-1].append(label_to_id.get(label, IGNORE_LABEL_ID))
    return words_to_features([s.words for s in sentences], tokenizer, max_seq_length, label_ids,
                             [(s.path, s.document) for s in sentences], use_document_context)


def words_to_features(word_sequences, tokenizer, max_seq_length, label_ids=None, documents=None,
                      use_document_context=False):
    """The windows of word sequences (see the module docstring), each word's label id at its first sub-token.

    Args:
        word_sequences: list of sentences, each a list of words.
        tokenizer: a `BertTokenizer`.
        max_seq_length: window length, [CLS] and [SEP] included (>= 3).
        label_ids: per sentence, the label id of each word (-100: none), or None (every label -100).
        documents: per sentence, the key of its document (the sentences of one key, in order, are its
            stream of sub-tokens), or None (each sentence alone).
        use_document_context: fill each window with the surrounding sub-tokens of the document.

    Returns:
        list of `NerFeature`, in sentence order (one or more per sentence with words, none for one without).

    Examples:

    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "peter", "black", "##burn", "ran"])
    >>> features = words_to_features([["Peter", "Blackburn", "ran"]], tokenizer, 5, [[1, 2, 0]])
    >>> [(f.tokens, f.word_indices, f.label_ids.tolist()) for f in features]
    [(['[CLS]', 'peter', 'black', '##burn', '[SEP]'], [0, 1], [-100, 1, 2, -100, -100]), (['[CLS]', 'ran', '[SEP]'], [2], [-100, 0, -100, -100, -100])]
    """
    _check_max_seq_length(max_seq_length)
    budget = max_seq_length - 2
    # Every sentence's pieces, grouped into its document's flat sub-token stream.
    sentence_pieces = [[word_pieces(tokenizer, w)[:budget] for w in words] for words in word_sequences]
    documents = range(len(word_sequences)) if documents is None else documents
    streams = {}  # document key -> the sub-tokens of its sentences
    stream_of = []  # per sentence: (its document's stream, its offset in it)
    for index, document in enumerate(documents):
        stream = streams.setdefault(document, [])
        stream_of.append((stream, len(stream)))
        stream.extend(p for pieces in sentence_pieces[index] for p in pieces)

    features = []
    for index, pieces in enumerate(sentence_pieces):
        word_starts = np.cumsum([0] + [len(p) for p in pieces]).tolist()  # offset of each word in the sentence
        stream, sentence_offset = stream_of[index]
        for first_word, end_word in packing.whole_word_windows([len(p) for p in pieces], budget):
            span_start = sentence_offset + word_starts[first_word]  # [span_start, span_end) in the stream
            span_end = sentence_offset + word_starts[end_word]
            left = right = 0
            if use_document_context:
                left, right = packing.document_context(span_start, span_end, len(stream), budget)
            tokens, segment_ids = packing.pack_tokens(stream[span_start - left : span_end + right])
            word_indices = list(range(first_word, end_word))
            positions = [1 + left + word_starts[w] - word_starts[first_word] for w in word_indices]  # 1: [CLS]
            labels = np.full(max_seq_length, IGNORE_LABEL_ID, "int32")
            if label_ids is not None:
                labels[positions] = [label_ids[index][w] for w in word_indices]
            features.append(
                NerFeature(
                    sentence_index=index,
                    word_indices=word_indices,
                    token_positions=positions,
                    token_ids=np.asarray(packing.pad(tokenizer.convert_tokens_to_ids(tokens), max_seq_length,
                                                     tokenizer.pad_token_id), "int32"),
                    segment_ids=np.asarray(packing.pad(segment_ids, max_seq_length), "int32"),
                    padding_mask=np.asarray(packing.pad([1] * len(tokens), max_seq_length), "int32"),
                    label_ids=labels,
                    label_mask=_mask(positions, max_seq_length),
                    tokens=tokens,
                )
            )
    return features


def _check_max_seq_length(max_seq_length):
    if max_seq_length < 3:
        raise UserInputError(f"max_seq_length must be >= 3 (room for [CLS], a token and [SEP]); got {max_seq_length}.")


def _mask(positions, length):
    mask = np.zeros(length, "int32")
    mask[positions] = 1
    return mask


def features_to_arrays(features, pad_to_multiple_of=16):
    """Stacks features into `(x, labels, label_mask)` numpy arrays.

    The sequence axis is cut to the longest window of the set, rounded up to `pad_to_multiple_of`
    (never beyond the features' length): short sentences without document context then cost a
    fraction of `max_seq_length`, while the whole set keeps ONE shape (one compilation on JAX/TF).

    Args:
        features: list of `NerFeature`.
        pad_to_multiple_of: rounding of the sequence length (None: keep `max_seq_length`).

    Returns:
        `(x, labels, label_mask)`: x the dict {token_ids, segment_ids, padding_mask} of int32 [N, T],
        labels int32 [N, T] (-100 = ignored), label_mask int32 [N, T].
    """
    padding_mask = np.stack([f.padding_mask for f in features])
    length = padding_mask.shape[1]
    if pad_to_multiple_of:
        longest = int(padding_mask.sum(1).max()) if len(features) else 1
        length = min(length, -(-longest // pad_to_multiple_of) * pad_to_multiple_of)
    x = {
        "token_ids": np.stack([f.token_ids for f in features])[:, :length],
        "segment_ids": np.stack([f.segment_ids for f in features])[:, :length],
        "padding_mask": padding_mask[:, :length],
    }
    labels = np.stack([f.label_ids for f in features])[:, :length]
    label_mask = np.stack([f.label_mask for f in features])[:, :length]
    return x, labels, label_mask


def features_to_lists(features):
    """Unpadded per-example lists, the input of `keras_bert_impl.data.batching` (dynamic padding, bucketing).

    Returns:
        `(x, labels, label_mask)`: x the dict {token_ids, segment_ids, padding_mask} of N int lists (each
        as long as its window's real tokens), labels and label_mask lists of N int lists.
    """
    x = {"token_ids": [], "segment_ids": [], "padding_mask": []}
    labels, label_mask = [], []
    for f in features:
        n = int(f.padding_mask.sum())
        x["token_ids"].append(f.token_ids[:n].tolist())
        x["segment_ids"].append(f.segment_ids[:n].tolist())
        x["padding_mask"].append(f.padding_mask[:n].tolist())
        labels.append(f.label_ids[:n].tolist())
        label_mask.append(f.label_mask[:n].tolist())
    return x, labels, label_mask



# --------------------------------------------------------------------------------- back to the words
def word_predictions(features, predicted_ids, word_counts):
    """Each word's predicted label id: the prediction at its first sub-token, in the window that predicts it
    (every word is predicted by exactly one window: long sentences are split, not cut).

    Args:
        features: the `NerFeature`s the predictions are for.
        predicted_ids: per feature, the predicted label id of every position (an int array [N, T'] or a
            list of N rows of any length covering the feature's real tokens).
        word_counts: the number of words of every sentence the features were built from.

    Returns:
        list (one per sentence) of lists (one per word) of int label ids, None for a word no window predicts.

    Examples:

    >>> feature = NerFeature(0, [0, 1], [1, 3], None, None, None, None, None, None)
    >>> word_predictions([feature], [[-100, 4, -100, 2]], [3])
    [[4, 2, None]]
    """
    ids = [[None] * count for count in word_counts]
    for feature, row in zip(features, predicted_ids):
        for word, position in zip(feature.word_indices, feature.token_positions):
            ids[feature.sentence_index][word] = int(row[position])
    return ids


def predictions_to_word_tags(features, predicted_ids, sentences, label_list, scheme="bio"):
    """Maps token-level predictions back to one tag per word, in the file's tagging scheme.

    Each word takes the prediction at its first sub-token, in the window that predicts it
    (`word_predictions`); a word that nevertheless received no prediction would be tagged "O".

    Args:
        features: the `NerFeature`s the predictions are for.
        predicted_ids: per feature, the predicted label id of every position (an int array [N, T'] or a
            list of N rows of any length covering the feature's real tokens).
        sentences: the `ConllSentence`s the features were built from.
        label_list: the BIO label list.
        scheme: "bio", "iob1", "bioes" or "bmes": the scheme of the returned tags (`tag_schemes.from_bio`).

    Returns:
        list (one per sentence) of lists of tag strings (one per word).
    """
    ids = word_predictions(features, predicted_ids, [len(s.words) for s in sentences])
    tags = [["O" if i is None else label_list[i] for i in row] for row in ids]
    return [from_bio(t, scheme) for t in tags]
