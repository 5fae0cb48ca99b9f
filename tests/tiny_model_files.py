"""A tiny BERT model directory (config.json, model.safetensors, vocab.txt) as pytest fixtures, for the tests
that write, break and read model files (registered for every test module by `tests/conftest.py`)."""

import pytest

from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone

TINY = dict(vocab_size=24, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=16)
# The vocabulary of TINY (vocab_size 24: a vocabulary of another size is refused).
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"] + [f"w{i}" for i in range(17)]


@pytest.fixture(scope="module")
def tiny_backbone():
    return BertBackbone(BertConfig(**TINY))


@pytest.fixture
def model_dir(tiny_backbone, tmp_path):
    """A complete tiny model directory: config.json, model.safetensors, vocab.txt."""
    directory = tmp_path / "model"
    tiny_backbone.save_pretrained(str(directory))
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return directory
