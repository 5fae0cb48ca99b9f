"""Models by name: a Hugging Face hub name resolves through the local cache (offline, HF_HUB_OFFLINE=1), in
every `from_pretrained`; an uncached name offline fails in one line naming the model and the cache; without the
hub packages, in one line naming the package to install.

The cache is built by the test in a temporary HF_HOME, in huggingface_hub's layout
(`hub/models--org--name/refs/main` -> `snapshots/<commit>/<files>`), from a tiny model directory.
"""

import os
import shutil

import numpy as np
import pytest

from keras_bert_impl import pipeline
from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import CheckpointNotFoundError
from keras_bert_impl.utils.model_names import looks_like_a_path, resolve_model_path
from tests.backend_utils import to_numpy
from tests.tiny_model_files import TINY, VOCAB

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def write_hf_cache(hf_home, repo_id, source, revision="main", commit=COMMIT):
    """Puts the files of the directory `source` into a Hugging Face cache under `hf_home` as the snapshot of
    `repo_id` at `revision`; returns the snapshot folder."""
    repo = os.path.join(hf_home, "hub", "models--" + repo_id.replace("/", "--"))
    snapshot = os.path.join(repo, "snapshots", commit)
    shutil.copytree(source, snapshot)
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    with open(os.path.join(repo, "refs", revision), "w") as f:
        f.write(commit)
    return snapshot


@pytest.fixture
def offline_cache(tmp_path, monkeypatch):
    """A classifier directory cached as the hub model `test-org/tiny-bert`, offline; returns the directory."""
    source = tmp_path / "source"
    model = BertClassifier(BertBackbone(BertConfig(**TINY)), num_classes=2)
    model.save_pretrained(str(source), label_names=["neg", "pos"])
    (source / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    hf_home = tmp_path / "hf_home"
    write_hf_cache(str(hf_home), "test-org/tiny-bert", str(source))
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return source, model


def test_a_cached_hub_name_loads_offline_in_every_from_pretrained(offline_cache):
    source, model = offline_cache
    x = {"token_ids": np.array([[2, 5, 6, 3]], "int32"), "segment_ids": np.zeros((1, 4), "int32"),
         "padding_mask": np.ones((1, 4), "int32")}
    for name in ("test-org/tiny-bert", "test-org/tiny-bert@main", "hf://test-org/tiny-bert"):
        loaded = BertClassifier.from_pretrained(name)
        np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), atol=1e-6)
    backbone = BertBackbone.from_pretrained("test-org/tiny-bert")
    np.testing.assert_allclose(to_numpy(backbone(x)["pooled_output"]), to_numpy(model.backbone(x)["pooled_output"]),
                               atol=1e-6)
    assert BertConfig.from_pretrained("test-org/tiny-bert") == BertConfig(**TINY)
    assert BertTokenizer.from_pretrained("test-org/tiny-bert").vocabulary == VOCAB
    logits = to_numpy(model(x))[0].astype("float64")
    probabilities = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    answer = pipeline("text-classification", model="test-org/tiny-bert")("hello world", top_k=None)
    assert {a["label"]: a["score"] for a in answer} == pytest.approx(dict(zip(["neg", "pos"], probabilities)), abs=1e-5)


def test_an_uncached_name_offline_fails_in_one_line_naming_the_model_and_the_cache(offline_cache, tmp_path):
    with pytest.raises(CheckpointNotFoundError) as error:
        BertBackbone.from_pretrained("bert-base-uncased")
    message = str(error.value)
    assert message.startswith("bert-base-uncased: ") and "\n" not in message
    assert os.path.join(str(tmp_path / "hf_home"), "hub") in message and "hf download bert-base-uncased" in message
    with pytest.raises(CheckpointNotFoundError, match="test-org/tiny-bert@v2: it is not in the Hugging Face cache"):
        resolve_model_path("test-org/tiny-bert@v2")  # a revision the cache does not hold


def test_a_path_is_never_looked_up_on_the_hub():
    assert looks_like_a_path("/data/model") and looks_like_a_path("./model") and looks_like_a_path("out/runs/model")
    assert not looks_like_a_path("bert-base-uncased") and not looks_like_a_path("google-bert/bert-base-uncased")
    with pytest.raises(CheckpointNotFoundError, match="^No checkpoint at ./missing_model$"):
        resolve_model_path("./missing_model")


def test_a_name_without_the_hub_packages_says_what_to_install_and_that_a_directory_works(monkeypatch):
    import sys

    for package in ("huggingface_hub", "kagglehub"):
        monkeypatch.setitem(sys.modules, package, None)  # import refused: the package is not installed
    with pytest.raises(CheckpointNotFoundError) as refused:
        resolve_model_path("test-org/tiny-bert")
    assert str(refused.value) == ("test-org/tiny-bert: no such directory, and loading a model by name needs "
                                  "huggingface_hub (pip install huggingface_hub), which downloads it into the local "
                                  "cache; or pass a directory holding its files.")
    with pytest.raises(CheckpointNotFoundError) as refused:
        resolve_model_path("kaggle://keras/bert/keras/bert_tiny_en_uncased/2")
    assert "needs kagglehub (pip install kagglehub)" in str(refused.value) and "[hub]" not in str(refused.value)
