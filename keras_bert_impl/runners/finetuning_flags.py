"""The fine-tuning recipes' flags (google-research/bert's run_classifier.py, run_squad.py and friends: the
same names and defaults) and the typed config made from them.

A recipe (`runners.run_glue`, `run_ner`, `run_squad`, `run_swag`) builds its parser from
`finetuning_flag_parser` and the `add_*` functions below; its `run(args)` makes the task's config once from
the parsed flags with `config_from_flags` (every flag is the field of its name of `tasks.base.FinetuningConfig`
or a subclass) and runs the task (`runners.finetuning_recipe`). The module imports neither Keras nor the
tasks, so that a recipe's `--help` and a flag's error answer at once.
"""

import argparse
import dataclasses

from keras_bert_impl.runners.flags import (
    FlagParser,
    add_distribution_flags,
    fraction,
    non_negative_int,
    positive_float,
    positive_int,
)
from keras_bert_impl.utils.settings import LEARNING_RATE_GRID

# Flags of every recipe's parser that are no setting of a run (`FlagParser`'s --debug, read by `cli.run_main`).
NOT_SETTINGS = ("debug",)
# Settings that do not change the trained weights (where the outputs go, evaluation and prediction, logging,
# the distribution): a training run in an output_dir may change them; every other setting (learning rate or
# grid, batch size, sequence length, epochs, warmup, seed, model, data, ...) is bound to the directory
# (`run_settings`, `training.run_directory.bind_run_settings`).
RUN_SETTINGS_IGNORED = (
    "output_dir", "overwrite_output_dir", "do_train", "do_eval", "do_predict", "eval_batch_size",
    "predict_batch_size", "test_file", "log_every_steps", "keep_checkpoint_max", "steps_per_execution",
    "save_model", "verbose", "verbose_logging", "strategy", "tpu",
    # SQuAD's decoding of answers
    "n_best_size", "max_answer_length", "null_score_diff_threshold",
)


def learning_rate_list(value):
    """The value of `--learning_rate_grid`: comma-separated positive learning rates, no repeats.

    Examples:

    >>> learning_rate_list("5e-5,4e-5, 3e-5")
    (5e-05, 4e-05, 3e-05)
    >>> learning_rate_list("5e-5,0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected comma-separated positive learning rates such as 5e-5,4e-5,3e-5,2e-5, got '5e-5,0'
    """
    try:
        rates = tuple(float(part.strip()) for part in str(value).split(","))
    except ValueError:
        rates = ()
    if not LEARNING_RATE_GRID.accepts(rates):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated positive learning rates such as 5e-5,4e-5,3e-5,2e-5, got {value!r}")
    return rates


def finetuning_flag_parser(description, max_seq_length=128):
    """A `FlagParser` holding the flags common to google-research/bert's run_classifier.py,
    run_squad.py and friends, with their defaults, and the paper's protocol (`runners.protocol`)."""
    p = FlagParser(description=description)
    p.add_argument("--data_dir", default=None, help="Directory of the task's data files.")
    p.add_argument(
        "--init_checkpoint",
        default=None,
        help="Checkpoint to start from: a Hugging Face directory, a Google checkpoint directory or prefix, "
        "or a directory written by save_pretrained. Without it the model starts from random weights.",
    )
    p.add_bool_flag("ignore_stored_head", False, "Start a new task head on --init_checkpoint's backbone, also when "
                    "it holds another task's model (refused otherwise) or other labels.")
    p.add_argument("--bert_config_file", default=None, help="bert_config.json; default: the checkpoint's own.")
    p.add_argument("--vocab_file", default=None, help="vocab.txt; default: the checkpoint directory's vocab.txt.")
    p.add_bool_flag("do_lower_case", None, "Lower-case the input (uncased models). Default: the checkpoint's.")
    p.add_bool_flag("nfkc", None, "Replace every character by its NFKC form before tokenizing (full-width letters, "
                    "digits and punctuation as ASCII; not the original's), saved with the model. Default: the "
                    "checkpoint's tokenizer_config.json, else off.")
    p.add_argument("--output_dir", required=True, help="Where checkpoints, logs, metrics and predictions go; "
                   "a run interrupted there resumes from its last epoch when started again.")
    p.add_bool_flag("overwrite_output_dir", False,
                    "Start afresh: remove what an earlier run wrote in --output_dir (checkpoints, logs, model/, "
                    "results, predictions) instead of resuming it; other files stay.")
    p.add_argument("--max_seq_length", type=positive_int, default=max_seq_length,
                   help="Sequence length after WordPiece.")
    p.add_bool_flag("do_train", False, "Fine-tune on the training set.")
    p.add_bool_flag("do_eval", False, "Evaluate on the dev set.")
    p.add_bool_flag("do_predict", False, "Predict on the test set.")
    p.add_argument("--train_batch_size", type=positive_int, default=32, help="Examples per training batch.")
    p.add_argument("--eval_batch_size", type=positive_int, default=8, help="Examples per evaluation batch.")
    p.add_argument("--predict_batch_size", type=positive_int, default=8, help="Examples per prediction batch.")
    p.add_argument("--learning_rate", type=positive_float, default=5e-5, help="Peak learning rate of AdamW.")
    p.add_argument("--num_train_epochs", type=positive_float, default=3.0,
                   help="Training epochs (a fraction counts as a whole epoch).")
    p.add_argument("--warmup_proportion", type=fraction, default=0.1, help="Fraction of steps of linear warmup.")
    p.add_argument("--seed", type=non_negative_int, default=42, help="Seed of initialization and shuffling.")
    p.add_argument("--steps_per_execution", type=positive_int, default=1, help="Train steps per compiled call.")
    p.add_argument("--log_every_steps", type=non_negative_int, default=100,
                   help="Optimizer steps between two records of output_dir/train_steps_log.jsonl (0: none).")
    p.add_argument("--keep_checkpoint_max", type=positive_int, default=1,
                   help="Epoch checkpoints (with optimizer state) kept in output_dir/checkpoints for resuming: the "
                   "newest ones (best.weights.h5 keeps the best epoch's weights).")
    p.add_argument("--gradient_accumulation_steps", type=positive_int, default=1,
                   help="Split each --train_batch_size batch into this many batches whose gradients are summed "
                        "before one update (less memory, the same updates); steps count updates.")
    p.add_argument("--lora_rank", type=positive_int, default=None,
                   help="Fine-tune LoRA adapters of this rank on the attention's query and value projections "
                        "(the backbone frozen; output_dir/model gets the merged weights, "
                        "output_dir/adapters.lora.h5 the adapters); default: full fine-tuning.")
    p.add_argument("--learning_rate_grid", type=learning_rate_list, default=None,
                   help="Comma-separated learning rates, e.g. 5e-5,4e-5,3e-5,2e-5 (the paper's): one run each "
                   "(replacing --learning_rate) in output_dir/runs/, the best on dev selected "
                   "(output_dir/protocol_results.json).")
    p.add_argument("--num_restarts", type=positive_int, default=1,
                   help="Runs per learning rate, restart k with seed --seed + 1000*k (other classifier "
                   "initialization and shuffling), the best on dev selected.")
    add_distribution_flags(p)
    return p


def add_data_file_flags(p):
    """`--train_file`, `--validation_file`, `--test_file`: a split in a datasets-ecosystem file (JSON lines,
    JSON, CSV/TSV, parquet; `data.dataset_files`) instead of the original file in `--data_dir`."""
    for split, flag in (("training", "train_file"), ("dev", "validation_file"), ("test", "test_file")):
        p.add_argument(f"--{flag}", default=None,
                       help=f"The {split} set as a JSON lines, JSON, CSV, TSV or parquet file (as Hugging Face "
                       f"datasets exports it), instead of --data_dir's original file.")
    return p


def add_task_flags(p, unit="example", bilstm=False):
    """The flags every task recipe adds: dynamic padding, saving the model directory, fit's verbosity; with
    `bilstm` (the token-level recipes, NER and SQuAD) first `--bilstm_units`, the paper's "+ BiLSTM" head
    (Table 5). `unit` names what a batch holds in the help texts (example, window, feature)."""
    if bilstm:
        p.add_argument("--bilstm_units", type=positive_int, default=None,
                       help="Units per direction of a randomly initialized BiLSTM between BERT's sequence output "
                       "and the output layer (the paper's '+ BiLSTM', Table 5). Default: none (the original "
                       "head); a checkpoint written with one keeps its own.")
    p.add_bool_flag("dynamic_padding", True, f"Pad each batch to its longest {unit}, bucketing by length.")
    p.add_argument("--pad_to_multiple_of", type=positive_int, default=8,
                   help="Round dynamic lengths up to a multiple.")
    p.add_bool_flag("save_model", True, "Write the fine-tuned model with its vocab.txt and tokenizer_config.json "
                    "to output_dir/model (Hugging Face layout).")
    p.add_argument("--verbose", type=int, choices=(0, 1, 2), default=1,
                   help="fit's progress: 1 = a progress bar on a terminal (one line per epoch in a file), 2 = one "
                   "line per epoch, 0 = none.")
    return p


def config_from_flags(config_class, args):
    """The `config_class` (a `tasks.base.FinetuningConfig` subclass) of the parsed flags `args`: each field
    from the flag of its name, the fields without a flag at their defaults.

    Raises:
        TypeError: `args` holds a flag the config has no field for (a recipe's parser and its task's config
            disagree).

    Examples:

    >>> from keras_bert_impl.tasks.swag import SwagConfig
    >>> from keras_bert_impl.runners.run_swag import build_parser
    >>> config = config_from_flags(SwagConfig, build_parser().parse_args(["--output_dir=/tmp/swag", "--do_train"]))
    >>> config.do_train, config.train_batch_size, type(config).__name__
    (True, 32, 'SwagConfig')
    """
    flags = {name: value for name, value in vars(args).items() if name not in NOT_SETTINGS}
    unknown = sorted(set(flags) - {field.name for field in dataclasses.fields(config_class)})
    if unknown:
        raise TypeError(f"{config_class.__name__} has no field for the flags {', '.join(unknown)}")
    return config_class(**flags)



def run_settings(config):
    """The settings of a `tasks.base.FinetuningConfig` that shape the trained weights (every field but
    `RUN_SETTINGS_IGNORED`), as JSON values: recorded in a run's output_dir, and a protocol run's
    completion record.

    Examples:

    >>> from keras_bert_impl.tasks.glue import GlueConfig
    >>> settings = run_settings(GlueConfig(task_name="sst2", output_dir="/tmp/run", eval_batch_size=64))
    >>> settings["learning_rate"], settings["train_batch_size"], "eval_batch_size" in settings
    (5e-05, 32, False)
    """
    settings = {}
    for name, value in sorted(dataclasses.asdict(config).items()):
        if name not in RUN_SETTINGS_IGNORED:
            settings[name] = list(value) if isinstance(value, tuple) else value
    return settings
