"""Test helpers for the tokenization tests: a literal copy of the original google-research/bert
tokenization algorithm (the reference), and a deterministic mixed-script corpus.

Not a test module (no test_ prefix); imported by tests/test_tokenization.py and test_tf_tokenization.py.
"""

import random
import unicodedata

# --- google-research/bert tokenization.py, copied as it is (Python 3: text is already unicode) --------


def whitespace_tokenize(text):
    text = text.strip()
    if not text:
        return []
    tokens = text.split()
    return tokens


class OriginalFullTokenizer(object):
    def __init__(self, vocab, do_lower_case=True):
        self.vocab = vocab
        self.basic_tokenizer = OriginalBasicTokenizer(do_lower_case=do_lower_case)
        self.wordpiece_tokenizer = OriginalWordpieceTokenizer(vocab=self.vocab)

    def tokenize(self, text):
        split_tokens = []
        for token in self.basic_tokenizer.tokenize(text):
            for sub_token in self.wordpiece_tokenizer.tokenize(token):
                split_tokens.append(sub_token)
        return split_tokens

    def convert_tokens_to_ids(self, tokens):
        return [self.vocab[t] for t in tokens]


class OriginalBasicTokenizer(object):
    def __init__(self, do_lower_case=True):
        self.do_lower_case = do_lower_case

    def tokenize(self, text):
        text = self._clean_text(text)
        text = self._tokenize_chinese_chars(text)
        orig_tokens = whitespace_tokenize(text)
        split_tokens = []
        for token in orig_tokens:
            if self.do_lower_case:
                token = token.lower()
                token = self._run_strip_accents(token)
            split_tokens.extend(self._run_split_on_punc(token))
        output_tokens = whitespace_tokenize(" ".join(split_tokens))
        return output_tokens

    def _run_strip_accents(self, text):
        text = unicodedata.normalize("NFD", text)
        output = []
        for char in text:
            cat = unicodedata.category(char)
            if cat == "Mn":
                continue
            output.append(char)
        return "".join(output)

    def _run_split_on_punc(self, text):
        chars = list(text)
        i = 0
        start_new_word = True
        output = []
        while i < len(chars):
            char = chars[i]
            if _is_punctuation(char):
                output.append([char])
                start_new_word = True
            else:
                if start_new_word:
                    output.append([])
                start_new_word = False
                output[-1].append(char)
            i += 1
        return ["".join(x) for x in output]

    def _tokenize_chinese_chars(self, text):
        output = []
        for char in text:
            cp = ord(char)
            if self._is_chinese_char(cp):
                output.append(" ")
                output.append(char)
                output.append(" ")
            else:
                output.append(char)
        return "".join(output)

    def _is_chinese_char(self, cp):
        if (
            (cp >= 0x4E00 and cp <= 0x9FFF)
            or (cp >= 0x3400 and cp <= 0x4DBF)
            or (cp >= 0x20000 and cp <= 0x2A6DF)
            or (cp >= 0x2A700 and cp <= 0x2B73F)
            or (cp >= 0x2B740 and cp <= 0x2B81F)
            or (cp >= 0x2B820 and cp <= 0x2CEAF)
            or (cp >= 0xF900 and cp <= 0xFAFF)
            or (cp >= 0x2F800 and cp <= 0x2FA1F)
        ):
            return True
        return False

    def _clean_text(self, text):
        output = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD or _is_control(char):
                continue
            if _is_whitespace(char):
                output.append(" ")
            else:
                output.append(char)
        return "".join(output)


class OriginalWordpieceTokenizer(object):
    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text):
        output_tokens = []
        for token in whitespace_tokenize(text):
            chars = list(token)
            if len(chars) > self.max_input_chars_per_word:
                output_tokens.append(self.unk_token)
                continue
            is_bad = False
            start = 0
            sub_tokens = []
            while start < len(chars):
                end = len(chars)
                cur_substr = None
                while start < end:
                    substr = "".join(chars[start:end])
                    if start > 0:
                        substr = "##" + substr
                    if substr in self.vocab:
                        cur_substr = substr
                        break
                    end -= 1
                if cur_substr is None:
                    is_bad = True
                    break
                sub_tokens.append(cur_substr)
                start = end
            if is_bad:
                output_tokens.append(self.unk_token)
            else:
                output_tokens.extend(sub_tokens)
        return output_tokens


def _is_whitespace(char):
    if char == " " or char == "\t" or char == "\n" or char == "\r":
        return True
    cat = unicodedata.category(char)
    if cat == "Zs":
        return True
    return False


def _is_control(char):
    if char == "\t" or char == "\n" or char == "\r":
        return False
    cat = unicodedata.category(char)
    if cat in ("Cc", "Cf"):
        return True
    return False


def _is_punctuation(char):
    cp = ord(char)
    if (cp >= 33 and cp <= 47) or (cp >= 58 and cp <= 64) or (cp >= 91 and cp <= 96) or (cp >= 123 and cp <= 126):
        return True
    cat = unicodedata.category(char)
    if cat.startswith("P"):
        return True
    return False


def original_truncate_seq_pair(tokens_a, tokens_b, max_length):
    """run_classifier.py's _truncate_seq_pair, as it is."""
    while True:
        total_length = len(tokens_a) + len(tokens_b)
        if total_length <= max_length:
            break
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


# --- A deterministic mixed-script corpus ---------------------------------------------------------------

FRAGMENTS = [
    # English prose, URLs, numbers, currency.
    "The quick brown fox jumps over the lazy dog.",
    "BERT stands for Bidirectional Encoder Representations from Transformers.",
    "Unbelievably, the tokenizer's output didn't change; it's deterministic!",
    "See https://example.com/path/to?q=1&lang=en#section-2 or mail someone@example.org.",
    "Prices: $1,234.56, €12, ¥500, £3.50, ₹100, 1e-10, 3½, x²+y³=z, 50% off (really).",
    "Version 2.21.1 (2024-05-17) fixed issue #4321 — see CHANGELOG.md…",
    "He said: «Bonjour», „Hallo“, 'hi' and \"hey\".",
    # Accented Latin and special letters.
    "Café naïve Ångström façade Dvořák Łódź İstanbul ÉCOLE Straße ẞ Œuvre ǅemal ﬁne",
    "Crème brûlée à la mode, señor; São Paulo; Ærøskøbing; Þingvellir",
    "e\u0301 a\u0300\u0323 \u0301abc !\u0301 \u212a\u212b \u1fef x\u037ey",
    # CJK, Japanese, Korean.
    "北京大学的研究人员发表了新的论文。",
    "ah\u535a\u63a8zz \uf900\uf901 \U00020000\U0002a6d6 \u3400",
    "こんにちは、世界！カタカナとひらがな。ｶﾀｶﾅ",
    "안녕하세요 세계, 한국어 텍스트입니다.",
    # Other scripts.
    "مرحبا بالعالم، هذا نص عربي.",
    "Привет, мир! ЁЖИК в тумане. Съешь же ещё этих мягких французских булок.",
    "ΟΔΟΣ Σίσυφος ΣΑΣ. ΟΔΟΣ, Σ ΑΣ\u200bΒ",
    "שלום עולם",
    "สวัสดีครับ ภาษาไทย",
    "नमस्ते दुनिया, हिन्दी",
    "𝐀𝐁𝐂 𝒳 \U00010400\U00010428",
    # Emoji with modifiers and ZWJ sequences.
    "👍🏽 👨\u200d👩\u200d👧\u200d👦 🏳\ufe0f\u200d🌈 ❤\ufe0f 1\ufe0f\u20e3 🇫🇷",
    # Control, format, zero-width and odd whitespace.
    "zero\u200bwidth soft\u00adhyphen joiner\u200dhere bom\ufeffx nul\x00l repl\ufffdace esc\x1b[0m",
    "tab\tnewline\ncr\r\nnbsp\u00a0em\u2003ideo\u3000line\u2028para\u2029vt\x0bff\x0cfs\x1cnel\x85end",
    # Full-width punctuation and letters.
    "！？，。：；（）【】「」ＡＢＣ１２３ａｂｃ",
    # Special-token strings as text.
    "[CLS] is not special here [SEP] nor [MASK] or [UNK] [PAD]",
    # Long words.
    "a" * 201,
    "b" * 200,
    "supercalifragilistic" * 11,
    "α" * 205,
]

_WORDS = [w for fragment in FRAGMENTS[:21] for w in fragment.split()]
_SEPARATORS = [" ", " ", " ", "", "\t", "\n", "  ", "\u3000", "\u200b"]


def mixed_corpus(n_lines=300, seed=2024):
    """The fragments above, each alone, then `n_lines` random mixes of their words (deterministic)."""
    rng = random.Random(seed)
    lines = list(FRAGMENTS) + ["", " ", "\u200b", "\t\n"]
    for _ in range(n_lines):
        n = rng.randint(1, 14)
        parts = []
        for _ in range(n):
            word = rng.choice(_WORDS)
            if rng.random() < 0.15:
                word = word.upper()
            if rng.random() < 0.05:
                word = word + rng.choice(["\x00", "\u00ad", "\ufffd", "\u200d", "\x7f", "\u0301", "Σ"])
            parts.append(word)
            parts.append(rng.choice(_SEPARATORS))
        lines.append("".join(parts))
    return lines
