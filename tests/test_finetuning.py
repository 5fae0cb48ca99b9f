import json
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.runners import finetuning
from keras_bert_impl.runners.cli import recipe_logging
from keras_bert_impl.runners.flags import config_from_flags, settings_parser
from keras_bert_impl.tasks.base import FinetuningConfig
from keras_bert_impl.training.epoch_schedule import BestCheckpoint
from keras_bert_impl.training.optimization import AdamWeightDecay
from keras_bert_impl.utils.errors import UserInputError


def _parse(*argv):
    return settings_parser(FinetuningConfig, "test").parse_args(["--output_dir=/tmp/x", *argv])


def _config(*argv):
    return config_from_flags(FinetuningConfig, _parse(*argv))


def test_flags_have_the_original_names_and_defaults():
    args = _parse("--do_train", "--nodo_eval", "--do_predict=true", "--init_checkpoint=ckpt")
    assert (args.do_train, args.do_eval, args.do_predict) == (True, False, True)
    assert (args.train_batch_size, args.eval_batch_size, args.learning_rate) == (32, 8, 5e-5)
    assert (args.num_train_epochs, args.warmup_proportion, args.max_seq_length) == (3.0, 0.1, 128)
    assert args.do_lower_case is None  # the checkpoint's own unless given


def test_backbone_and_tokenizer_come_from_the_checkpoint_directory(minilm_path):
    config = _config(f"--init_checkpoint={minilm_path}")
    tokenizer = finetuning.load_tokenizer(config)
    assert tokenizer.do_lower_case and tokenizer.vocab_size == 30522
    backbone = finetuning.load_backbone(config, hidden_dropout_prob=0.0)
    assert backbone.config.num_hidden_layers == 6 and backbone.config.hidden_dropout_prob == 0.0


def test_a_random_backbone_from_the_config_file_takes_the_same_options_as_a_checkpoint(tmp_path):
    """--bert_config_file without --init_checkpoint (a random backbone, e.g. a feature-based baseline) honours
    output_hidden_states and the config overrides as from_pretrained does."""
    from keras_bert_impl.config import BertConfig

    BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=16).to_json_file(tmp_path / "bert_config.json")
    config = _config(f"--bert_config_file={tmp_path / 'bert_config.json'}")
    backbone = finetuning.load_backbone(config, output_hidden_states=True, hidden_dropout_prob=0.0)
    assert backbone.output_hidden_states and backbone.config.hidden_dropout_prob == 0.0
    outputs = backbone({"token_ids": np.array([[2, 7, 3]]), "segment_ids": np.zeros((1, 3), "int32"),
                        "padding_mask": np.ones((1, 3), "int32")})
    assert len(outputs["hidden_states"]) == 3  # the embeddings and 2 layers
    assert not finetuning.load_backbone(config).output_hidden_states


def test_missing_sources_are_clear_errors(tmp_path):
    with pytest.raises(UserInputError, match="Either --init_checkpoint or --bert_config_file is required"):
        finetuning.load_backbone(_config())
    with pytest.raises(UserInputError, match="--vocab_file is required"):
        finetuning.load_tokenizer(_config(f"--init_checkpoint={tmp_path}"))


def test_optimizer_schedule_warms_up_over_the_proportion_then_decays_to_zero():
    assert finetuning.num_train_steps(100, 32, 3.0) == 12
    optimizer = finetuning.create_finetuning_optimizer(_config("--learning_rate=1e-4"), total_steps=100)
    assert isinstance(optimizer, AdamWeightDecay)
    schedule = optimizer._learning_rate
    rates = [float(keras.ops.convert_to_numpy(schedule(step))) for step in (5, 10, 55, 100)]
    np.testing.assert_allclose(rates, [0.5e-4, 0.9e-4, 0.45e-4, 0.0], rtol=1e-5, atol=1e-9)


def test_best_checkpoint_keeps_the_weights_of_the_best_epoch(tmp_path, capsys):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    scores = iter([0.2, 0.9, 0.5])
    snapshots = []

    def evaluate(m):
        snapshots.append(keras.ops.convert_to_numpy(m.layers[0].kernel).copy())
        return {"accuracy": next(scores)}

    callback = BestCheckpoint(evaluate, "accuracy", str(tmp_path))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    with recipe_logging():
        model.fit(np.ones((4, 2)), np.arange(4.0), epochs=3, verbose=0, callbacks=[callback])
    # A recipe's lines: every epoch's dev metrics, each after the progress bar's line.
    assert capsys.readouterr().out == ("\nepoch 1: dev accuracy=0.2000\n\nepoch 2: dev accuracy=0.9000\n"
                                       "\nepoch 3: dev accuracy=0.5000\n")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(model.layers[0].kernel), snapshots[1])
    assert callback.best_metrics == {"accuracy": 0.9, "epoch": 2}
    history = json.loads((tmp_path / "dev_metrics_per_epoch.json").read_text())
    assert [h["accuracy"] for h in history] == [0.2, 0.9, 0.5]
    assert not [f for f in os.listdir(tmp_path) if ".tmp" in f]
