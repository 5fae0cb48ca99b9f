"""TFBertTokenizer: the in-graph (TensorFlow + tensorflow-text) twin of `bert_tokenizer.BertTokenizer`.

It takes raw `tf.string` text and gives the same ids and the same character offsets as the Python
`BertTokenizer`, inside `tf.function`, `tf.data` and SavedModels. Model code never imports this module.

tensorflow-text's own `BertTokenizer(lower_case=True)` is not used for normalization: its lower-casing
is ICU NFKC case folding, which differs from the original's `str.lower()` + NFD + drop-Mn on about a
third of mixed-script lines (full-width punctuation becomes ASCII, ...), and its cleaning misses the
original's rules for U+0000, U+FFFD, Zs and U+2028/9. Instead every character is normalized through a
table computed once from Python's own `unicodedata` with the very predicates of `tokenization.py`:

    code point -> its normalized text, with spaces around punctuation and CJK ideographs,
                  "" for removed characters, " " for whitespace
                  (with `normalize="nfkc"`: the same of each character of its NFKC form)

(only the ~15k code points that change are stored; CJK ideographs not in the table are spaced by a
range test). A character-by-character normalization equals the word-by-word one of the original
except for context: a capital sigma that ends a word lowers to "ς", which is computed in-graph with
Python's own cased / case-ignorable classes (also tabulated). Words are then split on spaces, and
`tensorflow_text.FastWordpieceTokenizer` (greedy longest-match-first, like the original) gives the
pieces; words longer than 200 characters become `[UNK]`.

Offsets are exact by construction: each normalized byte knows which original character produced it
(cumulative sum of the per-character normalized lengths), so token byte offsets in the normalized text
map back to character (code point) offsets in the original string.

Residual differences from the Python tokenizer (none occur in ordinary text):
    * Canonical reordering of combining marks across two characters (NFD of a whole word vs. of each
      character) can only matter for spacing marks with a nonzero combining class (Mc, e.g. some
      musical symbols); the Python path uses the whole-word NFD.
    * Invalid UTF-8 bytes decode to U+FFFD (removed); the Python API takes `str` only.
    * `split_special_tokens=False` is not supported in-graph ("[CLS]" in text is always plain text).
    * With `normalize="nfkc"`, a character whose NFKC form is a capital sigma follows the final-sigma rule
      of the character itself (none).
"""

import functools
import unicodedata

import numpy as np

from keras_bert_impl.utils.optional_dependencies import require

# Without TensorFlow: one line naming the extra to install, before `import tensorflow` fails.
require("the in-graph tokenizer (tokenizers/tf_bert_tokenizer.py)", "tensorflow")

import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_impl.tokenizers import basic_tokenizer as tokenization
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

_MISSING = "\x00"  # Lookup default: a piece no character maps to (U+0000 maps to "").
_CAPITAL_SIGMA, _FINAL_SIGMA = 0x3A3, "\u03c2"
_IGNORABLE, _CASED = 1, 2  # Classes of the final-sigma rule; 0 is any other character.


def _piece(char, do_lower_case, normalize=None):
    """What the original makes of one character: "" if removed, " " if whitespace, else its normalized
    text with every punctuation character (and a CJK ideograph itself) set apart by spaces. With
    `normalize="nfkc"`, the pieces of the characters of its NFKC form."""
    if normalize == "nfkc":
        return "".join(_piece(c, do_lower_case) for c in tokenization.nfkc_char(char))
    if tokenization._is_removed(char):
        return ""
    if tokenization._is_separator(char):
        return " "
    norm = tokenization.normalize_word(char, do_lower_case)
    inner = "".join(
        " " if c.isspace() else (f" {c} " if tokenization._is_punctuation(c) else c) for c in norm
    )
    return f" {inner} " if tokenization._is_chinese_char(ord(char)) else inner


def _sigma_class(char):
    """Python's own Final_Sigma classes of `char`, read off `str.lower()`: case-ignorable, or cased."""
    if (char + "\u03a3").lower()[-1] == _FINAL_SIGMA:
        return _CASED  # Cased and not case-ignorable.
    if ("A" + char + "\u03a3").lower()[-1] == _FINAL_SIGMA:
        return _IGNORABLE
    return 0


@functools.lru_cache(maxsize=4)
def character_tables(do_lower_case, normalize=None):
    """(keys, values, sigma_classes): code points whose piece differs from the character itself (CJK:
    from the character between spaces), their pieces, and a dense uint8 table of final-sigma classes.

    Computed once per process from Python's `unicodedata` (about a second)."""
    keys, values = [], []
    classes = np.zeros(0x110000, dtype=np.uint8)
    for cp in range(0x110000):
        char = chr(cp)
        if unicodedata.category(char) in ("Cn", "Cs", "Co"):
            continue  # Unassigned, surrogate, private use: kept as they are (spaced when CJK).
        piece = _piece(char, do_lower_case, normalize)
        default = f" {char} " if tokenization._is_chinese_char(cp) else char
        if piece != default:
            keys.append(cp)
            values.append(piece)
        if do_lower_case:
            classes[cp] = _IGNORABLE if tokenization._is_removed(char) else _sigma_class(char)
    return np.array(keys, dtype=np.int32), np.array(values, dtype=object), classes


class TFBertTokenizer(tf.Module):
    """In-graph BERT tokenizer and packer: same ids and offsets as `BertTokenizer`, on `tf.string`.

    Works eagerly, in `tf.function`, in `tf.data.Dataset.map` and in a SavedModel (it is a
    `tf.Module`; its lookup tables are tracked resources), under any Keras backend.

    Args:
        vocab_file: Path of a vocab.txt, or a `BertTokenizer` whose vocabulary and casing to use.
        do_lower_case: Whether to lower-case and strip accents; ignored when `vocab_file` is a
            `BertTokenizer`.
        normalize: None or "nfkc" (`BertTokenizer`'s `normalize`); ignored when `vocab_file` is a
            `BertTokenizer`.
        name: Module name.

    Examples:

    >>> import os, tempfile
    >>> vocab_file = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> with open(vocab_file, "w") as f:
    ...     _ = f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "!", "a", "text"]))
    >>> tokenizer = TFBertTokenizer(vocab_file)
    >>> ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(["Héllo world!"]))
    >>> ids.to_list(), starts.to_list(), ends.to_list()
    ([[4, 5, 6]], [[0, 6, 11]], [[5, 11, 12]])
    >>> batch = tokenizer(tf.constant(["a text"]), tf.constant(["hello"]), max_length=16)
    >>> batch["token_ids"].numpy().tolist()
    [[2, 7, 8, 3, 4, 3]]
    """

    def __init__(self, vocab_file, do_lower_case=True, name=None, normalize=None):
        super().__init__(name=name)
        python = (vocab_file if isinstance(vocab_file, BertTokenizer)
                  else BertTokenizer(vocab_file, do_lower_case, normalize=normalize))
        tokens = python._id_to_token
        if len(set(tokens)) != len(tokens):
            raise ValueError(
                f"Vocabulary file {python.vocab_file!r} has duplicated tokens; the in-graph tokenizer needs "
                "each token once."
            )
        self.vocab_file = python.vocab_file
        self.do_lower_case = python.do_lower_case
        self.normalize = python.normalize
        self.vocab_size = python.vocab_size
        self.cls_token_id = python.cls_token_id
        self.sep_token_id = python.sep_token_id
        self.pad_token_id = python.pad_token_id
        self.unk_token_id = python.unk_token_id
        keys, values, classes = character_tables(self.do_lower_case, self.normalize)
        self._char_table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(keys), tf.constant([v.encode("utf-8") for v in values])),
            default_value=_MISSING,
        )
        self._sigma_classes = tf.constant(classes) if self.do_lower_case else None
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=tokens,
            suffix_indicator="##",
            # Words longer than 200 characters are handled here; 200 characters are at most 800 bytes.
            max_bytes_per_word=4 * tokenization.MAX_INPUT_CHARS_PER_WORD + 4,
            token_out_type=tf.int64,
            unknown_token="[UNK]",
            no_pretokenization=True,
            support_detokenization=False,
        )

    # --- Tokenization ---------------------------------------------------------------------------------

    def _final_sigmas(self, cps, row_splits):
        """Boolean per character (flat): a capital sigma that ends a word, by Python's rule: preceded by
        a cased character and not followed by one, case-ignorable (and removed) characters skipped."""
        n = tf.size(cps, out_type=tf.int64)
        cls = tf.cast(tf.gather(self._sigma_classes, cps), tf.int32)
        cls_padded = tf.concat([cls, [0]], axis=0)  # Index n: "no character".
        non_ign = tf.not_equal(cls, _IGNORABLE)
        positions = tf.concat([[-1], tf.where(non_ign)[:, 0], [n]], axis=0)
        before = tf.cumsum(tf.cast(non_ign, tf.int64), exclusive=True)
        prev_idx = tf.gather(positions, before)
        next_idx = tf.gather(positions, before + tf.cast(non_ign, tf.int64) + 1)
        rows = tf.RaggedTensor.from_row_splits(cps, row_splits, validate=False).value_rowids()
        row_start, row_end = tf.gather(row_splits, rows), tf.gather(row_splits, rows + 1)
        prev_cased = (prev_idx >= row_start) & tf.equal(tf.gather(cls_padded, tf.where(prev_idx < 0, n, prev_idx)), _CASED)
        next_cased = (next_idx < row_end) & tf.equal(tf.gather(cls_padded, next_idx), _CASED)
        return tf.equal(cps, _CAPITAL_SIGMA) & prev_cased & ~next_cased

    @tf.autograph.experimental.do_not_convert
    def tokenize_with_offsets(self, texts):
        """Tokenizes a batch of texts.

        Args:
            texts: A 1-D `tf.string` tensor (or list of str) of UTF-8 texts.

        Returns:
            `(ids, starts, ends)`: int32 `RaggedTensor`s `[batch, (tokens)]`; `starts`/`ends` are
            character (code point) offsets into each original text.
        """
        texts = tf.convert_to_tensor(texts, dtype=tf.string)
        cps_rt = tf.strings.unicode_decode(texts, "UTF-8", errors="replace")
        row_splits = cps_rt.row_splits
        cps = cps_rt.flat_values

        # Per character: its normalized piece.
        chars = tf.strings.unicode_encode(tf.expand_dims(cps, 1), "UTF-8")
        looked_up = self._char_table.lookup(cps)
        is_cjk = tf.zeros_like(cps, dtype=tf.bool)
        for lo, hi in tokenization.CJK_RANGES:
            is_cjk |= (cps >= lo) & (cps <= hi)
        default = tf.where(is_cjk, tf.strings.join([" ", chars, " "]), chars)
        pieces = tf.where(tf.equal(looked_up, _MISSING), default, looked_up)
        if self.do_lower_case:
            pieces = tf.where(self._final_sigmas(cps, row_splits), _FINAL_SIGMA, pieces)
        piece_ends = tf.cumsum(tf.cast(tf.strings.length(pieces), tf.int64))  # In the flat byte stream.
        normalized = tf.strings.reduce_join(tf.RaggedTensor.from_row_splits(pieces, row_splits, validate=False), axis=1)

        # Words, then WordPiece.
        words, word_starts, _ = tf_text.regex_split_with_offsets(normalized, " ", "")
        flat_words = words.flat_values
        wp_ids, wp_starts, wp_ends = self._wordpiece.tokenize_with_offsets(flat_words)
        pieces_per_word = wp_ids.row_lengths()
        too_long = tf.strings.length(flat_words, unit="UTF8_CHAR") > tokenization.MAX_INPUT_CHARS_PER_WORD
        long_rep = tf.repeat(too_long, pieces_per_word)
        keep = ~long_rep | tf.equal(tf.ragged.range(pieces_per_word).flat_values, 0)
        word_bytes = tf.repeat(tf.cast(tf.strings.length(flat_words), tf.int64), pieces_per_word)
        ids = tf.boolean_mask(tf.where(long_rep, tf.cast(self.unk_token_id, tf.int64), wp_ids.flat_values), keep)
        starts = tf.boolean_mask(tf.where(long_rep, tf.zeros_like(word_bytes), wp_starts.flat_values), keep)
        ends = tf.boolean_mask(tf.where(long_rep, word_bytes, wp_ends.flat_values), keep)
        pieces_per_word = tf.where(too_long, tf.ones_like(pieces_per_word), pieces_per_word)

        # Byte offsets in the flat normalized stream -> character offsets in each original text.
        tokens_per_row = tf.reduce_sum(tf.RaggedTensor.from_row_splits(pieces_per_word, words.row_splits, validate=False), axis=1)
        token_rows = tf.repeat(tf.range(tf.size(tokens_per_row, out_type=tf.int64)), tokens_per_row)
        row_bytes = tf.cast(tf.strings.length(normalized), tf.int64)
        row_byte_base = tf.cumsum(row_bytes, exclusive=True)
        base = tf.gather(row_byte_base, token_rows) + tf.repeat(word_starts.flat_values, pieces_per_word)
        char_row_base = tf.gather(row_splits, token_rows)

        def char_at(byte):
            return tf.searchsorted(piece_ends, byte, side="right", out_type=tf.int64) - char_row_base

        char_starts = char_at(base + starts)
        char_ends = char_at(base + ends - 1) + 1

        def to_ragged(values):
            return tf.RaggedTensor.from_row_lengths(tf.cast(values, tf.int32), tokens_per_row, validate=False)

        return to_ragged(ids), to_ragged(char_starts), to_ragged(char_ends)

    def tokenize(self, texts):
        """Token ids of a batch of texts: an int32 `RaggedTensor` `[batch, (tokens)]`."""
        return self.tokenize_with_offsets(texts)[0]

    # --- Packing --------------------------------------------------------------------------------------

    @tf.autograph.experimental.do_not_convert
    def __call__(self, texts, pair_texts=None, max_length=128, padding="longest", return_offsets=False):
        """Tokenizes, truncates and packs like `BertTokenizer.__call__` (truncation always on).

        Args:
            texts: `tf.string` tensor of rank 0 (one text) or 1 (a batch), or `[batch, 1]`.
            pair_texts: Optional second segments, same shape as `texts`.
            max_length: Length of the packed sequence, special tokens included.
            padding: `"longest"` or `"max_length"`.
            return_offsets: Also return `offsets` `[batch, seq, 2]`.

        Returns:
            A dict of int32 tensors `token_ids`, `segment_ids`, `padding_mask` `[batch, seq]` (no batch
            dimension for a rank-0 input) and optionally `offsets`.
        """
        if padding not in ("longest", "max_length"):
            raise ValueError(f"padding must be 'longest' or 'max_length', got {padding!r}.")
        minimum = 3
        if max_length < minimum:
            raise ValueError(f"max_length must be at least {minimum}, got {max_length}.")
        texts, scalar = _as_batch(texts, "texts")
        segments = [self.tokenize_with_offsets(texts)]
        if pair_texts is not None:
            segments.append(self.tokenize_with_offsets(_as_batch(pair_texts, "pair_texts")[0]))
        out = pack(
            segments, max_length, padding, self.cls_token_id, self.sep_token_id, self.pad_token_id, return_offsets
        )
        if scalar:
            out = {k: v[0] for k, v in out.items()}
        return out


    def text_windows(self, texts, max_length):
        """The windows of long texts with this vocabulary's special tokens (`text_windows`)."""
        return text_windows(self.tokenize(_as_batch(texts, "texts")[0]), max_length, self.cls_token_id,
                            self.sep_token_id, self.pad_token_id)

    def doc_stride_windows(self, first, document, max_length, doc_stride):
        """SQuAD's windows of token ids with this vocabulary's special tokens (`doc_stride_windows`)."""
        return doc_stride_windows(first, document, max_length, doc_stride, self.cls_token_id, self.sep_token_id,
                                  self.pad_token_id)


def _as_batch(texts, name):
    texts = tf.convert_to_tensor(texts)
    if texts.dtype != tf.string:
        raise TypeError(f"{name} must be a tf.string tensor, got dtype {texts.dtype.name}.")
    rank = texts.shape.rank
    if rank == 0:
        return tf.expand_dims(texts, 0), True
    if rank == 2 and texts.shape[-1] == 1:
        return tf.squeeze(texts, -1), False
    if rank != 1:
        raise ValueError(f"{name} must have rank 0, 1 or shape [batch, 1], got shape {texts.shape}.")
    return texts, False


def truncated_pair_lengths(len_a, len_b, budget):
    """In-graph `packing.truncated_pair_lengths` (the original `_truncate_seq_pair`)."""
    short = tf.minimum(len_a, len_b)
    fits = len_a + len_b <= budget
    only_longer = 2 * short <= budget
    a_longer = len_a > len_b
    keep_a = tf.where(fits, len_a, tf.where(only_longer, tf.where(a_longer, budget - short, short), (budget + 1) // 2))
    keep_b = tf.where(fits, len_b, tf.where(only_longer, tf.where(a_longer, short, budget - short), budget // 2))
    return keep_a, keep_b


@tf.autograph.experimental.do_not_convert
def pack(segments, max_length, padding, cls_id, sep_id, pad_id, return_offsets=False):
    """Truncates and packs one or two tokenized segments as `[CLS] A [SEP] (B [SEP])`.

    Args:
        segments: One or two `(ids, starts, ends)` tuples of int32 `RaggedTensor`s `[batch, (tokens)]`.
        max_length: Packed length, special tokens included.
        padding: `"longest"` or `"max_length"`.
        cls_id, sep_id, pad_id: Special token ids.
        return_offsets: Also return `offsets`.

    Returns:
        The dict of dense int32 tensors of `TFBertTokenizer.__call__`.
    """
    lengths = [seg[0].row_lengths() for seg in segments]
    keep_single = tf.minimum(lengths[0], max_length - 2)
    if len(segments) == 1:
        keeps = [keep_single]
    else:  # the original: a B without tokens packs A alone, with max_length - 2 room
        keep_a, keep_b = truncated_pair_lengths(lengths[0], lengths[1], tf.constant(max_length - 3, tf.int64))
        keeps = [tf.where(lengths[1] > 0, keep_a, keep_single), keep_b]
    batch = tf.shape(lengths[0], out_type=tf.int64)[0]

    def column(value, present=None):
        """One `value` per row (per row where `present`: B's [SEP] only when tokens of B are left)."""
        row_lengths = tf.ones([batch], tf.int64) if present is None else tf.cast(present, tf.int64)
        return tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(row_lengths)], tf.constant(value, tf.int32)), row_lengths, validate=False
        )

    ids, seg_ids, starts, ends = [column(cls_id)], [column(0)], [column(0)], [column(0)]
    for index, ((seg_token_ids, seg_starts, seg_ends), length, keep) in enumerate(zip(segments, lengths, keeps)):
        mask = tf.ragged.range(length) < tf.expand_dims(keep, 1)
        seg_token_ids = tf.ragged.boolean_mask(seg_token_ids, mask)
        present = keep > 0 if index else None
        ids += [seg_token_ids, column(sep_id, present)]
        seg_ids += [tf.ones_like(seg_token_ids) * index, column(index, present)]
        starts += [tf.ragged.boolean_mask(seg_starts, mask), column(0, present)]
        ends += [tf.ragged.boolean_mask(seg_ends, mask), column(0, present)]
    shape = [None, max_length] if padding == "max_length" else None

    def dense(parts, default=0):
        return tf.concat(parts, axis=1).to_tensor(default_value=default, shape=shape)

    token_ids = dense(ids, pad_id)
    out = {
        "token_ids": token_ids,
        "segment_ids": dense(seg_ids),
        "padding_mask": dense([tf.ones_like(x) for x in ids]),
    }
    if return_offsets:
        out["offsets"] = tf.stack([dense(starts), dense(ends)], axis=-1)
    return out


@tf.autograph.experimental.do_not_convert
def doc_stride_windows(first, document, max_length, doc_stride, cls_id, sep_id, pad_id):
    """In-graph `packing.doc_stride_windows` of a batch: each document cut into SQuAD's windows
    `[CLS] first [SEP] document[start : start + length] [SEP]`, a new one every `doc_stride` tokens, each
    document token flagged in the window that gives it the most context (`packing.check_is_max_context`:
    the first window of the highest min(left, right) + 0.01 * length).

    The windows are those of `packing.doc_spans_for`: window k of a document of n tokens with room for
    M = `max_length` - len(first) - 3 starts at k * min(M, `doc_stride`), holds min(n - start, M) tokens, and
    the last one ends at the document's end. An empty document gets one window without document tokens
    (`packing` gives it none).

    Args:
        first: int32 `RaggedTensor` [batch, (tokens)], ids of the first segment (SQuAD: the question, cut to
            max_query_length); `max_length - len(first) - 3` must be at least 1.
        document: int32 `RaggedTensor` [batch, (tokens)], the document's ids.
        max_length, doc_stride: as `packing.doc_stride_windows`.
        cls_id, sep_id, pad_id: special token ids.

    Returns:
        dict: `token_ids`, `segment_ids`, `padding_mask` int32 [windows, seq] (seq: the longest window);
        `example_index` int32 [windows], the batch row of each window; `doc_start` int32 [windows], the
        document token of the window's first document position `doc_offset` (int32 [windows]);
        `doc_length` int32 [windows]; `max_context` bool [windows, seq], true at the document positions whose
        window gives them the most context.
    """
    first_length = tf.cast(first.row_lengths(), tf.int32)  # [B]
    doc_length = tf.cast(document.row_lengths(), tf.int32)  # [B]
    room = max_length - first_length - 3  # [B], >= 1
    step = tf.minimum(room, doc_stride)
    num_windows = 1 + tf.maximum(0, (doc_length - room + step - 1) // step)  # [B]
    example_index = tf.repeat(tf.range(tf.size(num_windows)), num_windows)  # [W]
    window = tf.ragged.range(num_windows).flat_values  # k: the window's index in its example
    starts = window * tf.gather(step, example_index)  # [W]
    lengths = tf.minimum(tf.gather(doc_length, example_index) - starts, tf.gather(room, example_index))  # [W]

    window_ids = _slices(document, example_index, starts, lengths)
    window_first = tf.gather(first, example_index)
    packed = pack([(window_first,) * 3, (window_ids,) * 3], max_length, "longest", cls_id, sep_id, pad_id)

    # Max context: score[b, v, g] of document token g in window v of example b; its best window is the first
    # of the highest score.
    width = tf.reduce_max(num_windows)
    starts_by_example = tf.RaggedTensor.from_row_lengths(starts, num_windows).to_tensor(default_value=0)  # [B, V]
    lengths_by_example = tf.RaggedTensor.from_row_lengths(lengths, num_windows).to_tensor(default_value=0)
    token = tf.range(tf.maximum(tf.reduce_max(doc_length), 1))[None, None, :]  # [1, 1, N]
    start, length = starts_by_example[:, :, None], lengths_by_example[:, :, None]
    inside = (token >= start) & (token < start + length)
    score = tf.cast(tf.minimum(token - start, start + length - 1 - token), tf.float64) + 0.01 * tf.cast(length,
                                                                                                         tf.float64)
    score = tf.where(inside, score, tf.constant(-1.0, tf.float64))  # [B, V, N]
    best = tf.reduce_max(score, axis=1, keepdims=True)
    candidates = tf.range(width)[None, :, None]
    best_window = tf.reduce_min(tf.where(inside & (score >= best), candidates, width), axis=1)  # [B, N]

    seq = tf.shape(packed["token_ids"])[1]
    doc_offset = tf.cast(tf.gather(first_length, example_index), tf.int32) + 2  # [W]
    offset = tf.range(seq)[None, :] - doc_offset[:, None]  # [W, T]: the document position j of each position
    in_doc = (offset >= 0) & (offset < lengths[:, None])
    token_index = tf.clip_by_value(starts[:, None] + offset, 0, tf.shape(best_window)[1] - 1)
    owner = tf.gather(best_window, example_index)  # [W, N]
    max_context = in_doc & tf.equal(tf.gather(owner, token_index, batch_dims=1), window[:, None])
    return {**packed, "example_index": example_index, "doc_start": starts, "doc_offset": doc_offset,
            "doc_length": lengths, "max_context": max_context}


def _slices(rows, row_index, starts, lengths):
    """`rows[row_index[i]][starts[i] : starts[i] + lengths[i]]` for every i: a `RaggedTensor` [slices, (length)]."""
    positions = tf.ragged.range(starts, starts + lengths)  # [S, (length)]
    row_starts = tf.gather(tf.cast(rows.row_splits[:-1], tf.int32), row_index)
    return positions.with_flat_values(tf.gather(rows.flat_values, positions.flat_values + tf.repeat(row_starts, lengths)))


@tf.autograph.experimental.do_not_convert
def text_windows(ids, max_length, cls_id, sep_id, pad_id):
    """In-graph `packing.pack_windows`: each text's token ids cut into consecutive windows of `max_length - 2`
    tokens, each packed `[CLS] window [SEP]` (a text without tokens: one window `[CLS] [SEP]`).

    Args:
        ids: int32 `RaggedTensor` [batch, (tokens)].
        max_length: the packed length of a window.
        cls_id, sep_id, pad_id: special token ids.

    Returns:
        dict: `token_ids`, `segment_ids`, `padding_mask` int32 [windows, seq]; `example_index` int32 [windows].
    """
    budget = max_length - 2
    lengths = tf.cast(ids.row_lengths(), tf.int32)
    num_windows = tf.maximum(1, (lengths + budget - 1) // budget)
    example_index = tf.repeat(tf.range(tf.size(num_windows)), num_windows)
    starts = tf.ragged.range(num_windows).flat_values * budget
    window_lengths = tf.minimum(tf.gather(lengths, example_index) - starts, budget)
    windows = _slices(ids, example_index, starts, window_lengths)
    return {**pack([(windows,) * 3], max_length, "longest", cls_id, sep_id, pad_id), "example_index": example_index}
