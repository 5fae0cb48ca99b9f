"""Loading real checkpoints: parity with transformers on all-MiniLM-L6-v2, Google TF1 layout, heads, errors."""

import json
import os
import shutil

import numpy as np
import pytest

from keras_bert_impl.checkpoints import weight_tables
from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.checkpoints.model_directory import ModelDirectory
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.config import BertConfig
from tests.backend_utils import to_numpy

torch = pytest.importorskip("torch")  # a dev dependency: installed by the README's test command
transformers = pytest.importorskip("transformers")

SENTENCE_PAIRS = [
    ("A man is eating food.", "A man is eating a piece of bread."),
    ("The girl is carrying a baby.", "A woman is playing violin, and the crowd claps loudly at the end."),
    ("Résumé writing in München, naïvely.", "Two men pushed carts through the woods."),
]


@pytest.fixture(scope="module")
def batch(minilm_path):
    tokenizer = transformers.BertTokenizerFast.from_pretrained(minilm_path)
    first, second = zip(*SENTENCE_PAIRS)
    enc = tokenizer(list(first), list(second), padding=True, return_tensors="np")
    assert enc["attention_mask"].min() == 0, "the batch must contain padding"
    return {
        "token_ids": enc["input_ids"].astype("int32"),
        "segment_ids": enc["token_type_ids"].astype("int32"),
        "padding_mask": enc["attention_mask"].astype("int32"),
    }


def _torch_outputs(model, batch):
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor(batch["token_ids"]).long(),
            token_type_ids=torch.tensor(batch["segment_ids"]).long(),
            attention_mask=torch.tensor(batch["padding_mask"]).long(),
        )
    return out.last_hidden_state.numpy(), out.pooler_output.numpy()


@pytest.fixture(scope="module")
def reference(minilm_path, batch):
    """transformers' BertModel on the real weights, fp32, eval mode."""
    return _torch_outputs(transformers.BertModel.from_pretrained(minilm_path).eval(), batch)


def _max_diffs(backbone, batch, reference):
    outputs = backbone(batch)
    real = batch["padding_mask"].astype(bool)
    sequence_diff = np.abs(to_numpy(outputs["sequence_output"]) - reference[0])[real].max()
    pooled_diff = np.abs(to_numpy(outputs["pooled_output"]) - reference[1]).max()
    return sequence_diff, pooled_diff


def test_real_checkpoint_matches_transformers_bert_model(minilm_path, batch, reference):
    backbone = BertBackbone.from_pretrained(minilm_path)
    sequence_diff, pooled_diff = _max_diffs(backbone, batch, reference)
    assert sequence_diff <= 1e-4 and pooled_diff <= 1e-4, (sequence_diff, pooled_diff)


@pytest.mark.tensorflow
def test_google_tf1_checkpoint_of_the_same_weights_gives_the_same_outputs(minilm_path, batch, reference, tmp_path):
    from keras_bert_impl.checkpoints import tf1_checkpoint

    checkpoint = ModelDirectory(minilm_path)
    config, weights = checkpoint.bert_config(), checkpoint.read_weights()
    config_dict = {k: v for k, v in config.to_dict().items() if k != "layer_norm_eps"}  # Google's file has none
    (tmp_path / "bert_config.json").write_text(json.dumps(config_dict))
    tf1_checkpoint.write_tf1_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))

    import tensorflow as tf

    stored = dict(tf.train.list_variables(str(tmp_path / "bert_model.ckpt")))
    assert stored["bert/embeddings/word_embeddings"] == [30522, 384]
    assert stored["bert/encoder/layer_0/attention/self/query/kernel"] == [384, 384]
    assert stored["bert/encoder/layer_5/output/LayerNorm/gamma"] == [384]
    assert stored["bert/pooler/dense/kernel"] == [384, 384]
    query_kernel = tf.train.load_checkpoint(str(tmp_path / "bert_model.ckpt")).get_tensor(
        "bert/encoder/layer_0/attention/self/query/kernel"
    )
    np.testing.assert_array_equal(query_kernel, weights["encoder.layer.0.attention.self.query.weight"].T)

    for path in (tmp_path, tmp_path / "bert_model.ckpt"):  # a directory or the checkpoint prefix
        backbone = BertBackbone.from_pretrained(path)
        sequence_diff, pooled_diff = _max_diffs(backbone, batch, reference)
        assert sequence_diff <= 1e-4 and pooled_diff <= 1e-4, (sequence_diff, pooled_diff)


def _hf_model_with_minilm_body(model_class, minilm_path, **config_kwargs):
    torch.manual_seed(0)
    config = transformers.BertConfig.from_pretrained(minilm_path, **config_kwargs)
    model = model_class(config).eval()
    body = transformers.BertModel.from_pretrained(minilm_path)
    model.bert.load_state_dict(body.state_dict(), strict=False)
    return model


def test_bert_for_pretraining_directory_loads_backbone_and_keeps_head_weights(minilm_path, batch, reference, tmp_path):
    model = _hf_model_with_minilm_body(transformers.BertForPreTraining, minilm_path)
    model.save_pretrained(tmp_path)
    backbone = BertBackbone.from_pretrained(tmp_path)
    sequence_diff, pooled_diff = _max_diffs(backbone, batch, reference)
    assert sequence_diff <= 1e-4 and pooled_diff <= 1e-4
    heads = backbone.head_weights
    np.testing.assert_array_equal(
        heads["cls.predictions.transform.dense.weight"], model.cls.predictions.transform.dense.weight.detach().numpy()
    )
    np.testing.assert_array_equal(heads["cls.predictions.bias"], model.cls.predictions.bias.detach().numpy())
    np.testing.assert_array_equal(heads["cls.seq_relationship.weight"], model.cls.seq_relationship.weight.detach().numpy())
    assert heads["cls.predictions.transform.LayerNorm.weight"].shape == (384,)


def test_pytorch_model_bin_with_bert_prefix_and_classifier_head(minilm_path, batch, reference, tmp_path):
    model = _hf_model_with_minilm_body(transformers.BertForSequenceClassification, minilm_path, num_labels=3)
    shutil.copy(os.path.join(minilm_path, "config.json"), tmp_path / "config.json")
    state = model.state_dict()
    assert any(k.startswith("bert.") for k in state)
    torch.save(state, tmp_path / "pytorch_model.bin")
    backbone = BertBackbone.from_pretrained(tmp_path)
    sequence_diff, pooled_diff = _max_diffs(backbone, batch, reference)
    assert sequence_diff <= 1e-4 and pooled_diff <= 1e-4
    np.testing.assert_array_equal(backbone.head_weights["classifier.weight"], model.classifier.weight.detach().numpy())
    assert backbone.head_weights["classifier.bias"].shape == (3,)


@pytest.mark.tensorflow
def test_google_head_weights_are_read_in_hugging_face_layout(tmp_path):
    from keras_bert_impl.checkpoints import tf1_checkpoint

    config = BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
    backbone = BertBackbone(config)
    weights = weight_tables.backbone_weights_dict(backbone)
    rng = np.random.RandomState(0)
    heads_tf1 = {
        "cls/predictions/transform/dense/kernel": rng.normal(size=(8, 8)),
        "cls/predictions/transform/LayerNorm/gamma": rng.normal(size=(8,)),
        "cls/predictions/output_bias": rng.normal(size=(20,)),
        "cls/seq_relationship/output_weights": rng.normal(size=(2, 8)),  # [2, H]: already [out, in]
        "cls/seq_relationship/output_bias": rng.normal(size=(2,)),
        "cls/squad/output_weights": rng.normal(size=(2, 8)),
        "output_weights": rng.normal(size=(3, 8)),
        "global_step": np.array(7),
    }
    import tensorflow as tf

    names = [tf1_checkpoint.canonical_to_tf1(k)[0] for k in weights] + list(heads_tf1)
    tensors = [tf.constant(v.T if tf1_checkpoint.canonical_to_tf1(k)[1] else v, dtype="float32") for k, v in weights.items()]
    tensors += [tf.constant(v, dtype="int64" if k == "global_step" else "float32") for k, v in heads_tf1.items()]
    tf.raw_ops.SaveV2(prefix=str(tmp_path / "bert_model.ckpt"), tensor_names=names, shape_and_slices=[""] * len(names), tensors=tensors)
    config.to_json_file(tmp_path / "bert_config.json")

    loaded = BertBackbone.from_pretrained(tmp_path)
    heads = loaded.head_weights
    np.testing.assert_allclose(heads["cls.predictions.transform.dense.weight"], heads_tf1["cls/predictions/transform/dense/kernel"].T, rtol=1e-6)
    np.testing.assert_allclose(heads["cls.seq_relationship.weight"], heads_tf1["cls/seq_relationship/output_weights"], rtol=1e-6)
    np.testing.assert_allclose(heads["cls.predictions.bias"], heads_tf1["cls/predictions/output_bias"], rtol=1e-6)
    np.testing.assert_allclose(heads["qa_outputs.weight"], heads_tf1["cls/squad/output_weights"], rtol=1e-6)
    np.testing.assert_allclose(heads["classifier.weight"], heads_tf1["output_weights"], rtol=1e-6)
    assert "global_step" not in heads


@pytest.mark.tensorflow
def test_tf1_names_translate_both_ways_for_every_weight():
    from keras_bert_impl.checkpoints import tf1_checkpoint

    config = BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16)
    names = [name for name, *_ in weight_tables.backbone_weight_table(BertBackbone(config))]
    names += ["cls.predictions.transform.dense.weight", "cls.predictions.transform.LayerNorm.bias", "cls.predictions.bias",
              "cls.seq_relationship.weight", "classifier.bias", "qa_outputs.weight"]
    for name in names:
        tf1_name, transpose = tf1_checkpoint.canonical_to_tf1(name)
        assert tf1_checkpoint.tf1_to_canonical(tf1_name) == (name, transpose)
    assert tf1_checkpoint.canonical_to_tf1("encoder.layer.1.attention.output.LayerNorm.weight") == (
        "bert/encoder/layer_1/attention/output/LayerNorm/gamma", False)
    assert tf1_checkpoint.tf1_to_canonical("bert/encoder/layer_0/attention/self/query/kernel/adam_m") is None


def test_save_pretrained_round_trips_and_transformers_reads_it(minilm_path, batch, reference, tmp_path):
    backbone = BertBackbone.from_pretrained(minilm_path)
    backbone.save_pretrained(tmp_path)
    assert not any(name.endswith(".tmp") for name in os.listdir(tmp_path))
    again = BertBackbone.from_pretrained(tmp_path)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(to_numpy(again(batch)[key]), to_numpy(backbone(batch)[key]))
    theirs = _torch_outputs(transformers.BertModel.from_pretrained(tmp_path).eval(), batch)
    np.testing.assert_allclose(theirs[1], reference[1], atol=1e-6)


# ------------------------------------------------------------------------------------------ errors
def _copy_config(minilm_path, directory, **changes):
    config = json.loads(open(os.path.join(minilm_path, "config.json")).read())
    config.update(changes)
    (directory / "config.json").write_text(json.dumps(config))


def _link_weights(minilm_path, directory):
    os.symlink(os.path.join(minilm_path, "model.safetensors"), directory / "model.safetensors")


def test_missing_checkpoint_and_missing_weights_are_named(minilm_path, tmp_path):
    with pytest.raises(FileNotFoundError, match="No checkpoint at .*nowhere"):
        BertBackbone.from_pretrained(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="no config.json or bert_config.json"):
        BertBackbone.from_pretrained(tmp_path)
    _copy_config(minilm_path, tmp_path)
    with pytest.raises(FileNotFoundError, match="no weights found; expected model.safetensors"):
        BertBackbone.from_pretrained(tmp_path)


def test_shape_mismatch_names_the_variable_and_both_shapes(minilm_path, tmp_path):
    _copy_config(minilm_path, tmp_path, intermediate_size=1000)
    _link_weights(minilm_path, tmp_path)
    with pytest.raises(ValueError, match=r"encoder.layer.0.intermediate.dense.weight: the checkpoint has \(1536, 384\), "
                                         r"the model built from its config expects \(1000, 384\)"):
        BertBackbone.from_pretrained(tmp_path)


def test_config_contradicting_the_layer_count_is_refused(minilm_path, tmp_path):
    _copy_config(minilm_path, tmp_path, num_hidden_layers=4)
    _link_weights(minilm_path, tmp_path)
    with pytest.raises(ValueError, match="config says num_hidden_layers=4 but the checkpoint has 6 encoder layers"):
        BertBackbone.from_pretrained(tmp_path)


def test_unsupported_architectures_are_refused(minilm_path, tmp_path):
    _copy_config(minilm_path, tmp_path, model_type="roberta")
    _link_weights(minilm_path, tmp_path)
    with pytest.raises(ValueError, match="unsupported architecture model_type='roberta'"):
        BertBackbone.from_pretrained(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _copy_config(minilm_path, other)
    from safetensors.numpy import save_file

    save_file({"roberta.embeddings.word_embeddings.weight": np.zeros((2, 2), "float32")}, str(other / "model.safetensors"))
    with pytest.raises(ValueError, match="unsupported architecture: the weights are those of roberta"):
        BertBackbone.from_pretrained(other)


def test_missing_weights_are_listed(minilm_path, tmp_path):
    _copy_config(minilm_path, tmp_path)
    from safetensors.numpy import load_file, save_file

    weights = load_file(os.path.join(minilm_path, "model.safetensors"))
    del weights["pooler.dense.weight"]
    save_file(weights, str(tmp_path / "model.safetensors"))
    with pytest.raises(ValueError, match="missing weights pooler.dense.weight"):
        BertBackbone.from_pretrained(tmp_path)


@pytest.mark.tensorflow
def test_unreadable_tf1_checkpoint_is_reported(minilm_path, tmp_path):
    _copy_config(minilm_path, tmp_path)
    (tmp_path / "bert_model.ckpt.index").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a readable TensorFlow checkpoint"):
        BertBackbone.from_pretrained(tmp_path)


def test_a_checkpoint_without_pooler_loads_only_when_allowed(minilm_path, batch, reference, tmp_path):
    _copy_config(minilm_path, tmp_path)
    from safetensors.numpy import load_file, save_file

    weights = load_file(os.path.join(minilm_path, "model.safetensors"))
    for name in ("pooler.dense.weight", "pooler.dense.bias"):
        del weights[name]
    save_file(weights, str(tmp_path / "model.safetensors"))
    with pytest.raises(ValueError, match="missing weights pooler.dense.weight"):
        BertBackbone.from_pretrained(tmp_path)
    backbone = BertBackbone.from_pretrained(tmp_path, require_pooler=False)
    real = batch["padding_mask"].astype(bool)
    sequence = to_numpy(backbone(batch)["sequence_output"])
    assert np.abs(sequence - reference[0])[real].max() <= 1e-4


def test_save_pretrained_records_the_architecture_and_the_labels_and_the_directory_reads_them_back(tmp_path):
    config = BertConfig(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
    BertClassifier(BertBackbone(config), num_classes=2).save_pretrained(tmp_path, label_names=["neg", "pos"])
    stored = json.loads((tmp_path / "config.json").read_text())
    assert stored["architectures"] == ["BertForSequenceClassification"]
    assert stored["id2label"] == {"0": "neg", "1": "pos"} and stored["model_type"] == "bert"
    assert BertConfig.from_pretrained(tmp_path) == config
    checkpoint = ModelDirectory(tmp_path)
    assert checkpoint.architecture == "BertForSequenceClassification" and checkpoint.label_names == ["neg", "pos"]
    assert model_io.model_class(tmp_path) is BertClassifier
