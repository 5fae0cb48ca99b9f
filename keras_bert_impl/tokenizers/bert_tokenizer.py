"""BertTokenizer: the original BERT's WordPiece tokenizer (google-research/bert tokenization.py), with
character offsets, batch encoding and saving.

It tokenizes as the original `FullTokenizer`: the basic rules of `basic_tokenizer` (cleaning, CJK,
whitespace, lower-casing and accents, punctuation), then WordPiece: greedy longest-match-first with `##`
continuations; a word becomes a single `[UNK]` when some part of it has no match or when it is longer
than 200 characters. Its vocabulary comes from `vocabulary` (vocab.txt, tokenizer.json); `__call__`
packs batches through `packing`. With `normalize="nfkc"` (off by default) every character is first replaced
by its NFKC form (full-width forms, ligatures), the offsets still pointing into the original text.

Batch encoding (`__call__`) runs through Hugging Face's `tokenizers` (Rust) where it is installed, configured
to give identical ids and offsets (`fast_wordpiece`, which says when which path runs). The Python path is fast
too: the text is cut into raw words by one compiled regex and every distinct raw word is tokenized once and
cached (word -> pieces and their offsets); a per-character Python loop runs only the first time a word is seen.
"""

import itertools
import json
import operator
import os
import re

import numpy as np

from keras_bert_impl.tokenizers import fast_wordpiece, packing
from keras_bert_impl.tokenizers.basic_tokenizer import (
    ASCII_CONTROL_RE,
    MAX_INPUT_CHARS_PER_WORD,
    _is_removed,
    check_text,
    nfkc_char,
    normalize_char,
    normalize_word,
    split_on_punctuation,
    word_regex,
)
from keras_bert_impl.tokenizers.vocabulary import _checked_token_list, load_vocab, read_tokenizer_json
from keras_bert_impl.utils import model_files
from keras_bert_impl.utils.errors import UserInputError, describe
from keras_bert_impl.utils.file_io import atomic_open
from keras_bert_impl.utils.model_names import resolve_model_path

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# The `normalize` settings: None (the original's tokenization) or "nfkc".
NORMALIZATIONS = (None, "nfkc")
_REQUIRED_TOKENS = ("[UNK]", "[CLS]", "[SEP]")


class _WordCache(dict):
    """raw word -> (tokens, ids, starts, ends); computes missing words, and is cleared when full."""

    def __init__(self, compute, max_size):
        super().__init__()
        self._compute = compute
        self._max_size = max_size

    def __missing__(self, word):
        if len(self) >= self._max_size:
            self.clear()
        value = self[word] = self._compute(word)
        return value


class BertTokenizer:
    """WordPiece tokenizer with the exact rules of the original BERT (google-research/bert).

    Tokenizes like the original `FullTokenizer` (see the module docstring for the rules) and packs
    batches as the original `run_classifier.py` does: `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`,
    truncating a pair by popping from the end of the longer segment (from B on a tie).

    Args:
        vocab_file: Path of a vocab.txt: one token a line, the id of a token is its line number
            (from 0); or the list of tokens itself, in id order. It must contain `[UNK]`, `[CLS]` and
            `[SEP]`; `[PAD]` (else id 0 pads) and `[MASK]` are optional.
        do_lower_case: Whether to lower-case and strip accents (uncased models) or not (cased ones).
        split_special_tokens: If True (default, as in the original), special-token strings such as
            `"[CLS]"` inside the input text are plain text (`"[", "cl", "##s", "]"`). If False, such
            strings in the text become the special token itself.
        cache_size: Number of distinct raw words whose pieces are cached.
        normalize: None (default: the original's tokenization) or "nfkc": every character is first replaced
            by its NFKC form (`basic_tokenizer.nfkc_char`: full-width letters, digits and punctuation become
            ASCII, "ﬁ" becomes "fi", "㍿" the four ideographs of 株式会社), then tokenized by the rules
            above; offsets still point into the original text (a token of an expanded character spans that
            character). Saved in tokenizer_config.json (`"normalize": "nfkc"`).
        fast_path: Batch encoding (`__call__`) through Hugging Face's `tokenizers` where it is installed and
            applies (`fast_wordpiece`; the same ids and offsets): about 1.5x faster on words seen for the first
            time; False keeps the Python path, whose word cache is 3-4x faster on words seen before
            (`benchmarks/results/tokenization/results.md`).

    Examples:

    A vocabulary of a few lines of bert-base-uncased's vocab.txt, which tokenizes these words as the
    whole vocabulary does (the original README's example, "unaffable" -> una ##ffa ##ble):

    >>> import tempfile
    >>> vocab_file = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> with open(vocab_file, "w") as f:
    ...     _ = f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "una", "##ffa", "##ble", ",", "running"]))
    >>> tokenizer = BertTokenizer(vocab_file)
    >>> tokenizer.tokenize("UNaff\\u00E0ble,running")
    ['una', '##ffa', '##ble', ',', 'running']
    >>> batch = tokenizer(["unaffable"], ["running"], max_length=16)
    >>> sorted(batch)
    ['padding_mask', 'segment_ids', 'token_ids']
    >>> batch["token_ids"].tolist(), batch["segment_ids"].tolist()
    ([[2, 4, 5, 6, 3, 8, 3]], [[0, 0, 0, 0, 0, 1, 1]])

    Full-width forms with `normalize="nfkc"`, offsets into the original text:

    >>> tokenizer = BertTokenizer(vocab_file, normalize="nfkc")
    >>> tokenizer.tokenize_with_offsets("ＲＵＮＮＩＮＧ，una")
    (['running', ',', 'una'], [(0, 7), (7, 8), (8, 11)])
    """

    def __init__(self, vocab_file, do_lower_case=True, split_special_tokens=True, cache_size=1_000_000,
                 normalize=None, fast_path=True):
        if normalize not in NORMALIZATIONS:
            raise ValueError(f"BertTokenizer: normalize must be one of {NORMALIZATIONS}, got {normalize!r}.")
        self.do_lower_case = bool(do_lower_case)
        self.split_special_tokens = bool(split_special_tokens)
        self.normalize = normalize
        self.fast_path = bool(fast_path)
        self._cache_size = cache_size
        self._word_re = word_regex()
        self.vocab = None
        if vocab_file is not None:
            self.set_vocabulary(vocab_file)

    def set_vocabulary(self, vocab_file):
        """Sets the vocabulary: a vocab.txt path, or the list of tokens in id order.

        A tokenizer made with `vocab_file=None` has none until this is called (a `.keras` file's task model
        reads its preprocessor's vocabulary from the file's assets this way)."""
        if isinstance(vocab_file, (list, tuple)):
            tokens = _checked_token_list(vocab_file)
            vocab_file = "<vocabulary list>"
        else:
            tokens = load_vocab(vocab_file)
        vocab = {}
        for index, token in enumerate(tokens):
            vocab[token] = index  # Only blank lines ("") repeat (load_vocab refuses other repeats): the last id.
        missing = [t for t in _REQUIRED_TOKENS if t not in vocab]
        if missing:
            raise ValueError(f"Vocabulary file {os.fspath(vocab_file)!r} lacks the required token(s) {missing}.")
        self.vocab_file = os.fspath(vocab_file)
        self.vocab = vocab
        self._id_to_token = tokens
        self.unk_token_id = vocab["[UNK]"]
        self.cls_token_id = vocab["[CLS]"]
        self.sep_token_id = vocab["[SEP]"]
        self.pad_token_id = vocab.get("[PAD]", 0)
        self.mask_token_id = vocab.get("[MASK]")
        self.special_tokens = [t for t in SPECIAL_TOKENS if t in vocab]
        self.special_token_ids = sorted({vocab[t] for t in self.special_tokens})
        self._max_token_chars = max(len(t) for t in vocab)
        self._cache = _WordCache(self._tokenize_raw_word, self._cache_size)
        self._fast = None  # the fast path of __call__ (`fast_wordpiece`), built on first use; False: none
        self._special_re = re.compile("|".join(re.escape(t) for t in self.special_tokens))

    def __getattr__(self, name):
        # Only reached for attributes `set_vocabulary` sets, before it has run.
        if name.startswith("__") or self.__dict__.get("vocab", ...) is not None:
            raise AttributeError(name)
        raise ValueError("This BertTokenizer has no vocabulary yet: call set_vocabulary(vocab_file).")

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        """Loads a tokenizer from a checkpoint directory holding vocab.txt, or tokenizer.json only, or from a
        model name (a Hugging Face hub name or keras-hub preset, `utils.model_names.resolve_model_path`).

        With vocab.txt, `do_lower_case` comes from the directory's tokenizer_config.json where present
        (default True). Without vocab.txt, the directory's tokenizer.json is read
        (`read_tokenizer_json`): a Hugging Face tokenizers file with a WordPiece model (transformers 5
        writes no vocab.txt), or a keras-hub preset's BertTokenizer entry with the preset's
        assets/tokenizer/vocabulary.txt. Keyword arguments override `do_lower_case` and are passed to the
        constructor.

        Args:
            path: A directory with vocab.txt (and optionally tokenizer_config.json), or with tokenizer.json;
                or a model name.
            **kwargs: Constructor arguments (`do_lower_case`, `split_special_tokens`, ...).

        Raises:
            UserInputError: a tokenizer_config.json that is not a JSON object (naming the file); a directory
                with neither vocab.txt nor tokenizer.json.
        """
        path = resolve_model_path(path)
        if not os.path.isdir(path):
            raise ValueError(f"from_pretrained expects a directory holding vocab.txt; {path!r} is not a directory.")
        tokenizer_json = os.path.join(path, model_files.TOKENIZER_JSON_FILE)
        vocab_file = os.path.join(path, model_files.VOCAB_FILE)
        if not os.path.isfile(vocab_file) and os.path.isfile(tokenizer_json):
            tokens, do_lower_case = read_tokenizer_json(tokenizer_json)
            kwargs.setdefault("do_lower_case", do_lower_case)
            return cls(tokens, **kwargs)
        if not os.path.isfile(vocab_file):
            raise UserInputError(f"{path}: no {model_files.VOCAB_FILE} or {model_files.TOKENIZER_JSON_FILE} in this "
                                 "directory; pass the vocabulary file.")
        config = model_files.read_tokenizer_config(path)
        if "do_lower_case" not in kwargs and "do_lower_case" in config:
            kwargs["do_lower_case"] = bool(config["do_lower_case"])
        if "normalize" not in kwargs and config.get("normalize") is not None:
            if config["normalize"] not in NORMALIZATIONS:
                raise UserInputError(f"{os.path.join(path, model_files.TOKENIZER_CONFIG_FILE)}: 'normalize' is "
                                     f"{config['normalize']!r}; expected one of {NORMALIZATIONS}.")
            kwargs["normalize"] = config["normalize"]
        return cls(vocab_file, **kwargs)

    def save_pretrained(self, directory, sequence_length=None):
        """Writes vocab.txt and tokenizer_config.json (do_lower_case, `normalize` when set and, when given,
        the packed `sequence_length` a fine-tuned model uses), each atomically, for `from_pretrained`."""
        os.makedirs(directory, exist_ok=True)
        with atomic_open(os.path.join(directory, model_files.VOCAB_FILE)) as f:
            f.write("".join(token + "\n" for token in self._id_to_token))
        config = {"do_lower_case": self.do_lower_case, "tokenizer_class": "BertTokenizer"}
        if self.normalize is not None:
            config["normalize"] = self.normalize
        if sequence_length is not None:
            config[model_files.SEQUENCE_LENGTH_KEY] = int(sequence_length)
        with atomic_open(os.path.join(directory, model_files.TOKENIZER_CONFIG_FILE)) as f:
            json.dump(config, f, indent=2)

    @property
    def vocabulary(self):
        """The tokens in id order (a copy)."""
        return list(self._id_to_token)

    @property
    def vocab_size(self):
        """Number of ids: lines of the vocabulary file."""
        return len(self._id_to_token)

    # --- Tokenization ---------------------------------------------------------------------------------

    def _wordpiece(self, word):
        """Greedy longest-match-first WordPiece of one word: list of (piece, start, end) in its chars."""
        if len(word) > MAX_INPUT_CHARS_PER_WORD:
            return None
        vocab, pieces, start, n = self.vocab, [], 0, len(word)
        while start < n:
            end = min(n, start + self._max_token_chars)
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in vocab:
                    break
                end -= 1
            else:
                return None
            pieces.append((piece, start, end))
            start = end
        return pieces

    def _tokenize_raw_word(self, raw):
        """Tokenizes one raw word (a run of non-separator characters of the original text, or one CJK
        ideograph), first normalized by `normalize`. Returns (tokens, ids, starts, ends) with character
        offsets relative to `raw`."""
        if self.normalize is None or raw.isascii():
            return self._tokenize_word(raw)
        pieces = [nfkc_char(c) for c in raw]
        text = "".join(pieces)
        if text == raw:
            return self._tokenize_word(raw)
        origin = [i for i, piece in enumerate(pieces) for _ in piece]  # normalized index -> index in `raw`
        tokens, ids, starts, ends = [], [], [], []
        # NFKC may make CJK ideographs ("㍿") or spaces ("¨"): the normalized text's own raw words.
        for match in self._word_re.finditer(text):
            word_tokens, word_ids, word_starts, word_ends = self._tokenize_word(match.group())
            tokens += word_tokens
            ids += word_ids
            starts += [origin[match.start() + start] for start in word_starts]
            ends += [origin[match.start() + end - 1] + 1 for end in word_ends]
        return tuple(tokens), tuple(ids), tuple(starts), tuple(ends)

    def _tokenize_word(self, raw):
        """`_tokenize_raw_word` of a raw word without normalization (the original's rules)."""
        lower = self.do_lower_case
        if raw.isascii() and not ASCII_CONTROL_RE.search(raw):
            norm = raw.lower() if lower else raw
            starts_map = ends_map = None  # Identity: normalized position i is original character i.
        else:
            kept = [(i, c) for i, c in enumerate(raw) if not _is_removed(c)]
            if not kept:
                return (), (), (), ()
            norm = normalize_word("".join(c for _, c in kept), lower)
            per_char = [normalize_char(c, lower) for _, c in kept]
            starts_map, ends_map = [], []
            if sum(map(len, per_char)) == len(norm):
                # Aligned (always, except canonical reordering across characters; a final sigma
                # differs in value only): each normalized character comes from one original one.
                for (i, _), piece in zip(kept, per_char):
                    starts_map.extend([i] * len(piece))
                    ends_map.extend([i + 1] * len(piece))
            else:
                starts_map = [kept[0][0]] * len(norm)
                ends_map = [kept[-1][0] + 1] * len(norm)

        words = split_on_punctuation(norm)  # (word, its start in `norm`)

        tokens, starts, ends = [], [], []
        for word, base in words:
            pieces = self._wordpiece(word)
            if pieces is None:
                pieces = [("[UNK]", 0, len(word))]
            for piece, s, e in pieces:
                tokens.append(piece)
                if starts_map is None:
                    starts.append(base + s)
                    ends.append(base + e)
                else:
                    starts.append(starts_map[base + s])
                    ends.append(ends_map[base + e - 1])
        vocab = self.vocab
        return tuple(tokens), tuple(vocab[t] for t in tokens), tuple(starts), tuple(ends)

    def _segments(self, text):
        """(start, substring) of the text between special tokens, and special tokens themselves as
        (start, None, token); just [(0, text)] when `split_special_tokens`."""
        if self.split_special_tokens or not self.special_tokens:
            return [(0, text, None)]
        parts, last = [], 0
        for m in self._special_re.finditer(text):
            parts.append((last, text[last : m.start()], None))
            parts.append((m.start(), None, m.group()))
            last = m.end()
        parts.append((last, text[last:], None))
        return parts

    def _encode_text(self, text, with_offsets):
        """ids (list) and, if asked, starts and ends (lists) of one text."""
        cache = self._cache.__getitem__
        ids, starts, ends = [], [], []
        for offset, part, special in self._segments(text):
            if special is not None:
                ids.append(self.vocab[special])
                starts.append(offset)
                ends.append(offset + len(special))
                continue
            if not with_offsets:
                ids.extend(itertools.chain.from_iterable(map(operator.itemgetter(1), map(cache, self._word_re.findall(part)))))
                continue
            matches = [(m.start() + offset, m.group()) for m in self._word_re.finditer(part)]
            entries = [cache(w) for _, w in matches]
            counts = [len(e[1]) for e in entries]
            bases = np.repeat(np.array([s for s, _ in matches], dtype=np.int64), counts)
            ids.extend(itertools.chain.from_iterable(e[1] for e in entries))
            starts.extend((bases + np.fromiter(itertools.chain.from_iterable(e[2] for e in entries), np.int64, len(bases))).tolist())
            ends.extend((bases + np.fromiter(itertools.chain.from_iterable(e[3] for e in entries), np.int64, len(bases))).tolist())
        return ids, starts, ends

    def _encode_texts(self, texts, with_offsets):
        """`_encode_text` of each text: through the fast path (`fast_wordpiece`, identical ids and offsets) where
        it is installed and applies, else in Python."""
        if self._fast is None:
            usable = (self.fast_path and self.normalize is None and self.split_special_tokens
                      and fast_wordpiece.available())
            self._fast = fast_wordpiece.FastWordPiece(self.vocab, self.do_lower_case) if usable else False
        if self._fast is False:
            return [self._encode_text(text, with_offsets) for text in texts]
        return [self._encode_text(text, with_offsets) if encoded is None else encoded
                for text, encoded in zip(texts, self._fast.encode_batch(texts, with_offsets))]

    def tokenize(self, text):
        """Tokenizes one text into WordPiece tokens (strings).

        Args:
            text: A `str`.

        Returns:
            A list of tokens, e.g. `["un", "##want", "##ed", ",", "runn", "##ing"]`.
        """
        check_text(text, "text")
        if self.split_special_tokens:
            return list(itertools.chain.from_iterable(map(operator.itemgetter(0), map(self._cache.__getitem__, self._word_re.findall(text)))))
        return self.convert_ids_to_tokens(self._encode_text(text, False)[0])

    def tokenize_with_offsets(self, text):
        """Tokenizes one text; returns (tokens, offsets) with offsets a list of (start, end) character
        (code point) offsets into `text`. An `[UNK]` spans its whole word."""
        check_text(text, "text")
        ids, starts, ends = self._encode_text(text, True)
        return self.convert_ids_to_tokens(ids), list(zip(starts, ends))

    def convert_tokens_to_ids(self, tokens):
        """Ids of `tokens` (a token not in the vocabulary gets the `[UNK]` id)."""
        if isinstance(tokens, str):
            raise TypeError("convert_tokens_to_ids expects a list of tokens, got a str; use tokenize() first.")
        return [self.vocab.get(t, self.unk_token_id) for t in tokens]

    def convert_ids_to_tokens(self, ids):
        """Tokens of `ids` (a list or a 1-D array of ints). Raises `ValueError` for an id out of range."""
        out = []
        for i in np.asarray(ids, dtype=np.int64).reshape(-1).tolist():
            if not 0 <= i < len(self._id_to_token):
                raise ValueError(f"Token id {i} is out of range for a vocabulary of size {self.vocab_size}.")
            out.append(self._id_to_token[i])
        return out

    def decode(self, ids, skip_special_tokens=False):
        """Joins the tokens of `ids` into text: drops `[PAD]`, glues `##` continuations.

        Args:
            ids: A list or 1-D array of ids.
            skip_special_tokens: Also drop `[CLS]`, `[SEP]` and `[MASK]` (`[UNK]` is kept).
        """
        dropped = {"[PAD]"} | ({"[CLS]", "[SEP]", "[MASK]"} if skip_special_tokens else set())
        tokens = [t for t in self.convert_ids_to_tokens(ids) if t not in dropped]
        return " ".join(tokens).replace(" ##", "").strip()

    # --- Batch encoding -------------------------------------------------------------------------------

    def __call__(self, texts, pair_texts=None, max_length=128, padding="longest", truncation=True, return_offsets=False):
        """Encodes a batch of texts (or text pairs) into BERT model inputs.

        Args:
            texts: A `str` (a batch of one) or a sequence of `str`.
            pair_texts: Optional second segments, as many as `texts`.
            max_length: Length of the packed sequence, special tokens included.
            padding: `"longest"` (pad to the longest sequence of the batch) or `"max_length"`.
            truncation: Truncate to `max_length` as the original `_truncate_seq_pair` does. If False,
                nothing is truncated; with `padding="max_length"` a too long sequence is an error.
            return_offsets: Also return `offsets`.

        Returns:
            A dict of int32 numpy arrays: `token_ids`, `segment_ids`, `padding_mask` of shape
            `[batch, seq]` and, with `return_offsets`, `offsets` of shape `[batch, seq, 2]`: the
            (start, end) character offsets of each token in its own text ((0, 0) for special tokens
            and padding).
        """
        texts = as_text_list(texts, "texts")
        pairs = None if pair_texts is None else as_text_list(pair_texts, "pair_texts")
        if pairs is not None and len(pairs) != len(texts):
            raise ValueError(f"pair_texts has {len(pairs)} texts but texts has {len(texts)}; they must match.")
        packing.check_max_length(max_length)
        encoded = self._encode_texts(texts, return_offsets)
        encoded_pairs = [None] * len(texts) if pairs is None else self._encode_texts(pairs, return_offsets)
        segments = list(zip(encoded, encoded_pairs))
        return packing.pack_batch(segments, max_length, self.cls_token_id, self.sep_token_id, self.pad_token_id,
                                  padding=padding, truncation=truncation, return_offsets=return_offsets)


def as_text_list(texts, name):
    """A str (batch of one) or a sequence of str, checked element by element; UTF-8 bytes are decoded (what
    tf.data hands over). The task preprocessors read their text fields with it too. Anything else (None, a
    number, NaN) is a `UserInputError` naming the element, e.g. "x[2] must be a str, got nan (a float)"."""
    if isinstance(texts, bytes):
        texts = texts.decode("utf-8")
    if isinstance(texts, str):
        return [texts]
    if texts is None:
        raise UserInputError(f"{name} is None; expected a str or a sequence of str.")
    if isinstance(texts, np.ndarray):
        texts = texts.reshape(-1).tolist()
    if not isinstance(texts, (list, tuple)):
        raise UserInputError(f"{name} must be a str or a list/tuple of str, got {describe(texts)}.")
    out = []
    for i, text in enumerate(texts):
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        check_text(text, f"{name}[{i}]")
        out.append(text)
    return out
