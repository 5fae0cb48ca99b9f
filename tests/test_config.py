import json

import pytest

from keras_bert_impl.config import SUPPORTED_ACTIVATIONS, BertConfig

pytestmark = pytest.mark.backend_independent

GOOGLE_BERT_BASE_CONFIG = {  # uncased_L-12_H-768_A-12/bert_config.json, as released
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "type_vocab_size": 2,
    "vocab_size": 30522,
}


@pytest.mark.parametrize(
    "name, layers, hidden, heads",
    [
        ("bert_tiny", 2, 128, 2),
        ("bert_mini", 4, 256, 4),
        ("bert_small", 4, 512, 8),
        ("bert_medium", 8, 512, 8),
        ("bert_base", 12, 768, 12),
        ("bert_large", 24, 1024, 16),
    ],
)
def test_presets_have_the_released_sizes(name, layers, hidden, heads):
    config = BertConfig.preset(name)
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (layers, hidden, heads)
    assert config.intermediate_size == 4 * hidden
    assert (config.vocab_size, config.max_position_embeddings, config.type_vocab_size) == (30522, 512, 2)
    assert config.layer_norm_eps == 1e-12


def test_reads_google_bert_config_json(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(GOOGLE_BERT_BASE_CONFIG))
    config = BertConfig.from_json_file(path)
    assert config == BertConfig.preset("bert_base")
    assert BertConfig.from_pretrained(tmp_path) == config


def test_reads_hugging_face_config_json(minilm_path):
    config = BertConfig.from_pretrained(minilm_path)
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (6, 384, 12)
    assert (config.intermediate_size, config.vocab_size, config.hidden_act) == (1536, 30522, "gelu")


def test_json_round_trip_is_exact(tmp_path):
    config = BertConfig.preset("bert_small", hidden_act="gelu_new", layer_norm_eps=1e-6, hidden_dropout_prob=0.2)
    config.to_json_file(tmp_path / "c.json")
    assert BertConfig.from_json_file(tmp_path / "c.json") == config
    assert BertConfig.from_dict(json.loads(config.to_json_string())) == config


def test_overrides_replace_stored_fields(minilm_path):
    config = BertConfig.from_pretrained(minilm_path, hidden_act="gelu_approximate", hidden_dropout_prob=0.0)
    assert config.hidden_act == "gelu_approximate" and config.hidden_dropout_prob == 0.0


def test_heads_not_dividing_hidden_size_is_refused_with_allowed_values():
    with pytest.raises(ValueError, match=r"hidden_size \(100\) must be divisible by num_attention_heads \(3\)") as e:
        BertConfig(hidden_size=100, num_attention_heads=3)
    assert "[1, 2, 4, 5, 10, 20, 25, 50, 100]" in str(e.value)


@pytest.mark.parametrize(
    "field",
    ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", "type_vocab_size"],
)
@pytest.mark.parametrize("value", [0, -4, 2.5])
def test_non_positive_or_non_integer_sizes_are_refused(field, value):
    with pytest.raises(ValueError, match=f"BertConfig.{field} must be a positive integer"):
        BertConfig(**{field: value})


def test_bad_dropout_and_epsilon_are_refused():
    with pytest.raises(ValueError, match="hidden_dropout_prob must be a probability"):
        BertConfig(hidden_dropout_prob=1.0)
    with pytest.raises(ValueError, match="layer_norm_eps must be a positive number"):
        BertConfig(layer_norm_eps=0)


def test_unknown_activation_lists_the_allowed_ones():
    with pytest.raises(ValueError, match="hidden_act must be one of") as e:
        BertConfig(hidden_act="swishy")
    for name in SUPPORTED_ACTIVATIONS:
        assert name in str(e.value)


def test_unknown_preset_lists_the_allowed_ones():
    with pytest.raises(ValueError, match="Unknown BertConfig preset 'bert_huge'") as e:
        BertConfig.preset("bert_huge")
    assert "bert_tiny" in str(e.value) and "bert_large" in str(e.value)


def test_file_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json or bert_config.json"):
        BertConfig.from_pretrained(tmp_path)
    bad = tmp_path / "config.json"
    bad.write_text('{"hidden_size": 768,\n "vocab_size": }')
    with pytest.raises(ValueError, match=r"config.json: not valid JSON \(line 2"):
        BertConfig.from_json_file(bad)
    bad.write_text(json.dumps({"hidden_size": 768}))
    with pytest.raises(ValueError, match="missing required field"):
        BertConfig.from_json_file(bad)
    bad.write_text(json.dumps(dict(GOOGLE_BERT_BASE_CONFIG, hidden_size=-1)))
    with pytest.raises(ValueError, match=r"config.json: BertConfig.hidden_size must be a positive integer"):
        BertConfig.from_json_file(bad)


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"model_type": "roberta"}, "unsupported architecture model_type='roberta'"),
        ({"position_embedding_type": "relative_key"}, "unsupported position_embedding_type"),
        ({"is_decoder": True, "add_cross_attention": True}, "cross-attention"),
    ],
)
def test_unsupported_architectures_are_refused(extra, message):
    with pytest.raises(ValueError, match=message):
        BertConfig.from_dict(dict(GOOGLE_BERT_BASE_CONFIG, **extra))


def test_config_file_errors_are_user_errors_and_the_file_is_written_whole(tmp_path):
    from keras_bert_impl.utils.errors import UserInputError

    with pytest.raises(UserInputError, match=r"BERT config file not found: .*missing\.json"):
        BertConfig.from_json_file(tmp_path / "missing.json")
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes('{"note": "caf\u00e9"}'.encode("latin-1"))
    with pytest.raises(UserInputError, match=r"latin1\.json: not valid JSON \(.*utf-8"):
        BertConfig.from_json_file(latin1)
    path = tmp_path / "bert_config.json"
    BertConfig.from_dict(GOOGLE_BERT_BASE_CONFIG).to_json_file(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bert_config.json", "latin1.json"]  # no temporary left
    assert BertConfig.from_json_file(path) == BertConfig.from_dict(GOOGLE_BERT_BASE_CONFIG)
