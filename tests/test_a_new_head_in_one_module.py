"""A new head declared in one module (tests/toy_head.py, a classifier on the mean of the tokens' features),
without a line of the package edited, gets from the task registry what every task model gets: the task
harness's checks (fit on raw text, `.keras`, bfloat16), `save_pretrained` / `from_pretrained` (its head and
`num_classes` read back from the directory, its preprocessor), another task's class refusing its directory,
the text-classification pipeline (also under the alias it declares) answering with its logits, and a
SavedModel export of its directory (exported and served by TensorFlow in other processes) answering as the
pipeline."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_bert_impl import BertClassifier, BertTextClassifierPreprocessor, pipeline
from keras_bert_impl.checkpoints import model_io
from keras_bert_impl.utils.errors import UserInputError
from tests.backend_utils import to_numpy
from tests.finetuning_files import REPO, subprocess_env
from tests.task_harness import TINY, TOKENIZER, VOCABULARY, TaskCase, run_task_test
from tests.test_task_models import BATCH, PAIRS, TEXTS, _inputs
from tests.toy_head import ARCHITECTURE, PIPELINE_ALIAS, ToyMeanClassifier

SEQ = 10
LABELS = ["low", "middle", "high"]
SERVE = os.path.join(REPO, "tests", "serve_saved_model.py")
EXPORT = """
import sys
import tests.toy_head  # registers the head: the one thing an export of a head outside the package needs
from keras_bert_impl.export.tf_saved_model import export_from_directory
print("EXPORTED", export_from_directory(sys.argv[1], sys.argv[2])[0])
"""


def _toy(backbone, preprocessor):
    return ToyMeanClassifier(backbone, num_classes=3, preprocessor=preprocessor)


def test_the_toy_head_passes_the_task_harness(tmp_path):
    case = TaskCase(
        build=_toy,
        batch=lambda: (_inputs(), np.array([0, 2, 1], "int32")),
        output_shapes={"logits": (BATCH, 3)},
        preprocessor=lambda: BertTextClassifierPreprocessor(TOKENIZER, sequence_length=SEQ),
        raw_batch=lambda: (PAIRS, np.array([0, 2, 1], "int32")),
    )
    run_task_test(case, str(tmp_path))


@pytest.fixture(scope="module")
def toy_directory(tmp_path_factory):
    from keras_bert_impl.models.backbone import BertBackbone

    directory = str(tmp_path_factory.mktemp("toy") / "model")
    model = _toy(BertBackbone(TINY), BertTextClassifierPreprocessor(TOKENIZER, sequence_length=SEQ))
    model.save_pretrained(directory, label_names=LABELS)
    return model, directory


def _softmax(logits):
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


@pytest.mark.tensorflow  # the SavedModel is exported and served by TensorFlow
def test_the_registry_gives_the_toy_head_its_directory_pipeline_and_export(toy_directory, tmp_path):
    model, directory = toy_directory
    with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    assert config["architectures"] == [ARCHITECTURE] and config["id2label"] == {"0": "low", "1": "middle", "2": "high"}
    assert model_io.model_class(directory) is ToyMeanClassifier

    # from_pretrained: the head and its size from the directory, the preprocessor from its tokenizer files.
    x, _, _ = model.preprocessor(TEXTS)
    expected = to_numpy(model(x))  # [3, 3]
    loaded = ToyMeanClassifier.from_pretrained(directory)
    assert loaded.num_classes == 3 and loaded.newly_initialized_heads == []
    assert loaded.preprocessor.tokenizer.vocabulary == VOCABULARY and loaded.preprocessor.sequence_length == SEQ
    np.testing.assert_allclose(to_numpy(loaded(x)), expected, atol=1e-5)
    with pytest.raises(UserInputError, match=r"holds a ToyMeanClassifier \(BertForToyMeanClassification\), not a "
                                             r"BertClassifier; load it with ToyMeanClassifier.from_pretrained"):
        BertClassifier.from_pretrained(directory)

    # The text-classification pipeline runs it, under its name and the alias it declares.
    probabilities = _softmax(expected.astype("float64"))
    for name in ("text-classification", PIPELINE_ALIAS):
        answers = pipeline(name, model=directory)(TEXTS)
        assert [a["label"] for a in answers] == [LABELS[i] for i in expected.argmax(-1)]
        np.testing.assert_allclose([a["score"] for a in answers], probabilities.max(-1), atol=1e-5)

    # The SavedModel of its directory (the classifier kind its entry declares) answers as the pipeline.
    export_dir = str(tmp_path / "saved")
    env = dict(subprocess_env(), KERAS_BACKEND="tensorflow")
    done = subprocess.run([sys.executable, "-c", EXPORT, directory, export_dir], env=env, capture_output=True,
                          text=True, timeout=600, cwd=REPO, check=False)
    assert done.returncode == 0 and "EXPORTED classifier" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    jobs = [[export_dir, "serving_default", {"text": TEXTS}]]
    done = subprocess.run([sys.executable, SERVE, json.dumps(jobs)], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    served = json.loads(done.stdout.split("RESULT ", 1)[1])[0]
    assert served["label"] == [LABELS[i] for i in expected.argmax(-1)]
    np.testing.assert_allclose(served["probabilities"], probabilities, atol=1e-5)
