"""BertSpanQA: logits and loss equal transformers' BertForQuestionAnswering on the real MiniLM body;
Google SQuAD heads; save/config round trips; model.fit learns on every backend."""

import json

import keras
import numpy as np
import pytest

from keras_bert_impl.checkpoints import weight_tables
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.span_qa import BertSpanQA
from tests.backend_utils import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=32)


def _batch(vocab_size, batch=3, seq=16, seed=0):
    """[CLS] question [SEP] doc [SEP] [PAD]... rows of random ids, with padding on rows 1 and 2."""
    rng = np.random.RandomState(seed)
    token_ids = rng.randint(1000 if vocab_size > 1000 else 5, vocab_size, size=(batch, seq)).astype("int32")
    lengths = [seq, seq - 5, seq - 9]
    padding_mask = (np.arange(seq)[None, :] < np.array(lengths)[:, None]).astype("int32")
    segment_ids = ((np.arange(seq)[None, :] >= 5) * padding_mask).astype("int32")
    token_ids = token_ids * padding_mask
    x = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
    y = {"start_positions": np.array([7, 0, 5], "int32"), "end_positions": np.array([9, 0, 6], "int32")}
    return x, y


@pytest.fixture(scope="module")
def hf_qa_dir(minilm_path, tmp_path_factory):
    """BertForQuestionAnswering with the real MiniLM body and a non-trivial qa_outputs head, saved."""
    torch.manual_seed(0)
    config = transformers.BertConfig.from_pretrained(minilm_path)
    model = transformers.BertForQuestionAnswering(config).eval()
    model.bert.load_state_dict(transformers.BertModel.from_pretrained(minilm_path).state_dict(), strict=False)
    with torch.no_grad():
        model.qa_outputs.weight.normal_(0, 0.5)
        model.qa_outputs.bias.copy_(torch.tensor([0.3, -0.7]))
    directory = tmp_path_factory.mktemp("bert_for_qa")
    model.save_pretrained(directory)
    return directory, model


def test_logits_and_loss_equal_transformers_bert_for_question_answering(hf_qa_dir):
    directory, hf_model = hf_qa_dir
    x, y = _batch(30522)
    with torch.no_grad():
        out = hf_model(
            input_ids=torch.tensor(x["token_ids"]).long(),
            token_type_ids=torch.tensor(x["segment_ids"]).long(),
            attention_mask=torch.tensor(x["padding_mask"]).long(),
            start_positions=torch.tensor(y["start_positions"]).long(),
            end_positions=torch.tensor(y["end_positions"]).long(),
        )
    model = BertSpanQA.from_pretrained(directory)
    outputs = model(x, training=False)
    start, end = to_numpy(outputs["start_logits"]), to_numpy(outputs["end_logits"])
    assert start.shape == end.shape == (3, 16) and start.dtype == np.float32
    start_diff = np.abs(start - out.start_logits.numpy()).max()
    end_diff = np.abs(end - out.end_logits.numpy()).max()
    assert start_diff <= 1e-4 and end_diff <= 1e-4, (start_diff, end_diff)
    # Padding positions are not masked, as in transformers (their logits match too, checked above).
    assert np.all(np.abs(start[2, 7:]) < 1e4)
    total, _, _ = model.span_losses(y, outputs)
    assert abs(float(to_numpy(total)) - float(out.loss)) <= 1e-4


def test_loss_is_mean_of_start_and_end_cross_entropy():
    model = BertSpanQA(BertBackbone(TINY))
    logits = np.random.RandomState(1).normal(size=(2, 2, 6)).astype("float32")
    y = {"start_positions": np.array([[1], [4]], "int32"), "end_positions": np.array([2, 5], "int32")}

    def xent(row_logits, gold):
        row = row_logits - row_logits.max()
        return -(row[gold] - np.log(np.exp(row).sum()))

    start_loss = np.mean([xent(logits[0, 0], 1), xent(logits[0, 1], 4)])
    end_loss = np.mean([xent(logits[1, 0], 2), xent(logits[1, 1], 5)])
    total, s, e = model.span_losses(y, {"start_logits": logits[0], "end_logits": logits[1]})
    np.testing.assert_allclose([float(to_numpy(s)), float(to_numpy(e)), float(to_numpy(total))],
                               [start_loss, end_loss, (start_loss + end_loss) / 2], rtol=1e-5)


@pytest.mark.tensorflow
def test_google_squad_checkpoint_head_is_loaded(tmp_path):
    from keras_bert_impl.checkpoints import tf1_checkpoint

    backbone = BertBackbone(TINY)
    weights = weight_tables.backbone_weights_dict(backbone)
    rng = np.random.RandomState(0)
    weights["qa_outputs.weight"] = rng.normal(size=(2, 16)).astype("float32")  # cls/squad/output_weights [2, H]
    weights["qa_outputs.bias"] = rng.normal(size=(2,)).astype("float32")
    tf1_checkpoint.write_tf1_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))
    (tmp_path / "bert_config.json").write_text(json.dumps(TINY.to_dict()))
    import tensorflow as tf

    assert "cls/squad/output_weights" in dict(tf.train.list_variables(str(tmp_path / "bert_model.ckpt")))
    model = BertSpanQA.from_pretrained(tmp_path)
    np.testing.assert_allclose(to_numpy(model.qa_outputs.kernel), weights["qa_outputs.weight"].T, rtol=1e-6)
    np.testing.assert_allclose(to_numpy(model.qa_outputs.bias), weights["qa_outputs.bias"], rtol=1e-6)


def test_checkpoint_without_head_warns_and_save_pretrained_round_trips(tmp_path):
    BertBackbone(TINY).save_pretrained(tmp_path / "plain")
    with pytest.warns(UserWarning, match="qa_outputs"):
        model = BertSpanQA.from_pretrained(tmp_path / "plain")
    x, _ = _batch(60, seq=10)
    expected = model(x)
    model.save_pretrained(tmp_path / "qa")
    loaded = BertSpanQA.from_pretrained(tmp_path / "qa")
    again = loaded(x)
    for key in ("start_logits", "end_logits"):
        np.testing.assert_allclose(to_numpy(again[key]), to_numpy(expected[key]), atol=1e-6)
    # And transformers reads the directory as a BertForQuestionAnswering with the same head.
    hf = transformers.BertForQuestionAnswering.from_pretrained(tmp_path / "qa").eval()
    np.testing.assert_allclose(hf.qa_outputs.weight.detach().numpy(), to_numpy(model.qa_outputs.kernel).T, atol=1e-7)


def test_config_and_keras_file_round_trip(tmp_path):
    model = BertSpanQA(BertBackbone(TINY))
    x, _ = _batch(60, seq=10)
    expected = model(x)
    clone = BertSpanQA.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(to_numpy(clone(x)["start_logits"]), to_numpy(expected["start_logits"]), atol=1e-6)
    path = str(tmp_path / "qa.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, BertSpanQA)
    np.testing.assert_allclose(to_numpy(restored(x)["end_logits"]), to_numpy(expected["end_logits"]), atol=1e-6)


def test_fit_learns_the_span_positions():
    model = BertSpanQA(BertBackbone(TINY))
    rng = np.random.RandomState(0)
    n, seq = 32, 12
    token_ids = rng.randint(5, 60, size=(n, seq)).astype("int32")
    starts = rng.randint(1, seq - 2, size=n).astype("int32")
    token_ids[np.arange(n), starts] = 3  # the answer starts at the token 3 and ends one token later
    x = {"token_ids": token_ids, "segment_ids": np.zeros((n, seq), "int32"), "padding_mask": np.ones((n, seq), "int32")}
    y = {"start_positions": starts, "end_positions": starts + 1}
    model.compile(optimizer=keras.optimizers.Adam(5e-3))
    history = model.fit(x, y, batch_size=8, epochs=25, verbose=0).history
    assert set(history) >= {"loss", "start_loss", "end_loss", "start_accuracy", "end_accuracy"}
    assert history["loss"][-1] < 0.5 * history["loss"][0], history["loss"]
    assert history["start_accuracy"][-1] > 0.8, history["start_accuracy"]
