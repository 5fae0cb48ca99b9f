"""SavedModel export: models built and trained under the current backend, exported under TensorFlow by
recipes/export_savedmodel.py, served in a fresh process where keras_bert_impl cannot be imported, equal
the Keras models' own answers on raw strings."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.span_qa import BertSpanQA
from keras_bert_impl.models.token_classifier import BertTokenClassifier
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from tests.backend_utils import to_numpy

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXTS = ["John Smith moved to Zürich in 2019!", "A joyless, plodding film.", "ok"]
PAIRS = ["He likes it.", "Nothing here", "Bien sûr"]
QUESTIONS = ["Where did John move?", "What kind of film?", "Who?"]
CONTEXTS = ["John Smith moved to Zürich in 2019 and then to Paris.", "It was a joyless, plodding film.", "no one"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC"]


def _tiny_config():
    return BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0)


def _model_inputs(batch):
    return {k: batch[k] for k in ("token_ids", "segment_ids", "padding_mask")}


def _run(args, backend="tensorflow"):
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


@pytest.fixture(scope="module")
def exported(minilm_path, tmp_path_factory):
    """Trains four tiny models briefly under this backend, saves them, exports them under TensorFlow."""
    root = tmp_path_factory.mktemp("export")
    tokenizer = BertTokenizer.from_pretrained(minilm_path)
    batch = tokenizer(TEXTS, PAIRS, max_length=32)
    models = {
        "backbone": BertBackbone(_tiny_config()),
        "classifier": BertClassifier(BertBackbone(_tiny_config()), num_classes=3, dropout=0.0),
        "token_classifier": BertTokenClassifier(BertBackbone(_tiny_config()), num_labels=len(TAGS), dropout=0.0),
        "span_qa": BertSpanQA(BertBackbone(_tiny_config())),
    }
    classifier = models["classifier"]
    classifier.compile(optimizer=keras.optimizers.SGD(0.1),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    classifier.fit(batch, np.array([0, 1, 2]), epochs=1, verbose=0)  # trained under this backend
    for name, model in models.items():
        directory = str(root / name)
        if name == "classifier":
            model.save_pretrained(directory, label_names=["negative", "neutral", "positive"])
        elif name == "token_classifier":
            model.save_pretrained(directory, id2label=TAGS)
        else:
            model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
    # Exports always run in a TensorFlow process, whatever this backend is, all four in one process (to keep
    # the suite fast): the recipe's main() for the classifier, the package function it calls for the others.
    script = ("import importlib.util, sys\n"
              "from keras_bert_impl.export.tf_saved_model import export_from_directory as export\n"
              "spec = importlib.util.spec_from_file_location('export_recipe', sys.argv[2])\n"
              "recipe = importlib.util.module_from_spec(spec); spec.loader.exec_module(recipe)\n"
              "recipe.main([f'--model_dir={sys.argv[1]}/classifier', f'--export_dir={sys.argv[1]}/saved/classifier',\n"
              "             '--max_seq_length=32', '--text_pair'])\n"
              "for name, threshold in (('backbone', None), ('token_classifier', None), ('span_qa', 0.5)):\n"
              "    export(f'{sys.argv[1]}/{name}', f'{sys.argv[1]}/saved/{name}', max_seq_length=32,\n"
              "           null_score_diff_threshold=threshold)")
    _run(["-c", script, str(root), os.path.join(REPO, "recipes", "export_savedmodel.py")])
    jobs = [
        [str(root / "saved" / "backbone"), "serving_default", {"text": TEXTS}],
        [str(root / "saved" / "classifier"), "serving_default", {"text": TEXTS, "text_pair": PAIRS}],
        [str(root / "saved" / "token_classifier"), "serving_default", {"text": TEXTS}],
        [str(root / "saved" / "span_qa"), "serving_default", {"question": QUESTIONS, "context": CONTEXTS}],
        [str(root / "saved" / "classifier"), "serving_token_ids",
         {k: batch[k].tolist() for k in ("token_ids", "segment_ids", "padding_mask")}],
    ]
    out = _run([os.path.join(REPO, "tests", "serve_saved_model.py"), json.dumps(jobs)])
    served = json.loads([line for line in out.splitlines() if line.startswith("RESULT ")][-1][len("RESULT "):])
    return models, tokenizer, dict(zip(["backbone", "classifier", "token_classifier", "span_qa", "token_ids"], served))


def test_backbone_export_serves_the_same_embeddings(exported):
    models, tokenizer, served = exported
    batch = tokenizer(TEXTS, max_length=32)
    outputs = models["backbone"](batch)
    np.testing.assert_allclose(served["backbone"]["pooled_output"], to_numpy(outputs["pooled_output"]), atol=1e-5)
    real = batch["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.array(served["backbone"]["sequence_output"])[real],
                               to_numpy(outputs["sequence_output"])[real], atol=1e-5)


def test_classifier_export_serves_the_same_probabilities_and_label_names(exported):
    models, tokenizer, served = exported
    batch = tokenizer(TEXTS, PAIRS, max_length=32)
    logits = to_numpy(models["classifier"](batch)).astype("float64")
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    np.testing.assert_allclose(served["classifier"]["probabilities"], probabilities, atol=1e-5)
    names = ["negative", "neutral", "positive"]
    assert served["classifier"]["label"] == [names[i] for i in probabilities.argmax(-1)]
    np.testing.assert_allclose(served["token_ids"]["logits"], logits, atol=1e-5)


def test_token_classifier_export_serves_word_tags_with_character_offsets(exported):
    models, tokenizer, served = exported
    batch = tokenizer(TEXTS, max_length=32, return_offsets=True)
    tag_ids = to_numpy(models["token_classifier"](_model_inputs(batch))).argmax(-1)
    for row, text in enumerate(TEXTS):
        words, tags, starts, ends = [], [], [], []
        for position, token_id in enumerate(batch["token_ids"][row]):
            start, end = batch["offsets"][row, position]
            if batch["padding_mask"][row, position] == 0 or (start, end) == (0, 0):
                continue
            if tokenizer.convert_ids_to_tokens([int(token_id)])[0].startswith("##"):
                ends[-1] = int(end)  # a continuation extends the current word
                continue
            starts.append(int(start))
            ends.append(int(end))
            tags.append(TAGS[tag_ids[row, position]])
        words = [text[s:e] for s, e in zip(starts, ends)]
        n = len(words)
        assert served["token_classifier"]["words"][row][:n] == words
        assert served["token_classifier"]["tags"][row][:n] == tags
        assert served["token_classifier"]["word_start"][row][:n] == starts
        assert served["token_classifier"]["word_end"][row][:n] == ends
        assert set(served["token_classifier"]["words"][row][n:]) <= {""}
    assert served["token_classifier"]["words"][0][:4] == ["John", "Smith", "moved", "to"]


def _top(logits, real, n):
    """The n best real positions (ties to the lower index), as run_squad.py's `_get_best_indexes`."""
    positions = np.flatnonzero(real)
    return set(positions[np.argsort(-logits[positions], kind="stable")[:n]].tolist())


def test_span_qa_export_serves_the_best_span_of_the_keras_logits(exported):
    """The best of the 20 best starts x 20 best ends (the export's default n_best_size, the recipe's)."""
    models, tokenizer, served = exported
    batch = tokenizer(QUESTIONS, CONTEXTS, max_length=32, return_offsets=True)
    outputs = models["span_qa"](_model_inputs(batch))
    start_logits, end_logits = to_numpy(outputs["start_logits"]), to_numpy(outputs["end_logits"])
    for row, context in enumerate(CONTEXTS):
        allowed = (batch["segment_ids"][row] == 1) & (batch["padding_mask"][row] == 1) & (batch["offsets"][row].sum(-1) > 0)
        best, best_score = None, -np.inf
        real = batch["padding_mask"][row] == 1
        starts, ends = _top(start_logits[row], real, 20), _top(end_logits[row], real, 20)
        for i in np.flatnonzero(allowed):
            for j in np.flatnonzero(allowed):
                if i in starts and j in ends and i <= j < i + 30 and start_logits[row, i] + end_logits[row, j] > best_score:
                    best, best_score = (i, j), start_logits[row, i] + end_logits[row, j]
        null_score = start_logits[row, 0] + end_logits[row, 0]
        np.testing.assert_allclose(served["span_qa"]["score"][row], best_score, atol=1e-5)
        np.testing.assert_allclose(served["span_qa"]["null_score"][row], null_score, atol=1e-5)
        if null_score - best_score > 0.5:
            assert served["span_qa"]["answer"][row] == "" and served["span_qa"]["answer_start"][row] == -1
        else:
            start, end = batch["offsets"][row, best[0], 0], batch["offsets"][row, best[1], 1]
            assert served["span_qa"]["answer"][row] == context[start:end]
            assert (served["span_qa"]["answer_start"][row], served["span_qa"]["answer_end"][row]) == (start, end)
