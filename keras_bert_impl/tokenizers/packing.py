"""The packer: every BERT input sequence of the package is laid out, truncated, padded and windowed here.

The layout is the original's (google-research/bert run_classifier.py, run_squad.py, extract_features.py):
`[CLS] A [SEP]` for one segment and `[CLS] A [SEP] B [SEP]` for two, with segment id 0 up to the first
`[SEP]` and 1 after it; a B without tokens packs one segment. Padding fills token ids with the `[PAD]` id
and segment ids, padding mask and offsets with 0.

- `truncated_lengths`: what the original keeps of A and B at a maximum length: `_truncate_seq_pair`
  (`truncated_pair_lengths`) for a pair, the first `max_length - 2` tokens of A alone.
- `pack`: the layout of two segments (tokens, ids or character offsets alike) and its segment ids;
  `pack_tokens` of WordPiece tokens; `pad` to a length.
- `pack_batch`: tokenized texts (and pairs) -> padded int32 arrays (what `BertTokenizer.__call__` returns);
  `unpadded` and `pack_unpadded` give the rows without padding (featurizers that pad per batch).
- `pack_windows`: a long text as consecutive windows `[CLS] window [SEP]` (text classification's pooled
  windows).
- `doc_stride_windows`: SQuAD's windows of a long document, `[CLS] query [SEP] window [SEP]`, a new one
  every `doc_stride` tokens (`doc_spans_for`), each document token flagged where its window gives it the
  most context (`check_is_max_context`).
- `whole_word_windows` and `document_context`: the NER recipe's windows of whole words, optionally
  filled with the document's surrounding tokens.

The tokenizers' Python modules, every preprocessor, the data featurizers (GLUE, SWAG, SQuAD, CoNLL) and
feature extraction pack through these functions. (Pretraining data, which truncates at random ends, and the
in-graph packer of `tf_bert_tokenizer`, its TensorFlow twin, are the two other places.)

Examples:

>>> pack_tokens(["hi", "there"], ["you"])
(['[CLS]', 'hi', 'there', '[SEP]', 'you', '[SEP]'], [0, 0, 0, 0, 1, 1])
>>> truncated_lengths(7, 4, max_length=8)  # a pair gets max_length - 3, popped from the longer one
(3, 2)
>>> doc_spans_for(num_doc_tokens=10, max_tokens_for_doc=4, doc_stride=3)
[(0, 4), (3, 4), (6, 4)]
"""

import dataclasses

import numpy as np

PADDING_MODES = ("longest", "max_length")


# ------------------------------------------------------------------------------ truncation and layout
def truncated_pair_lengths(len_a, len_b, budget):
    """Lengths the original `_truncate_seq_pair` leaves: it pops one token at a time from the end of
    the longer segment (from B on a tie) until `len_a + len_b <= budget`. Closed form of that loop."""
    if len_a + len_b <= budget:
        return len_a, len_b
    short = min(len_a, len_b)
    if 2 * short <= budget:  # Only the longer one is cut.
        return (budget - short, short) if len_a > len_b else (short, budget - short)
    return (budget + 1) // 2, budget // 2


def truncated_lengths(len_a, len_b, max_length):
    """(kept A, kept B) of a sequence packed to at most `max_length`: with tokens in B, the pair is cut to
    `max_length - 3` as `_truncate_seq_pair`; without (`len_b` 0), A is cut to `max_length - 2`."""
    if len_b:
        return truncated_pair_lengths(len_a, len_b, max_length - 3)
    return min(len_a, max_length - 2), 0


def pack(first, second, cls, sep):
    """`[cls, *first, sep]`, plus `[*second, sep]` when `second` has items, and the segment ids.

    Args:
        first, second: the two segments (lists of tokens, ids or offsets); `second` None or empty: one segment.
        cls, sep: what stands for [CLS] and [SEP] (a token, an id, or the offset (0, 0)).

    Returns:
        (items, segment_ids): two lists of the same length.
    """
    items = [cls, *first, sep]
    segment_ids = [0] * len(items)
    if second:
        items += [*second, sep]
        segment_ids += [1] * (len(second) + 1)
    return items, segment_ids


def pack_tokens(first, second=None):
    """`pack` of WordPiece tokens: `(["[CLS]", *first, "[SEP]", (*second, "[SEP]")], segment_ids)`."""
    return pack(first, second, "[CLS]", "[SEP]")


def pad(values, length, value=0):
    """`values` as a list of `length` items, `value` after them."""
    return list(values) + [value] * (length - len(values))


def cut_rows(tokenizer, texts, pair_texts, lengths, max_length):
    """Yields `(index, tokens)` of each text (with its pair) that packing to `max_length` cut, in order: of the
    rows whose packed `lengths` reach `max_length`, those whose tokens (`tokenizer.tokenize`) do not fit.

    Examples:

    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"])
    >>> texts = ["a b", "a b a b", "a"]
    >>> list(cut_rows(tokenizer, texts, None, tokenizer(texts, max_length=4)["padding_mask"].sum(axis=1), 4))
    [(1, 4)]
    """
    for index, length in enumerate(lengths):
        if length < max_length:
            continue
        tokens = len(tokenizer.tokenize(texts[index]))
        pair = len(tokenizer.tokenize(pair_texts[index])) if pair_texts is not None and pair_texts[index] else 0
        if tokens + pair + (3 if pair else 2) > max_length:
            yield index, tokens + pair


def check_max_length(max_length):
    """Refuses a `max_length` that is not an int of at least 3 ([CLS], a token and [SEP])."""
    if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)):
        raise TypeError(f"max_length must be an int, got {type(max_length).__name__}.")
    if max_length < 3:
        raise ValueError(f"max_length must be at least 3 ([CLS], [SEP] and one token), got {max_length}.")


# ------------------------------------------------------------------------------ batches
def pack_batch(segments, max_length, cls_id, sep_id, pad_id, padding="longest", truncation=True,
               return_offsets=False):
    """Packs tokenized texts (and pairs) into padded int32 arrays.

    Args:
        segments: per example `(a, b)`: `a` the `(ids, starts, ends)` of the first text (starts and ends
            may be empty without `return_offsets`), `b` those of the second text or None.
        max_length: the longest packed length, special tokens included (>= 3).
        cls_id, sep_id, pad_id: the ids of [CLS], [SEP] and [PAD].
        padding: `"longest"` (to the longest sequence of the batch) or `"max_length"`.
        truncation: cut as `truncated_lengths`; if False, nothing is cut, and with `padding="max_length"`
            a sequence longer than `max_length` is an error.
        return_offsets: also return `offsets`.

    Returns:
        dict of int32 arrays: `token_ids`, `segment_ids`, `padding_mask` [batch, seq] and, with
        `return_offsets`, `offsets` [batch, seq, 2] ((0, 0) for special tokens and padding).
    """
    if padding not in PADDING_MODES:
        raise ValueError(f"padding must be one of {PADDING_MODES}, got {padding!r}.")
    check_max_length(max_length)
    rows = []  # (token ids, segment ids, offsets)
    for a, b in segments:
        len_a, len_b = len(a[0]), 0 if b is None else len(b[0])
        keep_a, keep_b = truncated_lengths(len_a, len_b, max_length) if truncation else (len_a, len_b)
        ids, segment_ids = pack(a[0][:keep_a], b[0][:keep_b] if keep_b else None, cls_id, sep_id)
        offsets = None
        if return_offsets:  # (starts, ends), 0 at the special tokens
            offsets = [pack(a[k][:keep_a], b[k][:keep_b] if keep_b else None, 0, 0)[0] for k in (1, 2)]
        rows.append((ids, segment_ids, offsets))
    lengths = [len(ids) for ids, _, _ in rows]
    if padding == "max_length":
        seq_len = max_length
        too_long = [i for i, n in enumerate(lengths) if n > max_length]
        if too_long:
            raise ValueError(
                f"texts[{too_long[0]}] packs to {lengths[too_long[0]]} tokens, more than max_length="
                f"{max_length}, and truncation=False; truncate or use padding='longest'."
            )
    else:
        seq_len = max(lengths, default=2)
    token_ids = np.full((len(rows), seq_len), pad_id, "int32")
    segment_ids = np.zeros((len(rows), seq_len), "int32")
    padding_mask = np.zeros((len(rows), seq_len), "int32")
    offsets = np.zeros((len(rows), seq_len, 2), "int32")
    for i, (row_ids, row_segment_ids, row_offsets) in enumerate(rows):
        token_ids[i, : len(row_ids)] = row_ids
        segment_ids[i, : len(row_ids)] = row_segment_ids
        padding_mask[i, : len(row_ids)] = 1
        if return_offsets:
            offsets[i, : len(row_ids), 0], offsets[i, : len(row_ids), 1] = row_offsets
    out = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
    if return_offsets:
        out["offsets"] = offsets
    return out


def unpadded(batch):
    """The rows of a padded batch (`pack_batch`'s dict) without their padding: dict of lists of int32 arrays."""
    lengths = batch["padding_mask"].sum(axis=1)
    return {key: [row[:n].copy() for row, n in zip(values, lengths)] for key, values in batch.items()}


def pack_unpadded(tokenizer, texts, pair_texts, max_length, chunk_size=4096):
    """`tokenizer(texts, pair_texts, max_length=max_length)` (a `BertTokenizer`), `chunk_size` examples at a
    time, as `unpadded` rows: dict {"token_ids", "segment_ids", "padding_mask"} -> list of N int32 arrays,
    each of its example's own length (the input of `keras_bert_impl.data.batching`)."""
    rows = {"token_ids": [], "segment_ids": [], "padding_mask": []}
    for start in range(0, len(texts), chunk_size):
        pairs = None if pair_texts is None else pair_texts[start : start + chunk_size]
        chunk = unpadded(tokenizer(texts[start : start + chunk_size], pairs, max_length=max_length))
        for key in rows:
            rows[key] += chunk[key]
    return rows


# ------------------------------------------------------------------------------ a long text's windows
def pack_windows(tokenizer, texts, max_length):
    """Every text cut into consecutive windows of `max_length - 2` tokens, each packed `[CLS] window [SEP]`,
    unpadded: the windows of a long text whose outputs are pooled (text classification's `--long_input`).

    A text that fits in `max_length` is one window, packed as `tokenizer(texts, max_length=max_length)`
    packs it; a text without tokens is one window `[CLS] [SEP]`.

    Args:
        tokenizer: a `BertTokenizer`.
        texts: a list of str.
        max_length: the packed length of a window (at least 3).

    Returns:
        (rows, example_index): rows the dict {"token_ids", "segment_ids", "padding_mask"} -> list of int32
        arrays, one per window, in order; example_index int64 [windows], the text of each window.

    Examples:

    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "c"])
    >>> rows, example_index = pack_windows(tokenizer, ["a b c a b", "c"], max_length=4)
    >>> [row.tolist() for row in rows["token_ids"]], example_index.tolist()
    ([[2, 4, 5, 3], [2, 6, 4, 3], [2, 5, 3], [2, 6, 3]], [0, 0, 0, 1])
    """
    check_max_length(max_length)
    budget = max_length - 2
    rows = {"token_ids": [], "segment_ids": [], "padding_mask": []}
    example_index = []
    for index, text in enumerate(texts):
        ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))
        for start, length in doc_spans_for(len(ids), budget, budget) or [(0, 0)]:
            window, segment_ids = pack(ids[start : start + length], None, tokenizer.cls_token_id,
                                       tokenizer.sep_token_id)
            rows["token_ids"].append(np.asarray(window, "int32"))
            rows["segment_ids"].append(np.asarray(segment_ids, "int32"))
            rows["padding_mask"].append(np.ones(len(window), "int32"))
            example_index.append(index)
    return rows, np.asarray(example_index, "int64")


# ------------------------------------------------------------------------------ SQuAD's doc-stride windows
def doc_spans_for(num_doc_tokens, max_tokens_for_doc, doc_stride):
    """The original run_squad.py's sliding windows: list of (start, length), a new window every
    `doc_stride` tokens (or sooner when a window is shorter), the last one ending at the end of the document."""
    doc_spans = []
    start_offset = 0
    while start_offset < num_doc_tokens:
        length = min(num_doc_tokens - start_offset, max_tokens_for_doc)
        doc_spans.append((start_offset, length))
        if start_offset + length == num_doc_tokens:
            break
        start_offset += min(length, doc_stride)
    return doc_spans


def check_is_max_context(doc_spans, cur_span_index, position):
    """Whether the span `cur_span_index` is the one giving the document token at `position` the most context.

    A token's score in a span is min(left context, right context) + 0.01 * span length; the first span
    with the highest score wins (the original's `_check_is_max_context`).
    """
    best_score = None
    best_span_index = None
    for span_index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        num_left_context = position - start
        num_right_context = end - position
        score = min(num_left_context, num_right_context) + 0.01 * length
        if best_score is None or score > best_score:
            best_score = score
            best_span_index = span_index
    return cur_span_index == best_span_index


@dataclasses.dataclass
class DocWindow:
    """One `[CLS] first [SEP] document[start : start + length] [SEP]` window of `doc_stride_windows`.

    Attributes:
        start, length: the document tokens it holds.
        tokens, segment_ids: the packed window (no padding).
        doc_offset: the position in `tokens` of document token `start`.
        max_context: per document token of the window, whether this window gives it the most context.
    """

    start: int
    length: int
    tokens: list
    segment_ids: list
    doc_offset: int
    max_context: list


def doc_stride_windows(first, document, max_length, doc_stride):
    """The windows of a document that does not fit beside `first` (SQuAD: the question) in `max_length`.

    Each window holds at most `max_length - len(first) - 3` document tokens; they start every `doc_stride`
    tokens (`doc_spans_for`), and each document token is flagged where its window gives it the most context
    (`check_is_max_context`). An empty document gives no window.

    Examples:

    >>> windows = doc_stride_windows(["q"], list("abcdefg"), max_length=8, doc_stride=2)
    >>> [(w.start, w.tokens[w.doc_offset:-1], w.max_context) for w in windows]
    [(0, ['a', 'b', 'c', 'd'], [True, True, True, False]), (2, ['c', 'd', 'e', 'f'], [False, True, True, False]), (4, ['e', 'f', 'g'], [False, True, True])]
    """
    max_tokens_for_doc = max_length - len(first) - 3
    if max_tokens_for_doc < 1:
        raise ValueError(f"max_length={max_length} leaves no room for a document after {len(first)} tokens and "
                         "the 3 special tokens.")
    doc_spans = doc_spans_for(len(document), max_tokens_for_doc, doc_stride)
    windows = []
    for index, (start, length) in enumerate(doc_spans):
        tokens, segment_ids = pack_tokens(first, document[start : start + length])
        max_context = [check_is_max_context(doc_spans, index, start + i) for i in range(length)]
        windows.append(DocWindow(start, length, tokens, segment_ids, len(first) + 2, max_context))
    return windows


# ------------------------------------------------------------------------------ NER's whole-word windows
def whole_word_windows(word_lengths, budget):
    """Greedy windows `[(first_word, end_word))` of whole words with at most `budget` sub-tokens each (a word
    longer than `budget` counts as `budget`: its caller keeps only that many of its sub-tokens).

    Examples:

    >>> whole_word_windows([2, 1, 3, 2], budget=4)
    [(0, 2), (2, 3), (3, 4)]
    """
    spans = []
    start, used = 0, 0
    for i, length in enumerate(word_lengths):
        length = min(length, budget)
        if i > start and used + length > budget:
            spans.append((start, i))
            start, used = i, 0
        used += length
    if word_lengths:
        spans.append((start, len(word_lengths)))
    return spans


def document_context(span_start, span_end, stream_length, budget):
    """(left, right): how many sub-tokens of its document to put before and after the window
    `[span_start, span_end)` of a stream of `stream_length`, filling `budget`: as many on the left as on
    the right, the unused share of one side going to the other.

    Examples:

    >>> document_context(span_start=1, span_end=3, stream_length=10, budget=6)
    (1, 3)
    """
    room = budget - (span_end - span_start)
    left = min(span_start, room // 2)
    right = min(stream_length - span_end, room - left)
    left = min(span_start, room - right)  # give the right side's unused share to the left
    return left, right
