"""Gradient accumulation: N accumulated batches of B examples make the update one batch of N * B makes (no
dropout), with BERT's optimizers, their warmup schedule counted in updates, on every backend; and the step
counters of the training callbacks count updates."""

import dataclasses
import json
import os
import shutil

import keras
import numpy as np
import pytest

from keras_bert_impl import BertBackbone, BertClassifier
from keras_bert_impl.training.optimization import OptimizerStepSchedule, WarmupLinearDecay, create_optimizer
from keras_bert_impl.training.step_callbacks import StepCounter
from keras_bert_impl.utils.errors import UserInputError
from tests.backend_utils import to_numpy
from tests.task_harness import TINY
from tests.test_task_models import _inputs

NO_DROPOUT = dataclasses.replace(TINY, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def _trained_weights(optimizer_type, accumulation_steps, batch_size, x, y, initial_weights):
    model = BertClassifier(BertBackbone(NO_DROPOUT), num_classes=3, dropout=0.0)
    model.set_weights(initial_weights)
    options = {"gradient_accumulation_steps": accumulation_steps} if accumulation_steps > 1 else {}
    # Two updates, at the warmup's learning rates 0 and 0.5e-2: counted in updates, not in batches.
    optimizer = create_optimizer(1e-2, num_train_steps=4, num_warmup_steps=2, optimizer_type=optimizer_type, **options)
    model.compile(optimizer=optimizer)
    model.fit(x, y, batch_size=batch_size, epochs=1, shuffle=False, verbose=0)
    assert int(to_numpy(model.optimizer.iterations)) == 2
    return [to_numpy(w) for w in model.weights if "optimizer" not in w.path]


@pytest.mark.parametrize("optimizer_type", ["adamw", "lamb"])
def test_two_accumulated_batches_of_two_make_the_update_of_one_batch_of_four(optimizer_type):
    x = {k: np.concatenate([v, v[::-1], v[:1], v[1:2], v[2:], v[:1]])[:8] for k, v in _inputs(seq=8).items()}
    y = np.array([0, 2, 1, 1, 0, 2, 2, 1], "int32")
    initial = BertClassifier(BertBackbone(NO_DROPOUT), num_classes=3, dropout=0.0).get_weights()
    accumulated = _trained_weights(optimizer_type, 2, 2, x, y, initial)
    whole = _trained_weights(optimizer_type, 1, 4, x, y, initial)
    moved = max(float(np.abs(w - i).max()) for w, i in zip(whole, initial))
    assert moved > 1e-3  # the updates did something
    for a, w in zip(accumulated, whole):
        np.testing.assert_allclose(a, w, atol=2e-6, rtol=1e-5)


def test_optimizer_step_schedule_counts_updates_and_round_trips_through_the_optimizer_config():
    schedule = WarmupLinearDecay(1.0, num_train_steps=8, num_warmup_steps=4)
    optimizer = create_optimizer(1.0, 8, 4, gradient_accumulation_steps=3)
    wrapped = optimizer.get_config()["learning_rate"]
    restored = type(optimizer).from_config(optimizer.get_config())
    for batch in range(12):
        expected = float(schedule(batch // 3))
        assert float(OptimizerStepSchedule(schedule, 3)(batch)) == expected
        assert float(keras.optimizers.schedules.deserialize(wrapped)(batch)) == expected
    assert isinstance(restored.get_config()["learning_rate"], dict)
    assert restored.get_config()["learning_rate"]["config"]["accumulation_steps"] == 3  # wrapped once


def test_step_counter_counts_optimizer_steps_of_accumulated_batches():
    counter = StepCounter(initial_step=5, accumulation_steps=4)
    counter.on_epoch_begin(0)
    steps = []
    for batch in range(9):
        counter.on_train_batch_end(batch)
        steps.append(counter.step)
    assert steps == [5, 5, 5, 6, 6, 6, 6, 7, 7]
    resumed = StepCounter(initial_step=1, accumulation_steps=4, initial_batches=6)  # mid-group, e.g. an epoch end
    resumed.on_epoch_begin(0)
    resumed.on_train_batch_end(0)
    resumed.on_train_batch_end(1)
    assert resumed.step == 2


def test_run_glue_with_accumulation_and_lora_counts_updates_and_writes_merged_model_and_adapters(tmp_path):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.runners import run_glue
    from tests.finetuning_files import run_glue_flags, write_sst2_task

    output_dir = tmp_path / "out"
    data_flags = write_sst2_task(str(tmp_path / "data"))
    run_glue.main(run_glue_flags(data_flags, str(output_dir), "--gradient_accumulation_steps=2", "--lora_rank=2"))
    # 40 examples in batches of 4 / 2 = 2: 20 batches, 10 updates per epoch.
    records = [json.loads(line) for line in (output_dir / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [10, 20, 30]
    steps = [json.loads(line)["step"] for line in (output_dir / "train_steps_log.jsonl").read_text().splitlines()]
    assert steps[:2] == [4, 8]  # --log_every_steps=4 updates
    adapters = output_dir / "adapters.lora.h5"
    merged = BertClassifier.from_pretrained(str(output_dir / "model"), num_classes=2)
    assert merged.backbone.lora_rank is None and adapters.is_file()
    with pytest.raises(UserInputError, match="--gradient_accumulation_steps=3: expected a positive divisor"):
        run_glue.run(run_glue.build_parser().parse_args(
            run_glue_flags(data_flags, str(tmp_path / "other"), "--gradient_accumulation_steps=3")))


def test_pretraining_with_accumulation_counts_updates_and_resumes_to_the_uninterrupted_weights(tmp_path):
    from keras_bert_impl.runners import pretrain
    from keras_bert_impl.training import checkpoint_store
    from tests.test_pretrain_recipe import recipe_args
    from tests.test_training import write_tiny_data

    data = write_tiny_data(str(tmp_path / "data"))

    def run(output_dir, num_train_steps):
        args = [a for a in recipe_args(data, str(output_dir)) if not a.startswith(("--num_train_steps", "--save_"))]
        args = [a for a in args if not a.startswith(("--iterations_per_loop", "--do_eval"))]
        return pretrain.main(args + [f"--num_train_steps={num_train_steps}", "--save_checkpoints_steps=4",
                                     "--iterations_per_loop=4", "--gradient_accumulation_steps=2", "--nodo_eval"])

    whole = run(tmp_path / "whole", 8)
    assert (whole["initial_step"], whole["global_step"]) == (0, 8)
    checkpoints = tmp_path / "whole" / checkpoint_store.CHECKPOINT_SUBDIR
    assert [step for step, _ in checkpoint_store.list_checkpoints(str(checkpoints))] == [4, 8]
    records = [json.loads(line) for line in (tmp_path / "whole" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [4, 8]
    # A run that crashed after its step-4 checkpoint: the same command resumes there.
    shutil.copytree(tmp_path / "whole", tmp_path / "resumed")
    os.remove(checkpoint_store.checkpoint_path(str(tmp_path / "resumed" / checkpoint_store.CHECKPOINT_SUBDIR), 8))
    shutil.rmtree(tmp_path / "resumed" / "final")
    resumed = run(tmp_path / "resumed", 8)
    assert (resumed["initial_step"], resumed["global_step"]) == (4, 8)
    a = BertBackbone.from_pretrained(str(tmp_path / "whole" / "final"))
    b = BertBackbone.from_pretrained(str(tmp_path / "resumed" / "final"))
    for wa, wb in zip(a.weights, b.weights):
        np.testing.assert_allclose(to_numpy(wb), to_numpy(wa), atol=1e-6, err_msg=wa.path)
