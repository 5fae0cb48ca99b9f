"""LiteRTTextPacker: one raw text -> BERT inputs, with the tensorflow-text ops LiteRT can run. TensorFlow by
nature.

`TFBertTokenizer` (the exact in-graph twin of `BertTokenizer`) needs TensorFlow ops LiteRT has only as Flex
ops (unicode decoding, regex splits, hash tables, ragged gathers). This packer uses instead
`tensorflow_text.FastBertNormalizer` and `FastWordpieceTokenizer` with its own BERT pre-tokenization, the two
ops tensorflow-text ships as LiteRT custom ops (`tensorflow_text.core.pybinds.tflite_registrar`:
`AddFastBertNormalize`, `AddFastWordpieceTokenize`), and packs one text as `[CLS] pieces [SEP]` (truncated
to `max_length`, no padding) with builtin ops. A LiteRT file holding it runs in an interpreter given those
two registerers (`ai_edge_litert.interpreter.InterpreterWithCustomOps`); the stock `Interpreter` refuses it
("unresolved custom op: FastBertNormalize"), docs/deployment.md.

Its pieces equal `BertTokenizer`'s on ordinary text (tests/test_portable_export.py: the shipped sentiment
set); where they can differ: a word longer than 100 bytes of UTF-8 is `[UNK]` here, longer than 100
characters there; `[CLS]` and other special tokens inside the text are split as plain text, as
`TFBertTokenizer` does.
"""

from keras_bert_impl.utils.optional_dependencies import require

# Without TensorFlow: one line naming the extra to install, before `import tensorflow` fails.
require("the in-graph LiteRT tokenizer (tokenizers/tf_litert_tokenizer.py)", "tensorflow")

import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer


class LiteRTTextPacker(tf.Module):
    """One raw text [1] (a string tensor) -> {token_ids, segment_ids, padding_mask} [1, n] int32,
    `[CLS] pieces [SEP]` with n <= `max_length`.

    Args:
        tokenizer: the `BertTokenizer` whose vocabulary and casing it applies.
        max_length: the most tokens, `[CLS]` and `[SEP]` included.

    Examples:

    >>> packer = LiteRTTextPacker(BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world"]), 8)
    >>> packer(tf.constant(["Hello, world!"]))["token_ids"].numpy().tolist()
    [[2, 4, 1, 5, 1, 3]]
    """

    def __init__(self, tokenizer, max_length):
        super().__init__()
        if not isinstance(tokenizer, BertTokenizer):
            raise TypeError(f"LiteRTTextPacker takes a BertTokenizer, got {type(tokenizer).__name__}.")
        self.max_length = int(max_length)
        self._normalizer = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=tokenizer.do_lower_case)
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            tokenizer.vocabulary, token_out_type=tf.int32, unknown_token="[UNK]", no_pretokenization=False,
            support_detokenization=False)
        self._cls, self._sep = tokenizer.cls_token_id, tokenizer.sep_token_id

    def __call__(self, text):
        pieces = self._wordpiece.tokenize(self._normalizer.normalize(text)).flat_values  # [n] of the one text
        pieces = pieces[:self.max_length - 2]
        token_ids = tf.concat([[self._cls], pieces, [self._sep]], axis=0)[tf.newaxis]  # [1, n + 2]
        return {"token_ids": token_ids, "segment_ids": tf.zeros_like(token_ids),
                "padding_mask": tf.ones_like(token_ids)}
