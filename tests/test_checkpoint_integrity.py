"""Checkpoints are verified before they are trusted; a full disk or a diverged model writes nothing."""

import errno
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.training import checkpoint_store, metrics_log, random_state
from keras_bert_impl.utils.errors import TrainingDivergedError, UserInputError


def small_model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(64), keras.layers.Dropout(0.1), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    return model


def train_steps(model, steps):
    model.fit(np.ones((2 * steps, 4)), np.ones((2 * steps, 1)), batch_size=2, verbose=0)


def test_garbage_inside_newest_checkpoint_falls_back_to_previous_with_one_warning(tmp_path):
    model = small_model()
    train_steps(model, 2)
    checkpoint_store.save_checkpoint(model, str(tmp_path))
    train_steps(model, 2)
    _, newest = checkpoint_store.save_checkpoint(model, str(tmp_path))
    size = os.path.getsize(newest)
    with open(newest, "r+b") as f:  # 4 KB of garbage in the middle
        f.seek(size // 2 - 2048)
        f.write(os.urandom(4096))
    restored = small_model()
    with pytest.warns(UserWarning, match="Skipping checkpoint .*ckpt-00000004.*sha256") as caught:
        assert checkpoint_store.restore_latest_checkpoint(restored, str(tmp_path)) == 2
    assert len([w for w in caught if "Skipping checkpoint" in str(w.message)]) == 1
    with open(checkpoint_store.checkpoint_path(str(tmp_path), 2), "r+b") as f:
        f.seek(100)
        f.write(b"\0" * 64)
    with pytest.raises(UserInputError, match=str(tmp_path)):
        checkpoint_store.restore_latest_checkpoint(small_model(), str(tmp_path))


def test_full_disk_raises_oserror_naming_the_file_and_keeps_previous_checkpoint(tmp_path, monkeypatch):
    model = small_model()
    train_steps(model, 2)
    checkpoint_store.save_checkpoint(model, str(tmp_path))
    train_steps(model, 2)

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint_store.os, "fsync", full_disk)
    with pytest.raises(OSError, match=r"no space left on device while writing .*ckpt-00000004"):
        checkpoint_store.save_checkpoint(model, str(tmp_path))
    with pytest.raises(OSError, match=r"no space left on device while writing .*best.weights.h5"):
        checkpoint_store.save_model_weights(model, str(tmp_path / "best.weights.h5"))
    assert sorted(os.listdir(tmp_path)) == ["ckpt-00000002.weights.h5", "ckpt-00000002.weights.h5.sha256"]


def test_non_finite_weight_is_never_saved_as_a_checkpoint(tmp_path):
    model = small_model()
    train_steps(model, 2)
    kernel = model.layers[0].kernel
    kernel.assign(np.full(kernel.shape, np.nan, "float32"))
    with pytest.raises(TrainingDivergedError, match=r"step 2: variable .*kernel is not finite"):
        checkpoint_store.save_checkpoint(model, str(tmp_path))
    assert checkpoint_store.list_checkpoints(str(tmp_path)) == []


def test_dropout_seed_state_round_trips_through_a_checkpoint(tmp_path):
    model = small_model()
    train_steps(model, 3)
    expected = random_state.random_states(model)
    checkpoint_store.save_checkpoint(model, str(tmp_path))
    restored = small_model()
    checkpoint_store.restore_latest_checkpoint(restored, str(tmp_path))
    actual = random_state.random_states(restored)
    assert sorted(actual) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name])


def test_torn_last_line_of_metrics_log_is_dropped_on_resume(tmp_path):
    path = str(tmp_path / "train_log.jsonl")
    with open(path, "w") as f:
        f.write('{"step": 10}\n{"step": 20}\n{"st')
    assert metrics_log.read_metrics_log(path) == [{"step": 10}, {"step": 20}]
    metrics_log.truncate_metrics_log(path, 10)
    assert open(path).read() == '{"step": 10}\n'
