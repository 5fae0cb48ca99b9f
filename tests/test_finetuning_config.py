"""The typed task configs (`tasks.base.FinetuningConfig`, `GlueConfig`, `NerConfig`, `SquadConfig`,
`SwagConfig`): every flag of a fine-tuning recipe is a config field of the same name and default; a config
refuses the values its flag refuses, naming the field; `config_from_flags` refuses a flag without a field; a
task refuses another task's config; and a GLUE task runs from Python without argparse (docs/training_in_python.md's
`run_finetuning(GlueTask(GlueConfig(...)))`) as the recipe runs it from the same settings."""

import dataclasses
import json
import os
import re
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file

from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.runners import run_glue, run_ner, run_squad, run_swag
from keras_bert_impl.runners.finetuning import run_finetuning
from keras_bert_impl.runners.flags import config_from_flags
from keras_bert_impl.tasks.glue import GlueConfig, GlueTask
from keras_bert_impl.tasks.ner import NerConfig, NerTask
from keras_bert_impl.tasks.squad import SquadConfig
from keras_bert_impl.tasks.swag import SwagConfig
from keras_bert_impl.utils.errors import UserInputError
from tests.finetuning_files import write_sst2_task

# recipe module, its task's config class, the flags it requires
RECIPES = {
    "run_glue": (run_glue, GlueConfig, {"task_name": "sst2"}),
    "run_ner": (run_ner, NerConfig, {}),
    "run_squad": (run_squad, SquadConfig, {}),
    "run_swag": (run_swag, SwagConfig, {}),
}


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_every_flag_is_a_config_field_of_the_same_name_and_default(name):
    module, config_class, required = RECIPES[name]
    required = {"output_dir": "out", **required}
    args = module.build_parser().parse_args([f"--{flag}={value}" for flag, value in required.items()])
    flags = {flag: value for flag, value in vars(args).items() if flag != "debug"}
    config = config_from_flags(config_class, args)
    assert type(config) is config_class and dataclasses.asdict(config) == flags
    assert config == config_class(**required)  # every field's default is its flag's


# (config class, field, a value its flag refuses as text, the same value from Python)
REFUSED = [
    (GlueConfig, "max_seq_length", "0", 0),
    (GlueConfig, "train_batch_size", "2.5", 2.5),
    (GlueConfig, "learning_rate", "-1e-5", -1e-5),
    (GlueConfig, "num_train_epochs", "0", 0.0),
    (GlueConfig, "warmup_proportion", "1.5", 1.5),
    (GlueConfig, "seed", "-1", -1),
    (GlueConfig, "log_every_steps", "-2", -2),
    (GlueConfig, "do_train", "maybe", "maybe"),
    (GlueConfig, "strategy", "horovod", "horovod"),
    (GlueConfig, "mixed_precision", "float64", "float64"),
    (GlueConfig, "verbose", "3", 3),
    (GlueConfig, "num_restarts", "0", 0),
    (GlueConfig, "learning_rate_grid", "5e-5,5e-5", (5e-5, 5e-5)),
    (GlueConfig, "classifier_dropout", "none", "none"),
    (NerConfig, "tagging_scheme", "bilou", "bilou"),
    (NerConfig, "feature_combine", "sum", "sum"),
    (NerConfig, "lstm_units", "1.5", 1.5),
    (NerConfig, "bilstm_units", "0", 0),
    (SquadConfig, "doc_stride", "64.5", 64.5),
    (SquadConfig, "null_score_diff_threshold", "high", "high"),
]


@pytest.mark.parametrize("config_class, field, text, value", REFUSED,
                         ids=[f"{c.__name__}.{f}" for c, f, _, _ in REFUSED])
def test_a_config_refuses_what_its_flag_refuses_naming_the_field(config_class, field, text, value, capsys):
    module, _, required = next(v for v in RECIPES.values() if v[1] is config_class)
    argv = ["--output_dir=out", *(f"--{k}={v}" for k, v in required.items()), f"--{field}={text}"]
    with pytest.raises(SystemExit):
        module.build_parser().parse_args(argv)
    assert f"--{field}" in capsys.readouterr().err
    message = rf"^{config_class.__name__}\.{field}: expected .*, got {re.escape(repr(value))}$"
    with pytest.raises(UserInputError, match=message):
        config_class(output_dir="out", **required, **{field: value})


def test_config_from_flags_refuses_a_flag_the_config_has_no_field_for():
    parser = run_swag.build_parser()
    parser.add_argument("--use_crf", action="store_true")
    with pytest.raises(TypeError, match="SwagConfig has no field for the flags use_crf"):
        config_from_flags(SwagConfig, parser.parse_args(["--output_dir=out", "--use_crf"]))


def test_a_task_refuses_another_tasks_config_and_a_namespace():
    with pytest.raises(TypeError, match="GlueTask takes a GlueConfig, got NerConfig"):
        GlueTask(NerConfig(output_dir="out"))
    with pytest.raises(TypeError, match="NerTask takes a NerConfig, got Namespace"):
        NerTask(run_ner.build_parser().parse_args(["--output_dir=out"]))


def _tiny_checkpoint(task_dir, directory):
    """A random 1-layer BERT over the task's vocabulary as a checkpoint directory (config.json,
    model.safetensors, vocab.txt)."""
    config = BertConfig.from_json_file(os.path.join(task_dir, "bert_config.json"))
    BertBackbone(BertConfig.from_dict({**config.to_dict(), "max_position_embeddings": 128})).save_pretrained(directory)
    shutil.copy(os.path.join(task_dir, "vocab.txt"), directory)
    return directory


def test_a_glue_task_runs_from_python_without_argparse_as_the_recipe_runs_it(tmp_path):
    data = str(tmp_path / "sst2")
    write_sst2_task(data, num_train=12, num_dev=8, num_test=2)
    checkpoint = _tiny_checkpoint(data, str(tmp_path / "checkpoint"))
    python_dir, recipe_dir = str(tmp_path / "python"), str(tmp_path / "recipe")

    # docs/training_in_python.md's example, with the tiny checkpoint and task.
    results = run_finetuning(GlueTask(GlueConfig(task_name="sst2", data_dir=data, init_checkpoint=checkpoint,
                                                 output_dir=python_dir, do_train=True, do_eval=True)))
    recipe_results = run_glue.main(["--task_name=sst2", f"--data_dir={data}", f"--init_checkpoint={checkpoint}",
                                    f"--output_dir={recipe_dir}", "--do_train", "--do_eval"])

    with open(os.path.join(python_dir, "eval_results.json"), encoding="utf-8") as f:
        assert json.load(f) == results
    assert results == recipe_results and results["epoch"] in (1, 2, 3) and 0 <= results["accuracy"] <= 1
    assert results["num_dev_examples"] == {"dev": 8} and results["task_name"] == "sst2"
    assert sorted(os.listdir(python_dir)) == sorted(os.listdir(recipe_dir))
    weights = [load_file(os.path.join(d, "model", "model.safetensors")) for d in (python_dir, recipe_dir)]
    assert sorted(weights[0]) == sorted(weights[1])
    for name in weights[0]:
        np.testing.assert_array_equal(weights[0][name], weights[1][name], err_msg=name)
