"""Every class registered under the package "keras_bert_impl" round-trips through a `.keras` file after only
`import keras_bert_impl`: the reloaded object computes the same outputs (atol 1e-6), in this process and,
for every task model (compiled, with its preprocessor), in a fresh interpreter that imports Keras before the
package or after it (the package imports its modules lazily; Keras' registry knows its classes either way).
The preprocessors (plain objects, not layers) round-trip through their config."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

import keras_bert_impl
from keras_bert_impl.config import BertConfig
from tests.backend_utils import to_numpy

TINY = BertConfig(vocab_size=40, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16,
                  max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
BATCH, SEQ, NUM_LABELS = 2, 6, 3


def _bert_inputs(seed=0, shape=(BATCH, SEQ)):
    rng = np.random.RandomState(seed)
    padding_mask = np.ones(shape, "int32")
    padding_mask[..., -2:] = 0
    return {"token_ids": (rng.randint(1, TINY.vocab_size, size=shape) * padding_mask).astype("int32"),
            "segment_ids": (np.arange(SEQ) >= 3).astype("int32") * padding_mask,
            "padding_mask": padding_mask}


def _float_inputs(*shapes, seed=0):
    rng = np.random.RandomState(seed)
    return [rng.normal(size=shape).astype("float32") for shape in shapes]


def _wrap(layer, inputs):
    """A functional model around one layer (the layer travels in the model's config)."""
    symbolic = [keras.Input(shape=x.shape[1:], dtype=str(x.dtype)) for x in inputs]
    return keras.Model(symbolic if len(symbolic) > 1 else symbolic[0], layer(*symbolic)), inputs


def _wrap_list(layer, inputs):
    """A functional model around one layer called on the list of its inputs (as `ScalarMix` is)."""
    symbolic = [keras.Input(shape=x.shape[1:], dtype=str(x.dtype)) for x in inputs]
    return keras.Model(symbolic, layer(symbolic)), inputs


def _backbone(**kwargs):
    return keras_bert_impl.BertBackbone(TINY, **kwargs)


def _tagger_inputs():
    return [_bert_inputs()]


# Registered name -> () -> (model, list of call arguments). Task models and the backbone are saved
# directly; a layer inside a one-layer functional model; an optimizer or schedule on a compiled model.
CASES = {
    "BertBackbone": lambda: (_backbone(), [_bert_inputs()]),
    "BertClassifier": lambda: (keras_bert_impl.BertClassifier(_backbone(), num_classes=NUM_LABELS), [_bert_inputs()]),
    "BertMultipleChoice": lambda: (
        keras_bert_impl.BertMultipleChoice(_backbone(), num_choices=2), [_bert_inputs(shape=(BATCH, 2, SEQ))]
    ),
    "BertPretrainer": lambda: (
        keras_bert_impl.BertPretrainer(_backbone()),
        [dict(_bert_inputs(), masked_lm_positions=np.array([[1, 2], [3, 0]], "int32"))],
    ),
    "BertSpanQA": lambda: (keras_bert_impl.BertSpanQA(_backbone()), [_bert_inputs()]),
    "BertTokenClassifier": lambda: (
        keras_bert_impl.BertTokenClassifier(_backbone(), num_classes=NUM_LABELS, use_crf=True), [_bert_inputs()]
    ),
    "BertFeatureBasedTagger": lambda: (
        keras_bert_impl.BertFeatureBasedTagger(
            _backbone(output_hidden_states=True), num_classes=NUM_LABELS, feature_layers=(-1, -2), lstm_units=4,
            num_lstm_layers=1,
        ),
        [_bert_inputs()],
    ),
    "BertSentenceEncoder": lambda: (
        keras_bert_impl.BertSentenceEncoder(_backbone(), pooling=["mean", "cls"], normalize=True),
        [_bert_inputs(shape=(BATCH, 2, SEQ))],
    ),
    "BertDense": lambda: _wrap(keras_bert_impl.BertDense(4, activation="gelu"), _float_inputs((BATCH, 3))),
    "BertDropout": lambda: _wrap(keras_bert_impl.BertDropout(0.1), _float_inputs((BATCH, 3))),
    "BertTruncatedNormal": lambda: _wrap(
        keras.layers.Dense(4, kernel_initializer=keras_bert_impl.BertTruncatedNormal(0.5)), _float_inputs((BATCH, 3))),
    "BertEinsumDense": lambda: _wrap(
        keras_bert_impl.BertEinsumDense("btd,dnh->btnh", output_shape=(None, 2, 4), bias_axes="nh"),
        _float_inputs((BATCH, SEQ, 8)),
    ),
    "BertEmbeddings": lambda: _wrap(
        keras_bert_impl.BertEmbeddings(vocab_size=40, hidden_size=8, max_position_embeddings=16, type_vocab_size=2),
        [_bert_inputs()["token_ids"], _bert_inputs()["segment_ids"]],
    ),
    "BertSelfAttention": lambda: _wrap(
        keras_bert_impl.BertSelfAttention(hidden_size=8, num_heads=2), _float_inputs((BATCH, SEQ, 8), (BATCH, 1, 1, SEQ))
    ),
    "BertEncoderBlock": lambda: _wrap(
        keras_bert_impl.BertEncoderBlock(hidden_size=8, num_heads=2, intermediate_size=16),
        _float_inputs((BATCH, SEQ, 8), (BATCH, 1, 1, SEQ)),
    ),
    "CRF": lambda: _wrap(keras_bert_impl.CRF(NUM_LABELS, use_start_end_transitions=True),
                         _float_inputs((BATCH, SEQ, NUM_LABELS))),
    "MaskedLMHead": lambda: _wrap(
        keras_bert_impl.MaskedLMHead(vocab_size=40, hidden_size=8),
        _float_inputs((BATCH, SEQ, 8)) + [np.array([[1, 2], [3, 0]], "int32")],
    ),
    "ScalarMix": lambda: _wrap_list(
        keras_bert_impl.ScalarMix(initial_scalar_parameters=[0.5, -0.5], initial_gamma=2.0),
        _float_inputs((BATCH, SEQ, 8), (BATCH, SEQ, 8)),
    ),
    "SentencePooling": lambda: _wrap(
        keras_bert_impl.SentencePooling(["max", "mean_sqrt_len_tokens"]),
        _float_inputs((BATCH, SEQ, 8)) + [_bert_inputs()["padding_mask"]],
    ),
    "MultipleNegativesRankingLoss": lambda: _compiled_sentence_encoder(
        keras_bert_impl.MultipleNegativesRankingLoss(scale=10.0, symmetric=True)),
    "SimCSELoss": lambda: _compiled_sentence_encoder(keras_bert_impl.SimCSELoss(temperature=0.1)),
    "CoSENTLoss": lambda: _compiled_sentence_encoder(keras_bert_impl.CoSENTLoss(scale=15.0)),
    "AdamWeightDecay": lambda: _compiled(keras_bert_impl.AdamWeightDecay(1e-2, exclude_from_weight_decay=["bias"])),
    "Lamb": lambda: _compiled(keras_bert_impl.Lamb(1e-2, exclude_from_weight_decay=["bias"])),
    "WarmupLinearDecay": lambda: _compiled(
        keras_bert_impl.AdamWeightDecay(keras_bert_impl.WarmupLinearDecay(1e-2, num_train_steps=10, num_warmup_steps=2))
    ),
    # Gradient accumulation wraps the schedule (counted in updates): 4 batches of fit, 2 updates.
    "OptimizerStepSchedule": lambda: _compiled(keras_bert_impl.AdamWeightDecay(
        keras_bert_impl.WarmupLinearDecay(1e-2, num_train_steps=10, num_warmup_steps=2), gradient_accumulation_steps=2
    )),
}


VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "##s", "?"]
TEXTS = ["the cats sat", "on the mat?"]
PAIRS = (TEXTS, ["the mat", "cat"])


def _tokenizer():
    return keras_bert_impl.BertTokenizer(VOCABULARY, do_lower_case=False)


# Registered preprocessor -> () -> (preprocessor, raw x, y); and the task model each one serves.
PREPROCESSORS = {
    "BertTextClassifierPreprocessor": lambda: (
        keras_bert_impl.BertTextClassifierPreprocessor(_tokenizer(), sequence_length=SEQ), PAIRS, [0, 1]),
    "BertMultipleChoicePreprocessor": lambda: (
        keras_bert_impl.BertMultipleChoicePreprocessor(_tokenizer(), sequence_length=SEQ),
        (TEXTS, [["cat", "mat"], ["sat", "the cats"]]), [0, 1]),
    "BertSpanQAPreprocessor": lambda: (
        keras_bert_impl.BertSpanQAPreprocessor(_tokenizer(), sequence_length=SEQ), (["cat?", "mat?"], TEXTS),
        ([4, 7], ["cats", "mat"])),
    "BertTokenClassifierPreprocessor": lambda: (
        keras_bert_impl.BertTokenClassifierPreprocessor(_tokenizer(), sequence_length=SEQ), TEXTS, [[0, 1, 2], [1, 2, 0]]),
    "BertMaskedLMPreprocessor": lambda: (
        keras_bert_impl.BertMaskedLMPreprocessor(_tokenizer(), sequence_length=SEQ, max_predictions_per_seq=2,
                                                 seed=3), PAIRS, [0, 1]),
    "BertSentenceEncoderPreprocessor": lambda: (
        keras_bert_impl.BertSentenceEncoderPreprocessor(_tokenizer(), sequence_length=SEQ), PAIRS, [0.5, 4.0]),
}
PREPROCESSOR_OF = {"BertClassifier": "BertTextClassifierPreprocessor", "BertMultipleChoice": "BertMultipleChoicePreprocessor",
                   "BertSpanQA": "BertSpanQAPreprocessor", "BertTokenClassifier": "BertTokenClassifierPreprocessor",
                   "BertFeatureBasedTagger": "BertTokenClassifierPreprocessor", "BertPretrainer": "BertMaskedLMPreprocessor",
                   "BertSentenceEncoder": "BertSentenceEncoderPreprocessor"}


def _compiled(optimizer):
    """A Dense model compiled with `optimizer` and trained two steps, so that its slots hold values."""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=optimizer, loss="mse")
    x, y = _float_inputs((4, 3), (4, 2))
    model.fit(x, y, epochs=2, verbose=0)
    return model, [x]


def _compiled_sentence_encoder(loss):
    """A sentence encoder compiled with `loss` and trained one step on pairs of texts (token ids)."""
    model = keras_bert_impl.BertSentenceEncoder(_backbone())
    model.compile(optimizer="adam", loss=loss)
    x = _bert_inputs(shape=(BATCH, 2, SEQ))
    model.fit(x, np.array([1.0, 3.0], "float32"), epochs=1, verbose=0)
    return model, [x]


def _registered_names():
    prefix = "keras_bert_impl>"
    return sorted(name[len(prefix):] for name in keras.saving.get_custom_objects() if name.startswith(prefix))


def test_every_registered_class_has_a_round_trip_case():
    assert _registered_names() == sorted([*CASES, *PREPROCESSORS])


@pytest.mark.parametrize("name", sorted(PREPROCESSORS))
def test_preprocessor_revived_from_its_json_config_and_vocabulary_makes_the_same_ids_and_labels(name, tmp_path):
    """The config holds the settings; the vocabulary travels as a file (a `.keras` file's assets/vocab.txt)."""
    preprocessor, x, y = PREPROCESSORS[name]()
    config = json.loads(json.dumps(keras.saving.serialize_keras_object(preprocessor)))
    assert "vocabulary" not in config["config"]
    revived = keras.saving.deserialize_keras_object(config)
    assert revived.tokenizer.vocab is None
    preprocessor.save_vocabulary(str(tmp_path))
    revived.load_vocabulary(str(tmp_path))
    assert type(revived) is type(preprocessor) and revived.get_config() == preprocessor.get_config()
    expected, got = preprocessor(x, y), revived(x, y)  # the masked-LM one: the same seed, the same masks
    for want, have in zip(keras.tree.flatten(expected), keras.tree.flatten(got), strict=True):
        np.testing.assert_array_equal(have, want)


def _outputs(model, args):
    outputs = model(args if len(args) > 1 else args[0], training=False)
    return [to_numpy(o) for o in keras.tree.flatten(outputs)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_keras_file_reload_computes_the_same_outputs(name, tmp_path):
    model, args = CASES[name]()
    expected = _outputs(model, args)
    path = str(tmp_path / f"{name}.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is type(model)
    for got, want in zip(_outputs(loaded, args), expected, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-6)
    if isinstance(getattr(model, "optimizer", None), keras.optimizers.Optimizer):
        assert type(loaded.optimizer) is type(model.optimizer)
        assert loaded.optimizer.get_config() == model.optimizer.get_config()
        if isinstance(model.loss, keras.losses.Loss):  # the compiled loss comes back with its settings
            assert type(loaded.loss) is type(model.loss) and loaded.loss.get_config() == model.loss.get_config()
        for got, want in zip(loaded.optimizer.variables, model.optimizer.variables, strict=True):
            np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-6)


def test_masked_lm_head_revives_from_its_config_with_the_tied_heads_numbers():
    embedding = keras.layers.Embedding(40, 8)
    embedding.build((None,))
    tied = keras_bert_impl.MaskedLMHead(embedding, hidden_act="relu")
    sequence, = _float_inputs((BATCH, SEQ, 8))
    positions = np.array([[1, 2], [3, 0]], "int32")
    expected = to_numpy(tied(sequence, positions))
    revived = keras_bert_impl.MaskedLMHead.from_config(tied.get_config())
    revived(sequence, positions)
    revived.set_weights(tied.get_weights())  # the embedding matrix first, then transform and bias
    np.testing.assert_allclose(to_numpy(revived(sequence, positions)), expected, atol=1e-6)
    assert revived.token_embedding is not embedding and (revived.vocab_size, revived.hidden_size) == (40, 8)


TASK_MODELS = ["BertClassifier", "BertFeatureBasedTagger", "BertMultipleChoice", "BertPretrainer", "BertSentenceEncoder",
               "BertSpanQA", "BertTokenClassifier"]


def test_every_registered_class_is_an_export_that_keras_knows_before_its_module_is_imported():
    assert _registered_names() == sorted(keras_bert_impl._KERAS_CLASSES)
    assert set(keras_bert_impl._KERAS_CLASSES) <= set(keras_bert_impl.__all__)


def test_every_task_model_reloads_compiled_in_a_fresh_interpreter_whether_keras_or_the_package_comes_first(tmp_path):
    """Saved after a bare `compile()`: a fresh interpreter gets the model, its outputs and its compiled loss
    and optimizer back (one interpreter for all of them), with keras imported before the package and after."""
    from keras_bert_impl.models.task_model import BertTaskModel

    assert sorted(TASK_MODELS) == sorted(n for n in _registered_names() if n.startswith("Bert") and
                                         issubclass(getattr(keras_bert_impl, n), BertTaskModel))
    raw = {}
    for name in TASK_MODELS:
        model, (x,) = CASES[name]()
        model.preprocessor, raw[name], _ = PREPROCESSORS[PREPROCESSOR_OF[name]]()
        model.compile()
        out = model(x, training=False)
        out = {k: to_numpy(v) for k, v in out.items()} if isinstance(out, dict) else {"logits": to_numpy(out)}
        on_raw = model.predict(raw[name], verbose=0)  # the masked-LM preprocessor's first masks: also the reloaded one's
        on_raw = on_raw if isinstance(on_raw, dict) else {"logits": on_raw}
        model.save(str(tmp_path / f"{name}.keras"))
        arrays = {**{f"x_{k}": v for k, v in x.items()}, **{f"y_{k}": v for k, v in out.items()},
                  **{f"raw_{k}": np.asarray(v) for k, v in on_raw.items()}}
        np.savez(tmp_path / f"{name}.npz", **arrays)
    with open(tmp_path / "raw.json", "w") as f:
        json.dump(raw, f)
    script = textwrap.dedent(f"""
        import json
        # the imports
        raw = json.load(open(f"{tmp_path}/raw.json"))
        raw = {{k: tuple(v) if k in ("BertClassifier", "BertMultipleChoice", "BertSpanQA", "BertPretrainer",
                                     "BertSentenceEncoder") else v
               for k, v in raw.items()}}  # JSON makes the (first, second) tuples lists
        for name in {TASK_MODELS!r}:
            data = np.load(f"{tmp_path}/{{name}}.npz")
            x = {{k[2:]: data[k] for k in data.files if k.startswith("x_")}}
            model = keras.saving.load_model(f"{tmp_path}/{{name}}.keras")
            assert type(model).__name__ == name, type(model)
            assert type(model.optimizer).__name__ == "AdamW" and model.optimizer.weight_decay == 0.01, name
            out = model(x, training=False)
            out = out if isinstance(out, dict) else {{"logits": out}}
            for k in data.files:
                if k.startswith("y_"):
                    np.testing.assert_allclose(keras.ops.convert_to_numpy(out[k[2:]]), data[k], atol=1e-6,
                                               err_msg=name)
            on_raw = model.predict(raw[name], verbose=0)
            on_raw = on_raw if isinstance(on_raw, dict) else {{"logits": on_raw}}
            for k in data.files:
                if k.startswith("raw_"):
                    np.testing.assert_allclose(np.asarray(on_raw[k[4:]]), data[k], atol=1e-6, err_msg=name)
            print("reloaded", name)
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    orders = {"keras first": "import keras, numpy as np\nimport keras_bert_impl",
              "package first": "import keras_bert_impl\nimport keras, numpy as np"}
    processes = {order: subprocess.Popen([sys.executable, "-c", script.replace("# the imports", imports)],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root)
                 for order, imports in orders.items()}
    for order, process in processes.items():
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, (order, stderr[-3000:])
        assert [line.split()[1] for line in stdout.splitlines() if line.startswith("reloaded")] == TASK_MODELS, order
        assert "compile()` was not called" not in stderr, (order, stderr[-3000:])


def test_minilm_classifier_keras_file_keeps_the_vocabulary_in_its_assets_and_reloads_in_a_fresh_process(
        minilm_path, tmp_path):
    """The `.keras` file of a classifier on the real MiniLM: its config.json stays small (the 30,522-token
    vocabulary is assets/vocab.txt, not config), and a fresh interpreter reloads it with equal outputs on raw
    text."""
    import zipfile

    model = keras_bert_impl.BertClassifier.from_pretrained(minilm_path, num_classes=2)
    texts = ["a gripping, beautifully shot film", "dull and far too long"]
    expected = model.predict(texts, verbose=0)
    path = str(tmp_path / "minilm.keras")
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        config_size = len(archive.read("config.json"))
        vocabulary = archive.read("assets/vocab.txt").decode("utf-8").splitlines()
    assert config_size < 100_000 and len(vocabulary) == 30522
    np.save(tmp_path / "expected.npy", expected)
    script = textwrap.dedent(f"""
        import json, keras, numpy as np
        import keras_bert_impl
        model = keras.saving.load_model({path!r})
        got = model.predict({texts!r}, verbose=0)
        np.testing.assert_allclose(got, np.load({str(tmp_path / "expected.npy")!r}), atol=1e-5)
        print("equal", model.preprocessor.tokenizer.vocab_size)
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-2:] == ["equal", "30522"]


def test_keras_file_with_the_vocabulary_in_its_config_still_loads(tmp_path):
    """`.keras` files written while the preprocessor's config held its vocabulary (no assets) load as before."""
    import zipfile

    model, (x,) = CASES["BertClassifier"]()
    model.preprocessor, texts, _ = PREPROCESSORS[PREPROCESSOR_OF["BertClassifier"]]()
    expected = model.predict(texts, verbose=0)
    new, old = str(tmp_path / "new.keras"), str(tmp_path / "old.keras")
    model.save(new)
    with zipfile.ZipFile(new) as source, zipfile.ZipFile(old, "w") as target:
        config = json.loads(source.read("config.json"))
        config["config"]["preprocessor"]["config"]["vocabulary"] = model.preprocessor.tokenizer.vocabulary
        for name in source.namelist():
            if not name.startswith("assets/"):
                target.writestr(name, json.dumps(config) if name == "config.json" else source.read(name))
    reloaded = keras.saving.load_model(old)
    np.testing.assert_allclose(reloaded.predict(texts, verbose=0), expected, atol=1e-6)
