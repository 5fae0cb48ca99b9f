"""BertFeatureBasedTagger (the paper's Table 7): frozen backbone features = concatenated top-4 layers, BiLSTMs
that ignore padding, a masked loss, training that moves only the tagger's weights."""

import keras
import numpy as np
import pytest

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.feature_based_tagger import BertFeatureBasedTagger
from tests.backend_utils import inference, to_numpy

TINY = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=4, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=32, hidden_dropout_prob=0.3)  # dropout that frozen features must not see


def _data(batch=12, seq=10, seed=0):
    rng = np.random.RandomState(seed)
    token_ids = rng.randint(5, 60, size=(batch, seq)).astype("int32")
    padding_mask = np.ones((batch, seq), "int32")
    for b in range(batch):
        padding_mask[b, rng.randint(5, seq + 1):] = 0
    token_ids *= padding_mask
    labels = np.where(padding_mask > 0, token_ids % 3, -100).astype("int32")  # learnable from the token
    labels[:, 0] = -100
    x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": padding_mask}
    return x, labels


def _tagger(**kwargs):
    return BertFeatureBasedTagger(BertBackbone(TINY, output_hidden_states=True), num_classes=3, lstm_units=8, **kwargs)


def test_features_are_the_concatenated_top_four_layers_of_the_frozen_backbone():
    model = _tagger()
    x, _ = _data()
    features = keras.Model(model.input, model.get_layer("features").output)
    hidden = inference(model.backbone, x)["hidden_states"]
    expected = np.concatenate([hidden[-1], hidden[-2], hidden[-3], hidden[-4]], axis=-1)  # [B, T, 4H]
    # training=True everywhere else: the backbone still runs without dropout.
    np.testing.assert_allclose(inference(features, x, training=True), expected, atol=1e-5)
    assert not model.backbone.trainable
    trainable = {v.path.split("/")[0] for v in model.trainable_variables}
    assert trainable == {"bilstm_0", "bilstm_1", "classifier"}


def test_padding_does_not_change_the_real_positions():
    model = _tagger()
    x, _ = _data(batch=2, seq=6)
    x["padding_mask"][:] = 1
    x["token_ids"][x["token_ids"] == 0] = 7
    padded = {k: np.pad(v, ((0, 0), (0, 4))) for k, v in x.items()}  # 4 padding positions on the right
    np.testing.assert_allclose(inference(model, padded)[:, :6], inference(model, x), atol=1e-5)


def test_training_decreases_the_loss_and_leaves_the_backbone_unchanged():
    model = _tagger()
    x, labels = _data()
    before = [to_numpy(v).copy() for v in model.backbone.weights]
    logits = inference(model, x)
    mask = labels != -100
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    model.compile(optimizer=keras.optimizers.Adam(3e-2))
    assert abs(model.evaluate(x, labels, verbose=0, return_dict=True)["loss"] + log_probs[mask, labels[mask]].mean()) < 1e-5
    history = model.fit(x, labels, epochs=10, batch_size=12, verbose=0).history
    assert history["loss"][-1] < 0.8 * history["loss"][0]
    for a, b in zip(before, model.backbone.weights):
        np.testing.assert_array_equal(a, to_numpy(b))
    decoded = model.decode(inference(model, x), mask)
    assert (decoded[~mask] == -100).all() and decoded[mask].min() >= 0


def test_config_round_trip_and_checks(tmp_path):
    model = _tagger(feature_layers=(-1, -2), num_lstm_layers=1)
    restored = BertFeatureBasedTagger.from_config(model.get_config())
    assert restored.feature_layers == (-1, -2) and restored.num_lstm_layers == 1 and restored.lstm_units == 8
    assert restored.get_layer("features").output.shape[-1] == 2 * TINY.hidden_size
    path = str(tmp_path / "tagger.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    x, _ = _data(batch=2)
    np.testing.assert_allclose(inference(loaded, x), inference(model, x), atol=1e-6)
    assert not loaded.backbone.trainable
    assert {v.path.split("/")[0] for v in loaded.trainable_variables} == {"bilstm_0", "classifier"}  # still frozen
    with pytest.raises(ValueError, match="output_hidden_states=True"):
        BertFeatureBasedTagger(BertBackbone(TINY), num_classes=3)
    with pytest.raises(ValueError, match="feature layer -6 out of range"):
        _tagger(feature_layers=(-6,))


def _trained_tagger(**kwargs):
    """A tagger whose head weights (its trainable ones: the backbone is frozen) are random draws, none at
    its initialization."""
    model = _tagger(**kwargs)  # a functional model: its weights exist once built
    rng = np.random.default_rng(0)
    for variable in model.trainable_weights:
        variable.assign(rng.normal(0.0, 0.5, tuple(variable.shape)).astype("float32"))
    return model


@pytest.mark.parametrize("settings", [{"feature_layers": (-1, -3), "num_lstm_layers": 2},
                                      {"feature_mode": "sum_all", "num_lstm_layers": 1}])
def test_save_pretrained_reloads_the_trained_tagger_with_its_settings(settings, tmp_path):
    model = _trained_tagger(**settings)
    directory = str(tmp_path / "tagger")
    model.save_pretrained(directory, label_names=["O", "B-X", "I-X"])
    loaded = BertFeatureBasedTagger.from_pretrained(directory)  # no settings: the saved tagger's
    assert loaded.newly_initialized_heads == []
    assert (loaded.feature_layers, loaded.feature_combine, loaded.feature_mode, loaded.lstm_units,
            loaded.num_lstm_layers, loaded.num_classes) == (model.feature_layers, model.feature_combine,
                                                            model.feature_mode, 8, model.num_lstm_layers, 3)
    x, _ = _data(batch=4, seed=1)
    np.testing.assert_allclose(inference(loaded, x), inference(model, x), atol=1e-6)
    # The same settings, spelled otherwise, load too; a different one is refused in one line.
    same = {"feature_layers": (4, 2)} if "feature_layers" in settings else {"feature_mode": "sum_all"}
    assert BertFeatureBasedTagger.from_pretrained(directory, **same).newly_initialized_heads == []
    with pytest.raises(ValueError, match=r"saved feature-based tagger has lstm_units=8 .*, not 16"):
        BertFeatureBasedTagger.from_pretrained(directory, lstm_units=16)
    with pytest.raises(ValueError, match="saved feature-based tagger has feature_layers="):
        BertFeatureBasedTagger.from_pretrained(directory, feature_mode="last")


def test_a_plain_checkpoint_gives_a_new_tagger_that_reports_its_untrained_head(tmp_path):
    directory = str(tmp_path / "backbone")
    BertBackbone(TINY).save_pretrained(directory)
    model = BertFeatureBasedTagger.from_pretrained(directory, num_classes=3, lstm_units=8, num_lstm_layers=1)
    assert model.newly_initialized_heads == ["feature-based tagger"]
    assert (model.feature_layers, model.feature_combine) == ((-1, -2, -3, -4), "concat")  # the paper's
    with pytest.raises(ValueError, match="no feature-based tagger in the checkpoint; pass num_classes"):
        BertFeatureBasedTagger.from_pretrained(directory)
