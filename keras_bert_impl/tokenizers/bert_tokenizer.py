"""BertTokenizer: WordPiece tokenization with the exact rules of google-research/bert tokenization.py.

The text is processed as the original does it:

1. Clean: drop U+0000, U+FFFD and control characters (categories Cc and Cf, except tab, newline and
   carriage return); tab, newline, carriage return and category Zs are whitespace.
2. Put every CJK ideograph (the original's code-point ranges) in its own word.
3. Split on whitespace (Python's `str.split`, so U+2028 and U+2029 also separate words).
4. Per word, when `do_lower_case`: `str.lower()`, then NFD and drop the nonspacing marks (Mn).
5. Split off every punctuation character (ASCII 33-47, 58-64, 91-96, 123-126 and categories P*).
6. WordPiece: greedy longest-match-first with `##` continuations; a word becomes a single `[UNK]` when
   some part of it has no match or when it is longer than 200 characters.

Batch encoding is fast because the text is cut into raw words by one compiled regex and every distinct
raw word is tokenized once and cached (word -> pieces and their offsets); a per-character Python loop
runs only the first time a word is seen.
"""

import functools
import itertools
import json
import operator
import os
import re
import unicodedata
import warnings

import numpy as np

from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import atomic_open

MAX_INPUT_CHARS_PER_WORD = 200
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_REQUIRED_TOKENS = ("[UNK]", "[CLS]", "[SEP]")
_PADDING_MODES = ("longest", "max_length")

# The CJK Unified Ideographs blocks, as listed by the original `_is_chinese_char`.
CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


# --- The normalization rules, one predicate each (as in the original) --------------------------------


def _is_whitespace(char):
    """Whether `char` is whitespace for the cleaning step: tab, newline, carriage return or Zs."""
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    """Whether `char` is a control character (Cc or Cf), tab, newline and carriage return excepted."""
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char):
    """Whether `char` is punctuation: every non-alphanumeric ASCII symbol, and Unicode categories P*."""
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp):
    """Whether the code point `cp` is a CJK ideograph (one of `CJK_RANGES`)."""
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def _is_removed(char):
    """Whether cleaning deletes `char`: U+0000, U+FFFD and control characters."""
    return char in ("\x00", "\ufffd") or _is_control(char)


def _is_separator(char):
    """Whether `char` separates words: cleaning whitespace, or what `str.split` splits on (U+2028...)."""
    return not _is_removed(char) and (_is_whitespace(char) or char.isspace())


def _strip_accents(text):
    """NFD, then drop the nonspacing marks (category Mn)."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def normalize_word(word, do_lower_case):
    """Normalizes one cleaned word as the original does: lower-case and strip accents, or nothing."""
    return _strip_accents(word.lower()) if do_lower_case else word


@functools.lru_cache(maxsize=65536)
def normalize_char(char, do_lower_case):
    """Normalizes one character alone (`normalize_word` of it); used to map offsets back to the text.

    Lower-casing alone differs from lower-casing in context only for a final capital sigma ("Σ" at the
    end of a word lowers to "ς", alone to "σ"); callers handle that case.
    """
    return normalize_word(char, do_lower_case)


def _char_class(chars):
    """A regex character class (without brackets) of the given characters."""
    return "".join(re.escape(c) for c in chars)


def _cjk_class():
    return "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in CJK_RANGES)


@functools.lru_cache(maxsize=None)
def _word_regex():
    """Compiled regex whose matches are the raw words of a text: runs of non-separator, non-CJK
    characters, and single CJK ideographs. Removed (control) characters stay inside the raw words."""
    # Every separator is in the Basic Multilingual Plane (Zs, tab/newline/CR, U+2028, U+2029).
    separators = [chr(cp) for cp in range(0x10000) if _is_separator(chr(cp))]
    sep, cjk = _char_class(separators), _cjk_class()
    return re.compile(f"[^{sep}{cjk}]+|[{cjk}]")


# ASCII punctuation split for the fast path: a run of non-punctuation, or one punctuation character.
_ASCII_PUNCT = "".join(chr(cp) for cp in range(128) if _is_punctuation(chr(cp)))
_ASCII_SPLIT_RE = re.compile(f"[^{re.escape(_ASCII_PUNCT)}]+|[{re.escape(_ASCII_PUNCT)}]")
_ASCII_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def _split_on_punctuation(text):
    """Splits a normalized word: every punctuation character alone; whitespace separates."""
    if text.isascii():
        return _ASCII_SPLIT_RE.findall(text)
    out, begin = [], None
    for i, c in enumerate(text):
        if c.isspace() or _is_punctuation(c):
            if begin is not None:
                out.append(text[begin:i])
                begin = None
            if not c.isspace():
                out.append(c)
        elif begin is None:
            begin = i
    if begin is not None:
        out.append(text[begin:])
    return out


@functools.lru_cache(maxsize=262144)
def _basic_tokenize_raw_word(raw, do_lower_case):
    cleaned = "".join(c for c in raw if not _is_removed(c)) if not raw.isascii() or _ASCII_CONTROL_RE.search(raw) else raw
    return tuple(_split_on_punctuation(normalize_word(cleaned, do_lower_case)))


def basic_tokenize(text, do_lower_case=True):
    """The original `BasicTokenizer.tokenize`: clean, split CJK, whitespace and punctuation, and
    lower-case + strip accents when `do_lower_case`. Returns the list of words (before WordPiece)."""
    _check_text(text, "text")
    return list(itertools.chain.from_iterable(_basic_tokenize_raw_word(w, do_lower_case) for w in _word_regex().findall(text)))


def load_vocab(vocab_file):
    """Reads a vocab.txt (one token a line, ids by line number) into an ordered list of tokens.

    Like the original, each line is stripped of surrounding whitespace, and a blank line is the token ""
    at its id (kept with a warning naming the file and line: it shifts no id, but no text maps to it).
    Raises `ValueError` for a missing or empty file, and `UserInputError` (a ValueError) naming the file
    and line for bytes that are not UTF-8 and for a token that repeats an earlier line (the original
    would silently map it to its last id, leaving the earlier id unused).

    Examples:

    >>> import tempfile
    >>> vocab_file = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> with open(vocab_file, "w") as f:
    ...     _ = f.write("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\nrun\\n##ning\\nrun\\n")
    >>> try:
    ...     load_vocab(vocab_file)
    ... except ValueError as error:
    ...     print(os.path.basename(str(error)))
    vocab.txt:7: the token 'run' repeats line 5; expected each token once (its line number is its id).
    """
    if not isinstance(vocab_file, (str, os.PathLike)):
        raise TypeError(f"vocab_file must be a path (str or os.PathLike), got {type(vocab_file).__name__}.")
    vocab_file = os.fspath(vocab_file)
    if not os.path.isfile(vocab_file):
        raise ValueError(f"Vocabulary file not found: {vocab_file!r}.")
    with open(vocab_file, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if not lines or not any(line.strip() for line in lines):
        raise ValueError(f"Vocabulary file {vocab_file!r} is empty.")
    tokens, first_line, blank_lines = [], {}, []
    for number, line in enumerate(lines, start=1):
        try:
            token = line.decode("utf-8").strip()
        except UnicodeDecodeError as e:
            raise UserInputError(
                f"{vocab_file}:{number}: the bytes {line[e.start:e.end]!r} of line {number} are not valid UTF-8 "
                f"({e.reason})."
            ) from None
        if not token:
            blank_lines.append(number)
        elif token in first_line:
            raise UserInputError(f"{vocab_file}:{number}: the token {token!r} repeats line {first_line[token]}; "
                                 "expected each token once (its line number is its id).")
        first_line.setdefault(token, number)
        tokens.append(token)
    if blank_lines:
        warnings.warn(f"{vocab_file}:{blank_lines[0]}: blank line ({len(blank_lines)} in all); kept as the token "
                      "'' so that the ids of the lines below stay their line numbers, as the original "
                      "load_vocab does, but no text maps to it.", stacklevel=2)
    return tokens


def _checked_token_list(tokens):
    """A vocabulary given as a list of tokens (id = index), checked as `load_vocab` checks a file."""
    first = {}
    for index, token in enumerate(tokens):
        if not isinstance(token, str):
            raise TypeError(f"vocabulary[{index}] must be a str, got {type(token).__name__}.")
        if token and token in first:
            raise ValueError(f"vocabulary[{index}]: the token {token!r} repeats vocabulary[{first[token]}]; "
                             "expected each token once (its index is its id).")
        first.setdefault(token, index)
    if not tokens:
        raise ValueError("The vocabulary list is empty.")
    return list(tokens)


def _bert_normalizer(normalizer):
    """The BertNormalizer entry of a tokenizer.json normalizer (possibly inside a Sequence), or None."""
    if not isinstance(normalizer, dict):
        return None
    if normalizer.get("type") == "BertNormalizer":
        return normalizer
    if normalizer.get("type") == "Sequence":
        for entry in normalizer.get("normalizers") or []:
            found = _bert_normalizer(entry)
            if found is not None:
                return found
    return None


def _warn_accents(path, lowercase, strip_accents):
    if strip_accents is not None and bool(strip_accents) != bool(lowercase):
        warnings.warn(
            f"{path}: lowercase={bool(lowercase)} with strip_accents={bool(strip_accents)}; this tokenizer's "
            f"do_lower_case={bool(lowercase)} {'strips' if lowercase else 'keeps'} accents, so accented text may "
            "tokenize differently.",
            stacklevel=4,
        )


def _read_keras_hub_tokenizer(path, values):
    """(tokens, do_lower_case) of a keras-hub preset's tokenizer.json and assets/tokenizer/vocabulary.txt."""
    if values["class_name"] != "BertTokenizer":
        raise UserInputError(
            f"{path}: a keras-hub {values['class_name']}, not BertTokenizer; expected a WordPiece BERT tokenizer."
        )
    config = values["config"]
    vocabulary = config.get("vocabulary")
    if not isinstance(vocabulary, list):
        vocabulary = os.path.join(os.path.dirname(path), "assets", "tokenizer", "vocabulary.txt")
        if not os.path.isfile(vocabulary):
            raise UserInputError(f"{path}: a keras-hub BertTokenizer whose vocabulary file {vocabulary} is missing.")
        vocabulary = load_vocab(vocabulary)
    lowercase = bool(config.get("lowercase", False))
    _warn_accents(path, lowercase, config.get("strip_accents", False))
    return vocabulary, lowercase


def read_tokenizer_json(path):
    """(tokens in id order, do_lower_case) of a tokenizer.json.

    Reads a Hugging Face tokenizers file whose `model` is WordPiece (`model.vocab`: token -> id;
    lower-casing from its `BertNormalizer`, possibly inside a `Sequence`; no BertNormalizer: no
    lower-casing), or a keras-hub preset's serialized BertTokenizer (`config.lowercase`, with the
    vocabulary in the preset's assets/tokenizer/vocabulary.txt). A normalizer whose `strip_accents`
    differs from `lowercase` gives a warning: `do_lower_case` lower-cases and strips accents together.

    Raises:
        UserInputError: the file is not JSON, its model is not WordPiece (the message names the type),
            its ids are not 0..n-1, or its continuation prefix is not `##`.

    Examples:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
    >>> vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "##ning": 4, "run": 3}
    >>> with open(path, "w") as f:
    ...     json.dump({"normalizer": {"type": "BertNormalizer", "lowercase": True},
    ...                "model": {"type": "WordPiece", "vocab": vocab}}, f)
    >>> read_tokenizer_json(path)
    (['[UNK]', '[CLS]', '[SEP]', 'run', '##ning'], True)
    >>> BertTokenizer.from_pretrained(os.path.dirname(path)).tokenize("Running")
    ['run', '##ning']
    """
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UserInputError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(values, dict):
        raise UserInputError(f"{path}: expected a JSON object (a tokenizers file with a WordPiece model).")
    if "class_name" in values and isinstance(values.get("config"), dict):
        return _read_keras_hub_tokenizer(path, values)
    model = values.get("model")
    model_type = model.get("type") if isinstance(model, dict) else None
    if model_type != "WordPiece":
        raise UserInputError(f"{path}: the tokenizer model is {model_type}, not WordPiece; expected a BERT WordPiece tokenizer.")
    prefix = model.get("continuing_subword_prefix", "##")
    if prefix != "##":
        raise UserInputError(f"{path}: continuing_subword_prefix is {prefix!r}; expected '##'.")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not vocab:
        raise UserInputError(f"{path}: model.vocab must be a non-empty object of token -> id.")
    tokens = [None] * len(vocab)
    for token, index in vocab.items():
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(vocab) or tokens[index] is not None:
            raise UserInputError(
                f"{path}: model.vocab gives {token!r} the id {index!r}; expected each id of 0..{len(vocab) - 1} once."
            )
        tokens[index] = token
    normalizer = _bert_normalizer(values.get("normalizer"))
    if normalizer is None:
        return tokens, False
    lowercase = bool(normalizer.get("lowercase", True))
    _warn_accents(path, lowercase, normalizer.get("strip_accents"))
    return tokens, lowercase


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
    """

    def __init__(self, vocab_file, do_lower_case=True, split_special_tokens=True, cache_size=1_000_000):
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
        self.do_lower_case = bool(do_lower_case)
        self.split_special_tokens = bool(split_special_tokens)
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
        self._cache = _WordCache(self._tokenize_raw_word, cache_size)
        self._word_re = _word_regex()
        self._special_re = re.compile("|".join(re.escape(t) for t in self.special_tokens))

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        """Loads a tokenizer from a checkpoint directory holding vocab.txt, or tokenizer.json only.

        With vocab.txt, `do_lower_case` comes from the directory's tokenizer_config.json where present
        (default True). Without vocab.txt, the directory's tokenizer.json is read
        (`read_tokenizer_json`): a Hugging Face tokenizers file with a WordPiece model (transformers 5
        writes no vocab.txt), or a keras-hub preset's BertTokenizer entry with the preset's
        assets/tokenizer/vocabulary.txt. Keyword arguments override `do_lower_case` and are passed to the
        constructor.

        Args:
            path: A directory with vocab.txt (and optionally tokenizer_config.json), or with tokenizer.json.
            **kwargs: Constructor arguments (`do_lower_case`, `split_special_tokens`, ...).
        """
        path = os.fspath(path)
        if not os.path.isdir(path):
            raise ValueError(f"from_pretrained expects a directory holding vocab.txt; {path!r} is not a directory.")
        tokenizer_json = os.path.join(path, "tokenizer.json")
        if not os.path.isfile(os.path.join(path, "vocab.txt")) and os.path.isfile(tokenizer_json):
            tokens, do_lower_case = read_tokenizer_json(tokenizer_json)
            kwargs.setdefault("do_lower_case", do_lower_case)
            return cls(tokens, **kwargs)
        config_file = os.path.join(path, "tokenizer_config.json")
        if "do_lower_case" not in kwargs and os.path.isfile(config_file):
            with open(config_file, encoding="utf-8") as f:
                config = json.load(f)
            if "do_lower_case" in config:
                kwargs["do_lower_case"] = bool(config["do_lower_case"])
        return cls(os.path.join(path, "vocab.txt"), **kwargs)

    def save_pretrained(self, directory):
        """Writes vocab.txt and tokenizer_config.json (do_lower_case), each atomically, for `from_pretrained`."""
        os.makedirs(directory, exist_ok=True)
        with atomic_open(os.path.join(directory, "vocab.txt")) as f:
            f.write("".join(token + "\n" for token in self._id_to_token))
        with atomic_open(os.path.join(directory, "tokenizer_config.json")) as f:
            json.dump({"do_lower_case": self.do_lower_case, "tokenizer_class": "BertTokenizer"}, f, indent=2)

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
        ideograph). Returns (tokens, ids, starts, ends) with character offsets relative to `raw`."""
        lower = self.do_lower_case
        if raw.isascii() and not _ASCII_CONTROL_RE.search(raw):
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

        # Split off punctuation (and, defensively, whitespace the normalization could produce).
        if norm.isascii():
            words = [(m.group(), m.start()) for m in _ASCII_SPLIT_RE.finditer(norm)]
        else:
            words, begin = [], None
            for i, c in enumerate(norm):
                if c.isspace() or _is_punctuation(c):
                    if begin is not None:
                        words.append((norm[begin:i], begin))
                        begin = None
                    if not c.isspace():
                        words.append((c, i))
                elif begin is None:
                    begin = i
            if begin is not None:
                words.append((norm[begin:], begin))

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

    def tokenize(self, text):
        """Tokenizes one text into WordPiece tokens (strings).

        Args:
            text: A `str`.

        Returns:
            A list of tokens, e.g. `["un", "##want", "##ed", ",", "runn", "##ing"]`.
        """
        _check_text(text, "text")
        if self.split_special_tokens:
            return list(itertools.chain.from_iterable(map(operator.itemgetter(0), map(self._cache.__getitem__, self._word_re.findall(text)))))
        return self.convert_ids_to_tokens(self._encode_text(text, False)[0])

    def tokenize_with_offsets(self, text):
        """Tokenizes one text; returns (tokens, offsets) with offsets a list of (start, end) character
        (code point) offsets into `text`. An `[UNK]` spans its whole word."""
        _check_text(text, "text")
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
        if padding not in _PADDING_MODES:
            raise ValueError(f"padding must be one of {_PADDING_MODES}, got {padding!r}.")
        if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)):
            raise TypeError(f"max_length must be an int, got {type(max_length).__name__}.")
        if max_length < 3:
            raise ValueError(f"max_length must be at least 3 ([CLS], [SEP] and one token), got {max_length}.")

        rows = []  # (a_ids, a_starts, a_ends, b_ids, b_starts, b_ends)
        for i, text in enumerate(texts):
            a = self._encode_text(text, return_offsets)
            b = self._encode_text(pairs[i], return_offsets) if pairs is not None else None
            if b is not None and not b[0]:  # the original packs a B without tokens as no B at all
                b = None
            if truncation:
                if b is None:
                    keep_a, keep_b = min(len(a[0]), max_length - 2), 0
                else:
                    keep_a, keep_b = truncated_pair_lengths(len(a[0]), len(b[0]), max_length - 3)
                a = tuple(x[:keep_a] for x in a)
                b = None if b is None or keep_b == 0 else tuple(x[:keep_b] for x in b)
            rows.append((a, b))

        lengths = [len(a[0]) + 2 + (0 if b is None else len(b[0]) + 1) for a, b in rows]
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
        batch = len(rows)
        token_ids = np.full((batch, seq_len), self.pad_token_id, dtype=np.int32)
        segment_ids = np.zeros((batch, seq_len), dtype=np.int32)
        padding_mask = np.zeros((batch, seq_len), dtype=np.int32)
        offsets = np.zeros((batch, seq_len, 2), dtype=np.int32) if return_offsets else None
        cls, sep = self.cls_token_id, self.sep_token_id
        for i, (a, b) in enumerate(rows):
            ids = [cls, *a[0], sep]
            if b is not None:
                ids += [*b[0], sep]
                segment_ids[i, len(a[0]) + 2 : len(ids)] = 1
            token_ids[i, : len(ids)] = ids
            padding_mask[i, : len(ids)] = 1
            if return_offsets:
                na = len(a[0])
                offsets[i, 1 : 1 + na, 0] = a[1]
                offsets[i, 1 : 1 + na, 1] = a[2]
                if b is not None:
                    nb = len(b[0])
                    offsets[i, na + 2 : na + 2 + nb, 0] = b[1]
                    offsets[i, na + 2 : na + 2 + nb, 1] = b[2]
        out = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
        if return_offsets:
            out["offsets"] = offsets
        return out


def check_vocab_size(tokenizer, vocab_size, where):
    """Refuses a tokenizer whose ids do not all fit the model's embedding table of `vocab_size` rows.

    An id >= `vocab_size` is out of the table: TensorFlow fails in the gather, JAX silently reads
    garbage (NaN losses). A vocabulary smaller than the table is accepted (the original's checkpoints pad
    their tables, e.g. multilingual models).

    Args:
        tokenizer: a `BertTokenizer` (or anything with `vocab_size` and `vocab_file`).
        vocab_size: the model's `vocab_size` (rows of its token embedding table).
        where: what holds the model's `vocab_size`, for the message (a config file or a flag).

    Raises:
        UserInputError: naming the vocabulary file, its size, `where` and its `vocab_size`.

    Examples:

    >>> import tempfile
    >>> vocab_file = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> with open(vocab_file, "w") as f:
    ...     _ = f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"]))
    >>> check_vocab_size(BertTokenizer(vocab_file), 6, "config.json")
    >>> try:
    ...     check_vocab_size(BertTokenizer(vocab_file), 5, "config.json")
    ... except ValueError as error:
    ...     print(os.path.basename(str(error)))
    vocab.txt: 6 tokens (ids 0..5), but config.json has vocab_size 5; the vocabulary must be the model's (at most vocab_size tokens).
    """
    size = int(tokenizer.vocab_size)
    if size > int(vocab_size):
        raise UserInputError(f"{getattr(tokenizer, 'vocab_file', 'the vocabulary')}: {size} tokens (ids 0..{size - 1}), "
                             f"but {where} has vocab_size {int(vocab_size)}; the vocabulary must be the model's "
                             "(at most vocab_size tokens).")


def truncated_pair_lengths(len_a, len_b, budget):
    """Lengths the original `_truncate_seq_pair` leaves: it pops one token at a time from the end of
    the longer segment (from B on a tie) until `len_a + len_b <= budget`. Closed form of that loop."""
    if len_a + len_b <= budget:
        return len_a, len_b
    short = min(len_a, len_b)
    if 2 * short <= budget:  # Only the longer one is cut.
        return (budget - short, short) if len_a > len_b else (short, budget - short)
    return (budget + 1) // 2, budget // 2


def _check_text(text, name):
    if text is None:
        raise ValueError(f"{name} is None; expected a str.")
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}.")


def as_text_list(texts, name):
    """A str (batch of one) or a sequence of str, checked element by element; UTF-8 bytes are decoded (what
    tf.data hands over). The task preprocessors read their text fields with it too."""
    if isinstance(texts, bytes):
        texts = texts.decode("utf-8")
    if isinstance(texts, str):
        return [texts]
    if texts is None:
        raise ValueError(f"{name} is None; expected a str or a sequence of str.")
    if isinstance(texts, np.ndarray):
        texts = texts.reshape(-1).tolist()
    if not isinstance(texts, (list, tuple)):
        raise TypeError(f"{name} must be a str or a list/tuple of str, got {type(texts).__name__}.")
    out = []
    for i, text in enumerate(texts):
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        _check_text(text, f"{name}[{i}]")
        out.append(text)
    return out
