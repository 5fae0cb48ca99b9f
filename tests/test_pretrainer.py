"""BertPretrainer: loss parity with transformers' BertForPreTraining on the real MiniLM body, heads, fit."""

import keras
import numpy as np
import pytest

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.config import BertConfig
from keras_bert_impl.layers.masked_lm_head import MaskedLMHead
from keras_bert_impl.models.pretrainer import BertPretrainer
from tests.backend_utils import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=16)


def _masked_batch(vocab_size, batch=3, seq=12, predictions=4, seed=0):
    """A batch in the layout of keras_bert_impl.data.tf_pretraining_records, and HF's labels for the same thing."""
    rng = np.random.RandomState(seed)
    token_ids = rng.randint(5, vocab_size, size=(batch, seq)).astype("int32")
    padding_mask = np.ones((batch, seq), "int32")
    padding_mask[1, 9:] = 0
    token_ids *= padding_mask
    segment_ids = (np.arange(seq)[None] >= 5).astype("int32").repeat(batch, 0) * padding_mask
    positions = np.zeros((batch, predictions), "int32")
    ids = np.zeros((batch, predictions), "int32")
    weights = np.zeros((batch, predictions), "float32")
    hf_labels = np.full((batch, seq), -100, "int64")
    for b, count in enumerate([4, 2, 3]):  # padded prediction slots on rows 1 and 2
        chosen = np.sort(rng.choice(np.arange(1, 8), size=count, replace=False))
        positions[b, :count] = chosen
        ids[b, :count] = rng.randint(5, vocab_size, size=count)
        weights[b, :count] = 1.0
        hf_labels[b, chosen] = ids[b, :count]
    x = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask, "masked_lm_positions": positions}
    y = {"masked_lm_ids": ids, "masked_lm_weights": weights, "next_sentence_labels": np.array([[0], [1], [1]], "int32")}
    return x, y, hf_labels


def test_masked_lm_head_is_transform_then_tied_embedding_projection():
    embedding = keras.layers.Embedding(30, 8)
    embedding.build((None,))
    head = MaskedLMHead(embedding, hidden_act="relu", layer_norm_eps=1e-6)
    sequence = np.random.RandomState(0).normal(size=(2, 5, 8)).astype("float32")
    positions = np.array([[4, 0], [2, 2]], "int32")
    logits = to_numpy(head(sequence, positions))
    gathered = np.stack([sequence[0, [4, 0]], sequence[1, [2, 2]]])
    h = np.maximum(gathered @ to_numpy(head.transform_dense.kernel) + to_numpy(head.transform_dense.bias), 0)
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-6)
    h = h * to_numpy(head.transform_layer_norm.gamma) + to_numpy(head.transform_layer_norm.beta)
    expected = h @ to_numpy(embedding.embeddings).T + to_numpy(head.output_bias)
    np.testing.assert_allclose(logits, expected, atol=1e-5)


@pytest.fixture(scope="module")
def hf_pretraining_dir(minilm_path, tmp_path_factory):
    """The real MiniLM body with pretraining heads initialized by transformers, saved with save_pretrained."""
    torch.manual_seed(0)
    config = transformers.BertConfig.from_pretrained(minilm_path)
    model = transformers.BertForPreTraining(config).eval()
    model.bert.load_state_dict(transformers.BertModel.from_pretrained(minilm_path).state_dict(), strict=False)
    with torch.no_grad():  # give the heads non-trivial values (transformers zero-inits biases)
        model.cls.predictions.bias.normal_(0, 0.5)
        model.cls.seq_relationship.bias.normal_(0, 0.5)
    directory = tmp_path_factory.mktemp("bert_for_pretraining")
    model.save_pretrained(directory)
    return directory, model


def test_losses_equal_transformers_bert_for_pretraining(hf_pretraining_dir):
    directory, hf_model = hf_pretraining_dir
    x, y, hf_labels = _masked_batch(30522)
    with torch.no_grad():
        out = hf_model(
            input_ids=torch.tensor(x["token_ids"]).long(),
            token_type_ids=torch.tensor(x["segment_ids"]).long(),
            attention_mask=torch.tensor(x["padding_mask"]).long(),
        )
        ce = torch.nn.functional.cross_entropy
        hf_mlm = ce(out.prediction_logits.reshape(-1, 30522), torch.tensor(hf_labels).reshape(-1), ignore_index=-100).item()
        hf_nsp = ce(out.seq_relationship_logits, torch.tensor(y["next_sentence_labels"][:, 0]).long()).item()
        hf_total = hf_model(
            input_ids=torch.tensor(x["token_ids"]).long(),
            token_type_ids=torch.tensor(x["segment_ids"]).long(),
            attention_mask=torch.tensor(x["padding_mask"]).long(),
            labels=torch.tensor(hf_labels),
            next_sentence_label=torch.tensor(y["next_sentence_labels"][:, 0]).long(),
        ).loss.item()
    assert abs(hf_total - (hf_mlm + hf_nsp)) < 1e-5

    model = BertPretrainer.from_pretrained(directory)
    total, mlm, nsp = (float(to_numpy(v)) for v in model.pretraining_losses(y, model(x)))
    for ours, theirs in ((total, hf_total), (mlm, hf_mlm), (nsp, hf_nsp)):
        assert abs(ours - theirs) <= 1e-4 * abs(theirs), (ours, theirs)


def test_head_weights_round_trip_through_save_pretrained(hf_pretraining_dir, tmp_path):
    directory, hf_model = hf_pretraining_dir
    model = BertPretrainer.from_pretrained(directory)
    np.testing.assert_array_equal(
        to_numpy(model.next_sentence_head.kernel), hf_model.cls.seq_relationship.weight.detach().numpy().T
    )
    model.save_pretrained(tmp_path)
    again = BertPretrainer.from_pretrained(tmp_path)
    x, _, _ = _masked_batch(30522)
    for key in ("masked_lm_logits", "next_sentence_logits"):
        np.testing.assert_array_equal(to_numpy(again(x)[key]), to_numpy(model(x)[key]))
    reread = transformers.BertForPreTraining.from_pretrained(tmp_path)
    np.testing.assert_array_equal(reread.cls.predictions.bias.detach().numpy(), hf_model.cls.predictions.bias.detach().numpy())


def test_a_checkpoint_without_heads_warns_and_initializes_them(minilm_path):
    with pytest.warns(UserWarning, match="no masked-LM or next-sentence weights"):
        BertPretrainer.from_pretrained(minilm_path)


def test_train_step_runs_and_reports_the_four_metrics():
    model = BertPretrainer(BertBackbone(TINY))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    x, y, _ = _masked_batch(TINY.vocab_size)
    history = model.fit(x, y, epochs=3, batch_size=3, verbose=0)
    logs = history.history
    for name in ("loss", "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy", "next_sentence_loss"):
        assert name in logs and np.isfinite(logs[name]).all(), name
    np.testing.assert_allclose(
        np.array(logs["loss"]), np.array(logs["masked_lm_loss"]) + np.array(logs["next_sentence_loss"]), rtol=1e-5
    )
    assert logs["loss"][-1] < logs["loss"][0]
    evaluation = model.evaluate(x, y, verbose=0, return_dict=True)
    total, mlm, nsp = (float(to_numpy(v)) for v in model.pretraining_losses(y, model(x)))
    assert abs(evaluation["masked_lm_loss"] - mlm) < 1e-4 and abs(evaluation["loss"] - total) < 1e-4


def test_masked_lm_accuracy_ignores_padded_prediction_slots():
    model = BertPretrainer(BertBackbone(TINY))
    x, y, _ = _masked_batch(TINY.vocab_size)
    logits = to_numpy(model(x)["masked_lm_logits"])
    correct = (logits.argmax(-1) == y["masked_lm_ids"]).astype("float32")
    expected = (correct * y["masked_lm_weights"]).sum() / y["masked_lm_weights"].sum()
    model.compile(optimizer="sgd")
    result = model.evaluate(x, y, verbose=0, return_dict=True)
    assert abs(result["masked_lm_accuracy"] - expected) < 1e-6


def test_config_round_trip(tmp_path):
    model = BertPretrainer(BertBackbone(TINY))
    restored = BertPretrainer.from_config(model.get_config())
    assert restored.backbone.config == TINY
    path = str(tmp_path / "pretrainer.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    x, _, _ = _masked_batch(TINY.vocab_size)
    np.testing.assert_allclose(to_numpy(loaded(x)["masked_lm_logits"]), to_numpy(model(x)["masked_lm_logits"]), atol=1e-6)


def test_an_empty_batch_does_not_dilute_the_loss_metrics():
    model = BertPretrainer(BertBackbone(TINY))
    model.compile(optimizer="sgd")
    x, y, _ = _masked_batch(TINY.vocab_size)
    model.compute_loss(x, y, model(x))
    empty_x = {k: v[:0] for k, v in x.items()}
    empty_y = {k: v[:0] for k, v in y.items()}
    model.compute_loss(empty_x, empty_y, model(empty_x))
    total, mlm, nsp = (float(to_numpy(v)) for v in model.pretraining_losses(y, model(x)))
    assert abs(float(to_numpy(model.masked_lm_loss.result())) - mlm) < 1e-5
    assert abs(float(to_numpy(model.next_sentence_loss.result())) - nsp) < 1e-5
