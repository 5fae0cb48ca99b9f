"""BertTextPacker: a Keras preprocessing layer from raw strings to BERT inputs, in-graph (TensorFlow).

It wraps `tf_bert_tokenizer.TFBertTokenizer`, so its ids, truncation and packing equal the Python
`BertTokenizer.__call__`. Like `keras.layers.TextVectorization`, it always computes with TensorFlow ops:
under the JAX or PyTorch backend use it inside `tf.data` (`dataset.map(packer)`); under the TensorFlow
backend it can also be the first layer of a model with a `dtype="string"` input.
"""

import os

import keras

from keras_bert_impl.utils.optional_dependencies import require

# Without TensorFlow: one line naming the extra to install, before `import tensorflow` fails.
require("the in-graph tokenizer and packer (tokenizers/tf_text_packer.py)", "tensorflow")

import tensorflow as tf

from keras_bert_impl.tokenizers.tf_bert_tokenizer import TFBertTokenizer
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

_OUTPUT_KEYS = ("token_ids", "segment_ids", "padding_mask")


class BertTextPacker(keras.layers.Layer):
    """Raw text (one text, or a pair) -> `token_ids`, `segment_ids`, `padding_mask` (int32).

    Args:
        tokenizer: A `BertTokenizer`, a `TFBertTokenizer`, a checkpoint directory (holding vocab.txt)
            or a vocab.txt path (a str or `os.PathLike`).
        max_length: Packed length, `[CLS]`/`[SEP]` included.
        padding: `"max_length"` (default: fixed shapes) or `"longest"` (pad to the longest of the batch).
        do_lower_case: Used only when `tokenizer` is a vocab.txt path.
        **kwargs: `keras.layers.Layer` arguments.

    Examples:

    >>> import os, tempfile
    >>> vocab_file = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> with open(vocab_file, "w") as f:
    ...     _ = f.write("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "who", "?", "me"]))
    >>> packer = BertTextPacker(vocab_file, max_length=8)
    >>> ds = tf.data.Dataset.from_tensor_slices((["Who?"], ["me"])).batch(32)
    >>> ds = ds.map(lambda q, p: packer((q, p)))
    >>> next(iter(ds))["token_ids"].numpy().tolist()
    [[2, 4, 5, 3, 6, 3, 0, 0]]
    """

    def __init__(self, tokenizer, max_length=128, padding="max_length", do_lower_case=True, **kwargs):
        super().__init__(**kwargs)
        if padding not in ("longest", "max_length"):
            raise ValueError(f"padding must be 'longest' or 'max_length', got {padding!r}.")
        if isinstance(tokenizer, os.PathLike):
            tokenizer = os.fspath(tokenizer)
        if isinstance(tokenizer, TFBertTokenizer):
            tf_tokenizer = tokenizer
        elif isinstance(tokenizer, BertTokenizer):
            tf_tokenizer = TFBertTokenizer(tokenizer)
        elif isinstance(tokenizer, str) and tf.io.gfile.isdir(tokenizer):
            tf_tokenizer = TFBertTokenizer(BertTokenizer.from_pretrained(tokenizer))
        elif isinstance(tokenizer, str):
            tf_tokenizer = TFBertTokenizer(tokenizer, do_lower_case=do_lower_case)
        else:
            raise TypeError(
                "tokenizer must be a BertTokenizer, a TFBertTokenizer, a checkpoint directory or a vocab.txt "
                f"path, got {type(tokenizer).__name__}."
            )
        self.tokenizer = tf_tokenizer
        self.max_length = int(max_length)
        self.padding = padding
        # TF-only preprocessing, as keras.layers.TextVectorization: inputs stay tf tensors (strings).
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.supports_jit = False
        self.built = True

    def call(self, inputs):
        if isinstance(inputs, (list, tuple)):
            if len(inputs) not in (1, 2):
                raise ValueError(f"BertTextPacker takes one text or a pair of texts, got {len(inputs)} inputs.")
            texts, pairs = inputs[0], (inputs[1] if len(inputs) == 2 else None)
        else:
            texts, pairs = inputs, None
        out = self.tokenizer(texts, pairs, max_length=self.max_length, padding=self.padding)
        if keras.backend.backend() != "tensorflow" and tf.executing_eagerly():
            out = {k: keras.ops.convert_to_tensor(v.numpy()) for k, v in out.items()}
        return out

    def compute_output_spec(self, inputs):
        texts = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        shape = tuple(texts.shape)
        if len(shape) == 2 and shape[-1] == 1:
            shape = shape[:1]
        seq = self.max_length if self.padding == "max_length" else None
        return {k: keras.KerasTensor(shape + (seq,), dtype="int32") for k in _OUTPUT_KEYS}

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "tokenizer": self.tokenizer.vocab_file,
                "do_lower_case": self.tokenizer.do_lower_case,
                "max_length": self.max_length,
                "padding": self.padding,
            }
        )
        return config
