"""The "+ BiLSTM" head option (the paper's Table 5) of BertTokenClassifier and BertSpanQA, on a tiny model: the
logits at the real positions of a padded sequence equal those of the unpadded sequence (padding feeds neither
direction of the BiLSTM); fit lowers the loss; `.keras` and
save_pretrained / from_pretrained reload the same predictions; without the option the model is the original
head on sequence_output."""

import json
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.span_qa import BertSpanQA
from keras_bert_impl.models.token_classifier import BertTokenClassifier
from tests.backend_utils import to_numpy

TINY = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
UNITS, NUM_CLASSES, LENGTH, REAL = 4, 3, 8, 5


def _inputs(pad_id=0):
    """A batch of 2: row 0 has 5 real tokens and 3 padded ones (token id `pad_id`), row 1 is unpadded."""
    ids = np.array([[2, 5, 6, 7, 3] + [pad_id] * 3, [2, 8, 9, 10, 11, 12, 13, 3]], "int32")
    mask = np.array([[1] * REAL + [0] * 3, [1] * LENGTH], "int32")
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}


def _tagger():
    keras.utils.set_random_seed(3)
    return BertTokenClassifier(BertBackbone(TINY), NUM_CLASSES, dropout=0.0, bilstm_units=UNITS)


@pytest.fixture(scope="module")
def models():
    """A token classifier and a span QA model with a 4-unit BiLSTM (building one takes seconds on JAX)."""
    return _tagger(), BertSpanQA(BertBackbone(TINY), bilstm_units=UNITS)


def test_bilstm_heads_shapes_and_padding_does_not_reach_the_real_positions(models):
    tagger, qa = models
    x = _inputs()
    logits = to_numpy(tagger(x))
    assert logits.shape == (2, LENGTH, NUM_CLASSES) and tagger.bilstm.forward_layer.units == UNITS
    # Row 0 alone without its padding: the reference of a BiLSTM (both directions) that padding does not reach.
    unpadded = to_numpy(tagger({k: v[:1, :REAL] for k, v in x.items()}))
    np.testing.assert_allclose(logits[0, :REAL], unpadded[0], atol=1e-5)
    outputs = qa(x)
    start, end = to_numpy(outputs["start_logits"]), to_numpy(outputs["end_logits"])
    assert start.shape == end.shape == (2, LENGTH)
    other = to_numpy(qa(_inputs(pad_id=17))["start_logits"])  # other token ids at the padded positions
    np.testing.assert_allclose(other[0, :REAL], start[0, :REAL], atol=1e-6)
    # The masked BiLSTM's output at a padded position is zero: the span logits there are the layer's bias.
    np.testing.assert_allclose(start[0, REAL:], np.full(LENGTH - REAL, to_numpy(qa.qa_outputs.bias)[0]), atol=1e-6)


def test_without_bilstm_units_the_heads_are_the_original_dense_on_sequence_output():
    keras.utils.set_random_seed(3)
    tagger = BertTokenClassifier(BertBackbone(TINY), NUM_CLASSES, dropout=0.0)
    qa = BertSpanQA(BertBackbone(TINY))
    x = _inputs()
    for model, dense in ((tagger, tagger.classifier), (qa, qa.qa_outputs)):
        assert model.bilstm is None and model.get_config()["bilstm_units"] is None
        assert not any(isinstance(layer, keras.layers.Bidirectional) for layer in model.layers)
        assert len(model.weights) == len(model.backbone.weights) + 2  # the Dense kernel and bias only
        want = to_numpy(dense(model.backbone(x)["sequence_output"]))
        got = model(x)
        got = to_numpy(got) if model is tagger else np.stack([to_numpy(got["start_logits"]),
                                                              to_numpy(got["end_logits"])], -1)
        np.testing.assert_allclose(got, want, atol=1e-6)
    settings = {type(m).__name__: m.config_entries(None) for m in (tagger, qa)}
    assert "bilstm_units" not in settings["BertTokenClassifier"] and settings["BertSpanQA"] == {}


def test_bilstm_head_fit_lowers_the_loss():
    # The token classifier only: the span head's BiLSTM is the same layer (`models.task_model.bilstm_layer`), and
    # compiling a masked LSTM's train step takes about 10 s on TensorFlow on a 2-core CPU.
    tagger = _tagger()
    labels = np.full((2, LENGTH), -100, "int32")
    labels[0, 1:4], labels[1, 1:7] = [0, 1, 2], [2, 1, 0, 0, 1, 2]
    tagger.compile(optimizer=keras.optimizers.Adam(3e-2))
    losses = tagger.fit(_inputs(), labels, epochs=12, batch_size=2, verbose=0).history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < 0.7 * losses[0], losses


def test_bilstm_heads_reload_from_keras_files_and_pretrained_directories(models, tmp_path):
    tagger, qa = models
    x = _inputs()
    for model, name in ((tagger, "tagger"), (qa, "qa")):
        want = keras.tree.map_structure(to_numpy, model(x))
        path = str(tmp_path / f"{name}.keras")
        model.save(path)
        reloaded = keras.models.load_model(path)
        assert reloaded.bilstm_units == UNITS
        keras.tree.map_structure(np.testing.assert_array_equal, keras.tree.map_structure(to_numpy, reloaded(x)), want)
        directory = tmp_path / name
        model.save_pretrained(directory)
        with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
            assert json.load(f)["bilstm_units"] == UNITS
        loaded = type(model).from_pretrained(directory)
        assert loaded.bilstm_units == UNITS and loaded.newly_initialized_heads == []
        keras.tree.map_structure(np.testing.assert_array_equal, keras.tree.map_structure(to_numpy, loaded(x)), want)
        with pytest.raises(ValueError, match="BiLSTM of 4 units"):
            type(model).from_pretrained(directory, bilstm_units=8)
    with pytest.raises(ValueError, match="bilstm_units must be None"):
        BertSpanQA(BertBackbone(TINY), bilstm_units=0)


def test_ner_and_squad_recipes_build_the_bilstm_head_from_the_flag(tmp_path, capsys):
    from keras_bert_impl.runners.flags import config_from_flags
    from keras_bert_impl.tasks.ner import NerConfig, NerTask
    from keras_bert_impl.tasks.squad import SquadConfig, SquadTask
    from tests.finetuning_files import load_recipe

    config = str(tmp_path / "bert_config.json")
    TINY.to_json_file(config)
    common = [f"--bert_config_file={config}", f"--vocab_file={config}", f"--output_dir={tmp_path / 'out'}"]
    ner_args = load_recipe("run_ner").build_parser().parse_args([*common, "--do_train", "--bilstm_units=4"])
    ner = NerTask(config_from_flags(NerConfig, ner_args))
    ner.label_list = ["O", "B-PER", "I-PER"]
    squad_args = load_recipe("run_squad").build_parser().parse_args([*common, "--do_predict", "--predict_file=x",
                                                                      "--bilstm_units=4"])
    for model in (ner.build_model(), SquadTask(config_from_flags(SquadConfig, squad_args)).build_model()):
        assert model.bilstm_units == 4 and model.bilstm.forward_layer.units == 4
    assert load_recipe("run_ner").build_parser().parse_args(common).bilstm_units is None
    with pytest.raises(SystemExit) as exit:
        load_recipe("run_ner").main([*common, "--do_train", "--feature_based", "--bilstm_units=4"])
    stderr = capsys.readouterr().err.strip()
    assert exit.value.code == 2 and len(stderr.splitlines()) == 1 and "--bilstm_units" in stderr, stderr
    with pytest.raises(SystemExit):
        load_recipe("run_squad").main([*common, "--do_predict", "--predict_file=x", "--bilstm_units=0"])
    assert "--bilstm_units" in capsys.readouterr().err
