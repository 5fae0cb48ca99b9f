"""Feature-based layer choices of the paper's Table 7: `ScalarMix` (a learned softmax-weighted sum of layers),
the six presets of `keras_bert_impl.feature_modes` in `BertFeatureBasedTagger` and in `extract_features`, checked
against the backbone's hidden states chosen by hand."""

import keras
import numpy as np
import pytest

from keras_bert_impl.config import BertConfig
from keras_bert_impl.layers.scalar_mix import ScalarMix
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.feature_based_tagger import BertFeatureBasedTagger
from keras_bert_impl.feature_modes import FEATURE_MODES, feature_mode_layers
from keras_bert_impl.tasks.feature_extraction import extract_features
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError
from tests.backend_utils import to_numpy

# Five encoder layers, so that "sum_last_four" (hidden states 2..5) and "sum_all" (1..5) differ.
TINY = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=5, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=32, hidden_dropout_prob=0.3)
SMALL = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                   max_position_embeddings=32)
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(55)]

# Table 7 rows by hand: (hidden-state indices of the 6 states 0..5, combine).
EXPECTED = {
    "embeddings": ([0], "concat"),
    "second_to_last": ([4], "concat"),
    "last": ([5], "concat"),
    "sum_last_four": ([2, 3, 4, 5], "scalar_mix"),
    "concat_last_four": ([5, 4, 3, 2], "concat"),
    "sum_all": ([1, 2, 3, 4, 5], "scalar_mix"),
}


def _data(batch=6, seq=8, seed=0):
    rng = np.random.RandomState(seed)
    token_ids = rng.randint(5, 60, size=(batch, seq)).astype("int32")
    padding_mask = np.ones((batch, seq), "int32")
    padding_mask[::2, -2:] = 0
    token_ids *= padding_mask
    labels = np.where(padding_mask > 0, token_ids % 3, -100).astype("int32")
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": padding_mask}, labels


def test_scalar_mix_is_gamma_times_softmax_weighted_sum_and_one_hot_selects_a_layer_exactly():
    rng = np.random.RandomState(1)
    inputs = [rng.normal(size=(2, 5, 8)).astype("float32") for _ in range(4)]
    logits, gamma = np.array([0.5, -0.5, 0.0, 1.0], "float32"), 2.0
    mix = ScalarMix(initial_scalar_parameters=logits, initial_gamma=gamma)
    weights = np.exp(logits) / np.exp(logits).sum()
    expected = gamma * sum(w * h for w, h in zip(weights, inputs))  # allennlp's formula
    np.testing.assert_allclose(to_numpy(mix(inputs)), expected, atol=1e-6)
    np.testing.assert_allclose(to_numpy(ScalarMix()(inputs)), np.mean(inputs, axis=0), atol=1e-6)  # logits 0: mean
    for k in range(4):
        one_hot = ScalarMix(initial_scalar_parameters=[0.0 if j == k else -1e9 for j in range(4)])
        np.testing.assert_array_equal(to_numpy(one_hot(inputs)), inputs[k])


def test_each_table_7_preset_selects_the_hand_chosen_hidden_states_in_tagger_and_extract_features(tmp_path):
    backbone = BertBackbone(TINY, output_hidden_states=True)
    x, _ = _data()
    hidden = [to_numpy(h) for h in backbone(x, training=False)["hidden_states"]]  # 6 x [B, T, H]
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(WORDS) + "\n")
    tokenizer = BertTokenizer(str(vocab_file))
    line = "w1 w2 w3 w4 w5 w6"
    line_inputs = {"token_ids": np.array([[2, 6, 7, 8, 9, 10, 11, 3]], "int32"),
                   "segment_ids": np.zeros((1, 8), "int32"), "padding_mask": np.ones((1, 8), "int32")}
    line_hidden = [to_numpy(h)[0] for h in backbone(line_inputs, training=False)["hidden_states"]]  # [T, H] each
    assert sorted(EXPECTED) == sorted(FEATURE_MODES)
    records = {}
    for mode, (states, combine) in EXPECTED.items():
        layers, got_combine = feature_mode_layers(mode, TINY.num_hidden_layers)
        assert ([i % (TINY.num_hidden_layers + 1) for i in layers], got_combine) == (states, combine), mode

        tagger = BertFeatureBasedTagger(backbone, num_classes=3, feature_mode=mode, lstm_units=4, num_lstm_layers=1)
        config = tagger.get_config()
        assert (config["feature_mode"], config["feature_combine"], tagger.feature_mode) == (mode, combine, mode)
        name = "scalar_mix" if combine == "scalar_mix" else "features"
        features = to_numpy(keras.Model(tagger.input, tagger.get_layer(name).output)(x, training=True))
        if combine == "concat":
            want = np.concatenate([hidden[i] for i in states], axis=-1)  # [B, T, n * H]
        else:
            want = np.mean([hidden[i] for i in states], axis=0)  # untrained mix: the mean, [B, T, H]
        np.testing.assert_allclose(features, want, atol=1e-5, err_msg=mode)

        record = records[mode] = next(extract_features(backbone, tokenizer, [line], max_seq_length=8,
                                                       feature_mode=mode))
        written = record["features"][3]["layers"]  # the token "w3"
        if combine == "concat":
            assert [e["index"] for e in written] == ["embeddings" if i == 0 else layers[k] for k, i in enumerate(states)]
            values = [line_hidden[i][3] for i in states]
        else:
            assert [e["index"] for e in written] == [mode]
            values = [np.mean([line_hidden[i][3] for i in states], axis=0)]
        for entry, value in zip(written, values, strict=True):
            np.testing.assert_allclose(entry["values"], value, atol=2e-6, err_msg=mode)
    # "last" and "concat_last_four" write what the original's --layers=-1 / -1,-2,-3,-4 write.
    for mode, indexes in (("last", [-1]), ("concat_last_four", [-1, -2, -3, -4])):
        assert records[mode] == next(extract_features(backbone, tokenizer, [line], indexes, max_seq_length=8))


def test_scalar_mix_tagger_trains_its_mix_round_trips_and_keeps_the_backbone_frozen(tmp_path):
    backbone = BertBackbone(SMALL, output_hidden_states=True)
    model = BertFeatureBasedTagger(backbone, num_classes=3, feature_layers=(0, 1, -1), feature_combine="scalar_mix",
                                   lstm_units=8, num_lstm_layers=1, dropout=0.0)
    x, labels = _data()

    # One-hot mix weights: the mix equals the chosen frozen hidden state exactly (same forward pass).
    mix = model.get_layer("scalar_mix")
    probe = keras.Model(model.input, [*model.get_layer("features").output, mix.output])
    mix.scalar_parameters.assign(np.array([-1e9, 0.0, -1e9], "float32"))
    *states, mixed = [to_numpy(t) for t in probe(x)]
    np.testing.assert_array_equal(mixed, states[1])
    mix.scalar_parameters.assign(np.zeros(3, "float32"))

    before = [to_numpy(v).copy() for v in backbone.weights]
    assert {v.path.split("/")[0] for v in model.trainable_variables} == {"scalar_mix", "bilstm_0", "classifier"}
    # 4 steps: tracing would cost more than running eagerly, except under JAX, whose eager ops compile one by one.
    model.compile(optimizer=keras.optimizers.Adam(3e-2), run_eagerly=keras.backend.backend() != "jax")
    history = model.fit(x, labels, epochs=4, batch_size=6, verbose=0).history
    assert history["loss"][-1] < history["loss"][0]
    assert np.abs(to_numpy(mix.scalar_parameters)).max() > 1e-3 and abs(float(to_numpy(mix.gamma)) - 1.0) > 1e-3
    for a, b in zip(before, backbone.weights):
        np.testing.assert_array_equal(a, to_numpy(b))

    path = str(tmp_path / "tagger.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert (loaded.feature_layers, loaded.feature_combine) == ((0, 1, -1), "scalar_mix")
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), atol=1e-6)
    np.testing.assert_array_equal(to_numpy(loaded.get_layer("scalar_mix").scalar_parameters),
                                  to_numpy(mix.scalar_parameters))
    assert not loaded.backbone.trainable
    assert {v.path.split("/")[0] for v in loaded.trainable_variables} == {"scalar_mix", "bilstm_0", "classifier"}


def test_unknown_feature_mode_or_combine_is_a_one_line_error(tmp_path):
    backbone = BertBackbone(TINY, output_hidden_states=True)
    with pytest.raises(ValueError, match=r"^feature_mode must be one of embeddings, second_to_last, last, "
                                         r"sum_last_four, concat_last_four, sum_all; got 'top'\.$"):
        BertFeatureBasedTagger(backbone, num_classes=3, feature_mode="top")
    with pytest.raises(ValueError, match=r"^feature_combine must be one of concat, scalar_mix; got 'mean'\.$"):
        BertFeatureBasedTagger(backbone, num_classes=3, feature_combine="mean")
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(WORDS) + "\n")
    with pytest.raises(UserInputError, match="^feature_mode must be one of"):
        extract_features(backbone, BertTokenizer(str(vocab_file)), ["w1"], feature_mode="top")


def test_extract_features_recipe_writes_a_preset(model_dir, tmp_path, capsys):
    import importlib.util
    import json
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "recipes", "extract_features.py")
    spec = importlib.util.spec_from_file_location("extract_features_recipe_presets", path)
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    input_file, output_file = tmp_path / "input.txt", tmp_path / "out.jsonl"
    input_file.write_text("hello world\n")
    flags = [f"--input_file={input_file}", f"--output_file={output_file}", f"--init_checkpoint={model_dir}",
             "--max_seq_length=8"]
    assert recipe.main(flags + ["--feature_mode=embeddings"]) == 1
    record = json.loads(output_file.read_text())
    backbone = BertBackbone.from_pretrained(str(model_dir), output_hidden_states=True)
    inputs = {"token_ids": np.array([[2, 5, 6, 3]], "int32"), "segment_ids": np.zeros((1, 4), "int32"),
              "padding_mask": np.ones((1, 4), "int32")}
    embeddings = to_numpy(backbone(inputs, training=False)["hidden_states"][0])[0]  # [T, H]
    for position, feature in enumerate(record["features"]):
        assert [layer["index"] for layer in feature["layers"]] == ["embeddings"]
        np.testing.assert_allclose(feature["layers"][0]["values"], embeddings[position], atol=2e-6)
    with pytest.raises(SystemExit) as exit_info:
        recipe.main(flags + ["--feature_mode=top"])
    assert exit_info.value.code == 2 and "--feature_mode: invalid choice: 'top'" in capsys.readouterr().err
