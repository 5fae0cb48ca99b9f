"""The pretraining objectives of the paper's Table 5 and the held-out perplexity of Table 6.

Causal attention (BertConfig.attention_direction="causal") against perturbed later tokens and against
transformers' `is_decoder=True` BertModel; masked-LM-only and left-to-right-LM pretrainers against their
loss formulas computed by hand (numpy log-softmax of the model's logits) and against transformers'
BertForMaskedLM / BertLMHeadModel; the perplexity against exp of the token-weighted mean nll over two
batches; recipes/pretrain.py --objective=mlm and ltr end to end.
"""

import json
import os

import keras
import numpy as np
import pytest

# TensorFlow by nature: deselected with -m "not tensorflow", skipped where TensorFlow is not installed.
pytestmark = pytest.mark.tensorflow
tf = pytest.importorskip("tensorflow")

from keras_bert_impl.checkpoints import checkpoint_files, keras_hub_preset
from keras_bert_impl.config import BertConfig
from keras_bert_impl.data import tf_pretraining_datasets, tf_pretraining_objectives, tf_pretraining_records
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.pretrainer import BertPretrainer
from keras_bert_impl.training import resumable
from keras_bert_impl.utils.errors import UserInputError
from tests.backend_utils import to_numpy
from tests.test_pretrain_recipe import load_recipe
from tests.test_training import MAX_PREDICTIONS, SEQ_LEN, write_tiny_data


TINY = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
CAUSAL = BertConfig(**dict(TINY.to_dict(), attention_direction="causal"))


def _inputs(seed=0, batch=3, seq=10):
    """Token ids [batch, seq] with padding on rows 1 and 2, and a two-segment layout."""
    rng = np.random.RandomState(seed)
    token_ids = rng.randint(5, TINY.vocab_size, size=(batch, seq)).astype("int32")
    padding_mask = np.ones((batch, seq), "int32")
    padding_mask[1, 7:] = 0
    padding_mask[2, 4:] = 0
    segment_ids = (np.arange(seq)[None] >= 5).astype("int32").repeat(batch, 0) * padding_mask
    return {"token_ids": token_ids * padding_mask, "segment_ids": segment_ids, "padding_mask": padding_mask}


def _log_softmax(logits):
    logits = np.asarray(logits, "float64")
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def _nll(logits, ids):
    """-log p(ids) [...] from logits [..., V]."""
    return -np.take_along_axis(_log_softmax(logits), np.asarray(ids)[..., None].astype("int64"), -1)[..., 0]


def _next_token_targets(x):
    ids, mask = x["token_ids"], x["padding_mask"]
    pad = np.zeros_like(ids[:, :1])
    return {"next_token_ids": np.concatenate([ids[:, 1:], pad], 1),
            "next_token_weights": np.concatenate([mask[:, 1:], pad], 1).astype("float32")}


# ------------------------------------------------------------------------------------ config
def test_attention_direction_round_trips_through_config_files_and_refuses_other_values(tmp_path):
    assert TINY.attention_direction == "bidirectional"
    assert BertConfig.from_dict(CAUSAL.to_dict()) == CAUSAL
    CAUSAL.to_json_file(tmp_path / "bert_config.json")
    assert json.loads((tmp_path / "bert_config.json").read_text())["attention_direction"] == "causal"
    assert BertConfig.from_json_file(tmp_path / "bert_config.json") == CAUSAL
    # transformers' causal BertModel: is_decoder without cross-attention.
    hf = dict(TINY.to_dict(), is_decoder=True)
    del hf["attention_direction"]
    assert BertConfig.from_dict(hf) == CAUSAL
    with pytest.raises(ValueError, match=r"attention_direction must be one of bidirectional, causal; got 'left'"):
        BertConfig(attention_direction="left")
    with pytest.raises(ValueError, match="cross-attention"):
        BertConfig.from_dict(dict(hf, add_cross_attention=True))
    with pytest.raises(ValueError, match="is_decoder=true .* contradicts attention_direction='bidirectional'"):
        BertConfig.from_dict(dict(TINY.to_dict(), is_decoder=True))
    # Fine-tuning recipes: a --bert_config_file that does not state the direction keeps the checkpoint's.
    from argparse import Namespace

    from keras_bert_impl.tasks.base import config_overrides

    google = {k: v for k, v in TINY.to_dict().items() if k != "attention_direction"}
    (tmp_path / "google.json").write_text(json.dumps(google))
    assert "attention_direction" not in config_overrides(Namespace(bert_config_file=str(tmp_path / "google.json")))
    assert config_overrides(Namespace(bert_config_file=str(tmp_path / "bert_config.json")))["attention_direction"] == "causal"
    # keras-hub's BertBackbone has no causal option.
    with pytest.raises(UserInputError, match="attention_direction='causal': keras-hub's BertBackbone"):
        keras_hub_preset.check_preset_config(BertConfig.preset("bert_tiny", attention_direction="causal",
                                                               hidden_act="gelu_approximate"))


# ------------------------------------------------------------------------------ causal attention
def test_causal_attention_gives_no_information_from_later_tokens_and_bidirectional_does():
    keras.utils.set_random_seed(0)
    causal = BertBackbone(CAUSAL)
    bidirectional = BertBackbone(TINY)
    bidirectional.set_weights(causal.get_weights())
    x = _inputs()
    # One batch: the 3 rows, then the 3 rows with every token after t replaced, for t = 0, 2, 5.
    cuts = (0, 2, 5)
    changed_ids = [np.where(np.arange(10)[None] > t, 7, x["token_ids"]) for t in cuts]
    stacked = {k: np.concatenate([v] * (1 + len(cuts))) for k, v in x.items()}
    stacked["token_ids"] = np.concatenate([x["token_ids"], *changed_ids]).astype("int32")
    for backbone, hides in ((causal, True), (bidirectional, False)):
        outputs = to_numpy(backbone(stacked)["sequence_output"]).reshape(1 + len(cuts), 3, 10, -1)
        for i, t in enumerate(cuts):
            before, after = outputs[0, :, : t + 1], outputs[1 + i, :, : t + 1]
            if hides:
                np.testing.assert_allclose(after, before, atol=1e-6)
            else:
                assert np.abs(after - before).max() > 1e-3
    # The [CLS]-only last layer of the task models (output_range=1) and a classifier on it: [CLS] reads
    # position 0 alone.
    np.testing.assert_allclose(to_numpy(causal.pooled_output(x)), to_numpy(causal(x)["pooled_output"]), atol=1e-6)
    classifier = BertClassifier(causal, num_classes=2, dropout=0.0)
    changed = dict(x, token_ids=np.where(np.arange(10)[None] > 0, 9, x["token_ids"]).astype("int32"))
    np.testing.assert_allclose(to_numpy(classifier(changed)), to_numpy(classifier(x)), atol=1e-6)


def test_causal_backbone_equals_transformers_decoder_bert_model_and_saves_is_decoder(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    hf_config = transformers.BertConfig(
        vocab_size=TINY.vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=16, is_decoder=True,
    )
    hf_model = transformers.BertModel(hf_config).eval()
    hf_model.save_pretrained(tmp_path / "hf", safe_serialization=True)
    x = _inputs()
    real = x["padding_mask"].astype(bool)

    def hf_sequence_output(model):
        with torch.no_grad():
            out = model(input_ids=torch.tensor(x["token_ids"]).long(), token_type_ids=torch.tensor(x["segment_ids"]).long(),
                        attention_mask=torch.tensor(x["padding_mask"]).long(), use_cache=False)
        return out.last_hidden_state.numpy()

    backbone = BertBackbone.from_pretrained(tmp_path / "hf")
    assert backbone.config.attention_direction == "causal"
    ours = to_numpy(backbone(x)["sequence_output"])
    np.testing.assert_allclose(ours[real], hf_sequence_output(hf_model)[real], atol=1e-5)
    backbone.save_pretrained(tmp_path / "ours")
    written = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert written["is_decoder"] is True and written["attention_direction"] == "causal"
    reloaded = transformers.BertModel.from_pretrained(tmp_path / "ours").eval()
    assert reloaded.config.is_decoder
    np.testing.assert_allclose(hf_sequence_output(reloaded)[real], ours[real], atol=1e-5)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="SavedModel export runs under TensorFlow")
def test_exported_saved_model_of_a_causal_classifier_keeps_causal_outputs(tmp_path):
    from keras_bert_impl.export.tf_saved_model import export_saved_model

    keras.utils.set_random_seed(1)
    model = BertClassifier(BertBackbone(CAUSAL), num_classes=2, dropout=0.0)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(55)]) + "\n")
    export_saved_model(model, str(vocab), str(tmp_path / "saved"), "classifier", labels=["a", "b"], max_seq_length=10)
    serve = tf.saved_model.load(str(tmp_path / "saved")).signatures["serving_token_ids"]
    x = _inputs()
    changed = dict(x, token_ids=np.where(np.arange(10)[None] > 0, 9, x["token_ids"]).astype("int32"))
    served, served_changed = (list(serve(**{k: tf.constant(v) for k, v in batch.items()}).values())[0].numpy()
                              for batch in (x, changed))
    np.testing.assert_allclose(served, to_numpy(model(x)), atol=1e-5)
    np.testing.assert_allclose(served_changed, served, atol=1e-6)  # [CLS] sees position 0 only


# ---------------------------------------------------------------------------------- objectives
def _masked_lm_batch(seed=0):
    x = _inputs(seed)
    x["masked_lm_positions"] = np.array([[1, 3, 8], [2, 5, 0], [1, 0, 0]], "int32")
    y = {"masked_lm_ids": np.random.RandomState(seed).randint(5, TINY.vocab_size, (3, 3)).astype("int32"),
         "masked_lm_weights": np.array([[1, 1, 1], [1, 1, 0], [1, 0, 0]], "float32"),
         "next_sentence_labels": np.array([0, 1, 0], "int32")}
    return x, y


def test_mlm_only_pretrainer_has_no_nsp_weights_its_loss_is_the_masked_lm_formula_and_it_saves_as_masked_lm(tmp_path):
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    keras.utils.set_random_seed(2)
    model = BertPretrainer(BertBackbone(TINY), objective="mlm")
    assert not [w.path for w in model.weights if "next_sentence" in w.path]
    assert [w.path for w in BertPretrainer(BertBackbone(TINY)).weights if "next_sentence" in w.path]
    x, y = _masked_lm_batch()
    outputs = model(x)
    assert sorted(outputs) == ["masked_lm_logits"]
    nll = _nll(to_numpy(outputs["masked_lm_logits"]), y["masked_lm_ids"])
    expected = (nll * y["masked_lm_weights"]).sum() / (y["masked_lm_weights"].sum() + 1e-5)
    total, mlm, nsp = (float(to_numpy(v)) for v in model.pretraining_losses(y, outputs))
    assert total == pytest.approx(expected, rel=1e-5) and mlm == total and nsp == 0.0
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    y_mlm = {k: v for k, v in y.items() if k != "next_sentence_labels"}  # what objective_dataset gives
    history = model.fit(x, y_mlm, epochs=2, batch_size=3, verbose=0).history
    assert sorted(history) == ["loss", "masked_lm_accuracy", "masked_lm_loss", "masked_lm_perplexity"]
    assert history["loss"][0] == pytest.approx(expected, rel=1e-5)  # one batch: the loss before its update
    assert history["loss"][-1] < history["loss"][0]
    outputs = model(x)

    # .keras and save_pretrained keep the objective; the directory is a BertForMaskedLM for transformers.
    model.save(tmp_path / "m.keras")
    reloaded = keras.saving.load_model(tmp_path / "m.keras")
    assert reloaded.objective == "mlm" and reloaded.next_sentence_head is None
    np.testing.assert_allclose(to_numpy(reloaded(x)["masked_lm_logits"]), to_numpy(model(x)["masked_lm_logits"]),
                               atol=1e-6)
    model.save_pretrained(tmp_path / "hf")
    weights = checkpoint_files.read_safetensors(str(tmp_path / "hf" / "model.safetensors"))
    assert "cls.predictions.bias" in weights and not [k for k in weights if "seq_relationship" in k]
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"] == ["BertForMaskedLM"]
    assert BertPretrainer.from_pretrained(tmp_path / "hf").objective == "mlm"
    hf = transformers.BertForMaskedLM.from_pretrained(tmp_path / "hf").eval()
    with torch.no_grad():
        hf_logits = hf(input_ids=torch.tensor(x["token_ids"]).long(), token_type_ids=torch.tensor(x["segment_ids"]).long(),
                       attention_mask=torch.tensor(x["padding_mask"]).long()).logits.numpy()
    hf_at_positions = np.take_along_axis(hf_logits, x["masked_lm_positions"][..., None].astype("int64"), 1)
    np.testing.assert_allclose(to_numpy(model(x)["masked_lm_logits"]), hf_at_positions, atol=1e-4)


def test_ltr_loss_is_the_next_token_cross_entropy_over_real_next_tokens(tmp_path):
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="objective='ltr' .* needs a causal backbone"):
        BertPretrainer(BertBackbone(TINY), objective="ltr")
    with pytest.raises(ValueError, match="objective must be one of mlm_nsp, sop, mlm, ltr; got 'nsp'"):
        BertPretrainer(BertBackbone(TINY), objective="nsp")
    keras.utils.set_random_seed(3)
    model = BertPretrainer(BertBackbone(CAUSAL), objective="ltr")
    assert not [w.path for w in model.weights if "next_sentence" in w.path]
    x = _inputs()
    y = _next_token_targets(x)
    logits = to_numpy(model(x)["lm_logits"])  # [3, 10, V]
    assert logits.shape == (3, 10, TINY.vocab_size)
    # By hand: position t predicts token t + 1 wherever t + 1 is a real token.
    nll, count = 0.0, 0
    for b in range(3):
        length = int(x["padding_mask"][b].sum())
        for t in range(length - 1):
            nll += _nll(logits[b, t], x["token_ids"][b, t + 1])
            count += 1
    expected = nll / count
    total, lm, nsp = (float(to_numpy(v)) for v in model.pretraining_losses(y, model(x)))
    assert total == pytest.approx(expected, rel=1e-5) and lm == total and nsp == 0.0
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    evaluation = model.evaluate(x, y, batch_size=3, verbose=0, return_dict=True)
    assert sorted(evaluation) == ["lm_accuracy", "lm_loss", "lm_perplexity", "loss"]
    assert evaluation["loss"] == pytest.approx(expected, rel=1e-5)
    assert evaluation["lm_perplexity"] == pytest.approx(np.exp(expected), rel=1e-5)  # one batch: exp(loss)

    # transformers' BertLMHeadModel on the saved directory: the same logits, and its shifted loss.
    model.save_pretrained(tmp_path / "hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["BertLMHeadModel"] and config["is_decoder"] is True
    hf = transformers.BertLMHeadModel.from_pretrained(tmp_path / "hf").eval()
    labels = np.where(x["padding_mask"] > 0, x["token_ids"], -100)
    with torch.no_grad():
        out = hf(input_ids=torch.tensor(x["token_ids"]).long(), token_type_ids=torch.tensor(x["segment_ids"]).long(),
                 attention_mask=torch.tensor(x["padding_mask"]).long(), labels=torch.tensor(labels).long(),
                 use_cache=False)
    real = x["padding_mask"].astype(bool)
    np.testing.assert_allclose(logits[real], out.logits.numpy()[real], atol=1e-4)
    assert float(out.loss) == pytest.approx(expected, rel=1e-4)
    reloaded = BertPretrainer.from_pretrained(tmp_path / "hf")
    assert reloaded.objective == "ltr" and reloaded.backbone.config.attention_direction == "causal"
    BertPretrainer(BertBackbone(TINY)).save_pretrained(tmp_path / "bidirectional")
    with pytest.raises(UserInputError, match="objective='ltr' .* causal checkpoint only"):
        BertPretrainer.from_pretrained(tmp_path / "bidirectional", objective="ltr")


def test_ltr_dataset_restores_the_original_tokens_of_a_masked_record(tmp_path):
    import types

    from keras_bert_impl.data.pretraining_instances import TrainingInstance

    vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4, "b": 5, "c": 6, "d": 7}
    tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    # Original: [CLS] a b [SEP] c d [SEP]; position 2 masked ([MASK]), position 4 replaced by a random "a".
    instance = TrainingInstance(["[CLS]", "a", "[MASK]", "[SEP]", "a", "d", "[SEP]"], [0, 0, 0, 0, 1, 1, 1], False,
                                [2, 4], ["b", "c"])
    path = str(tmp_path / "masked.tfrecord")
    tf_pretraining_records.write_instances_to_example_files([instance], tokenizer, path, 9, 3)
    masked = tf_pretraining_datasets.pretraining_dataset(path, 9, 3, batch_size=1, is_training=False)
    x, y = next(iter(tf_pretraining_objectives.objective_dataset(masked, "ltr")))
    assert sorted(x) == ["padding_mask", "segment_ids", "token_ids"]
    assert x["token_ids"].numpy().tolist() == [[1, 4, 5, 2, 6, 7, 2, 0, 0]]
    assert y["next_token_ids"].numpy().tolist() == [[4, 5, 2, 6, 7, 2, 0, 0, 0]]
    assert y["next_token_weights"].numpy().tolist() == [[1, 1, 1, 1, 1, 1, 0, 0, 0]]
    _, y_mlm = next(iter(tf_pretraining_objectives.objective_dataset(masked, "mlm")))
    assert sorted(y_mlm) == ["masked_lm_ids", "masked_lm_weights"]
    with pytest.raises(ValueError, match="objective must be one of mlm_nsp, sop, mlm, ltr; got 'x'"):
        tf_pretraining_objectives.objective_dataset(masked, "x")


def test_perplexity_is_exp_of_the_token_weighted_mean_nll_over_all_evaluated_batches():
    keras.utils.set_random_seed(4)
    model = BertPretrainer(BertBackbone(TINY))
    model.compile(optimizer="auto")
    # Output biases far from uniform, so that the tokens' nlls (and the batches' means) differ widely.
    spread = np.random.RandomState(5).normal(0.0, 4.0, TINY.vocab_size).astype("float32")
    model.masked_lm_head.output_bias.assign(spread)
    (x1, y1), (x2, y2) = _masked_lm_batch(0), _masked_lm_batch(1)
    y2["masked_lm_weights"] = np.array([[1, 0, 0], [0, 0, 0], [0, 0, 0]], "float32")  # 6 masked tokens, then 1
    batches = [(x1, y1), (x2, y2)]
    dataset = tf.data.Dataset.from_generator(
        lambda: iter(batches),
        output_signature=keras.tree.map_structure(lambda a: tf.TensorSpec(a.shape, tf.as_dtype(a.dtype)), batches[0]),
    )
    nlls = [_nll(to_numpy(model(x)["masked_lm_logits"]), y["masked_lm_ids"]) for x, y in batches]
    weights = [y["masked_lm_weights"] for _, y in batches]
    expected = np.exp(sum((n * w).sum() for n, w in zip(nlls, weights)) / sum(w.sum() for w in weights))
    per_batch_means = [(n * w).sum() / w.sum() for n, w in zip(nlls, weights)]
    assert abs(np.exp(np.mean(per_batch_means)) - expected) > 1e-2 * expected  # the two means differ here
    results = resumable.evaluate(model, dataset)
    assert results["masked_lm_perplexity"] == pytest.approx(expected, rel=1e-5)
    # A diverging model's nll saturates at exp(80) instead of overflowing float32 (which would stop training).
    model.masked_lm_perplexity.reset_state()
    model.masked_lm_perplexity.update_state(np.full((2,), 1000.0, "float32"))
    assert float(to_numpy(model.masked_lm_perplexity.result())) == pytest.approx(np.exp(80.0), rel=1e-5)

    causal = BertPretrainer(BertBackbone(CAUSAL), objective="ltr")
    causal.compile(optimizer="auto")
    causal.masked_lm_head.output_bias.assign(spread)
    ltr_batches = [({k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")}, _next_token_targets(x))
                   for x in (x1, _inputs(1, seq=10))]
    ltr_batches[1][1]["next_token_weights"][1:] = 0.0  # a second batch with fewer predicted tokens
    dataset = tf.data.Dataset.from_generator(
        lambda: iter(ltr_batches),
        output_signature=keras.tree.map_structure(lambda a: tf.TensorSpec(a.shape, tf.as_dtype(a.dtype)), ltr_batches[0]),
    )
    nlls = [_nll(to_numpy(causal(x)["lm_logits"]), y["next_token_ids"]) for x, y in ltr_batches]
    weights = [y["next_token_weights"] for _, y in ltr_batches]
    expected = np.exp(sum((n * w).sum() for n, w in zip(nlls, weights)) / sum(w.sum() for w in weights))
    assert resumable.evaluate(causal, dataset)["lm_perplexity"] == pytest.approx(expected, rel=1e-5)


# ---------------------------------------------------------------------------------------- recipe
@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_tiny_data(str(tmp_path_factory.mktemp("tiny_data")), num_documents=8, dupe_factor=1)


def _recipe_args(data, output_dir, objective):
    return [
        f"--input_file={data['train']}", f"--eval_input_file={data['eval']}", f"--bert_config_file={data['config']}",
        f"--output_dir={output_dir}", "--do_train=True", "--do_eval=True", f"--max_seq_length={SEQ_LEN}",
        f"--max_predictions_per_seq={MAX_PREDICTIONS}", "--train_batch_size=4", "--eval_batch_size=4",
        "--max_eval_steps=2", "--num_train_steps=2", "--num_warmup_steps=1", "--learning_rate=1e-3",
        "--save_checkpoints_steps=2", "--iterations_per_loop=2", "--seed=1", "--verbose=0",
        f"--objective={objective}",
    ]


def test_pretrain_recipe_runs_mlm_only_and_left_to_right_with_perplexity(data, tmp_path, capsys):
    recipe = load_recipe()
    mlm = recipe.main(_recipe_args(data, tmp_path / "mlm", "mlm"))
    assert set(mlm["eval"]) == {"loss", "masked_lm_accuracy", "masked_lm_loss", "masked_lm_perplexity"}
    assert 1.0 < mlm["eval"]["masked_lm_perplexity"] < 2 * 100  # a near-uniform model over 100 tokens
    written = json.loads((tmp_path / "mlm" / "metrics.json").read_text())
    assert written["eval"]["masked_lm_perplexity"] == mlm["eval"]["masked_lm_perplexity"]
    weights = checkpoint_files.read_safetensors(str(tmp_path / "mlm" / "final" / "model.safetensors"))
    assert not [k for k in weights if "seq_relationship" in k]

    ltr = recipe.main(_recipe_args(data, tmp_path / "ltr", "ltr"))
    assert set(ltr["eval"]) == {"loss", "lm_accuracy", "lm_loss", "lm_perplexity"}
    assert 1.0 < ltr["eval"]["lm_perplexity"] < 2 * 100
    config = json.loads((tmp_path / "ltr" / "final" / "config.json").read_text())
    assert config["is_decoder"] is True and config["attention_direction"] == "causal"
    assert os.path.isfile(tmp_path / "ltr" / "metrics.json")

    # A bidirectional --init_checkpoint cannot continue as a left-to-right LM.
    args = _recipe_args(data, tmp_path / "ltr_from_mlm", "ltr")
    args[args.index(f"--bert_config_file={data['config']}")] = f"--init_checkpoint={tmp_path / 'mlm' / 'final'}"
    with pytest.raises(SystemExit) as exit_info:
        recipe.main(args)
    assert exit_info.value.code == 2
    assert "error: --objective=ltr: --init_checkpoint" in capsys.readouterr().err
