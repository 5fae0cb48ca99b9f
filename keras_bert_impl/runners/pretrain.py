"""Pretrain BERT (masked LM + next sentence) on TFRecords: google-research/bert's run_pretraining.py.

Same flags as the original, on any Keras backend (KERAS_BACKEND=tensorflow|jax|torch); the command is
`python -m keras_bert_impl.runners.pretrain` or, in a checkout, `python recipes/pretrain.py`:

    python -m keras_bert_impl.runners.pretrain --input_file=out/train-*.tfrecord --output_dir=run \
        --do_train --do_eval --eval_input_file=out/heldout.tfrecord \
        --config=bert_tiny --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \
        --num_train_steps=10000 --num_warmup_steps=1000 --learning_rate=1e-4 --save_checkpoints_steps=1000

The input files are those of recipes/create_pretraining_data.py (or of the original script). Where TensorFlow
is installed they are read by `tf.data` (`data/tf_pretraining_datasets.py`), else in pure Python as numpy
batches (`data/pretraining_batches.py`: the same records and reading scheme, its own shuffle order), so JAX and
torch pretrain without TensorFlow.
Run the same command again after an interruption (even kill -9): it restores the latest complete
checkpoint of `output_dir/checkpoints` (weights, optimizer state, step) and trains on to the same
`--num_train_steps`. With `--seed` the input pipeline skips the batches the restored steps read, and the
checkpoint holds the dropout and backend random states, so the resumed run is bitwise the uninterrupted
one; without `--seed` the pipeline restarts unseeded (as the Estimator did). Outputs in `output_dir`:
`checkpoints/`, `train_log.jsonl` (metrics per loop of `--iterations_per_loop` steps), `logs/`
(TensorBoard), `final/` (a Hugging Face BertForPreTraining directory, BertForMaskedLM for --objective=mlm,
BertLMHeadModel for ltr, read by `BertPretrainer.from_pretrained`) and `metrics.json` (final train metrics and, with --do_eval,
eval metrics). As in the original, eval reads `--input_file` unless `--eval_input_file` is given; on a TPU
and in a multi-process JAX job it reads whole batches of `--eval_batch_size` only (as TPUEstimator did).

A NaN or infinite loss, or a loss above 100 x max(1, its start) (`training.divergence`), stops the run: one
line `error: training diverged: step N: loss is nan; the newest finite checkpoint is ...` and exit status 1,
with no `final/` and no `metrics.json`; the newest checkpoint is the last finite one, which the same command
resumes from (a lower --learning_rate is another run: --overwrite_output_dir, or another --output_dir).

Ctrl-C (SIGINT) or SIGTERM stops the run after the current step on every backend: it writes that step's
checkpoint, says so in one line and exits 130 (SIGINT) or 143 (SIGTERM); the same command resumes from it
(`training.resumable`). A second Ctrl-C stops the process at once (the newest complete checkpoint stays).

The output directory belongs to one run: a lock (`output_dir/.lock`, held while the run lives) refuses a
second run on it, naming the process that holds it; `output_dir/run_settings.json` records the flags that
shape the trained weights (the fields of `PretrainingConfig` but those declared `shapes_weights=False`), and
while the directory holds checkpoints a training run with other values is refused, naming each flag with its
two values. `--overwrite_output_dir` starts afresh: it removes what a run writes there (`RUN_OUTPUTS`),
nothing else (refused when --init_checkpoint or an input file lies in one of them).

`--objective` selects the pretraining task of the paper's Table 5: `mlm_nsp` (default, the original),
`sop` (the same model on `create_pretraining_data.py --sentence_order` files), `mlm` (masked LM only, no
next-sentence head: "No NSP") or `ltr` (left-to-right LM on a causal backbone, no NSP: "LTR & No NSP"; the
masked files' original tokens are restored and each position predicts the next token; a fresh model from
--config/--bert_config_file gets `attention_direction="causal"`, and an --init_checkpoint must be causal).
The eval metrics include `masked_lm_perplexity` (`lm_perplexity` for ltr): exp of the mean nll over
every predicted token of the evaluated batches (the paper's "LM (ppl)" of Table 6).

Differences from the original: `--config` (a `BertConfig` preset name) may replace
`--bert_config_file`; `--optimizer=lamb` selects LAMB; `--steps_per_execution`, `--seed`,
`--keep_checkpoint_max`, `--verbose`, `--strategy`/`--tpu`/`--mixed_precision` are extra; `--use_tpu`
and `--tpu_name` select the TPU strategy. `--train_batch_size` is the global batch (split over replicas).
"""

import contextlib
import dataclasses
import logging
import os
import sys
import time
from typing import Optional

from keras_bert_impl.config import PRETRAINING_OBJECTIVES
from keras_bert_impl.runners.cli import run_main
from keras_bert_impl.runners.flags import config_from_flags, settings_parser
from keras_bert_impl.training.strategy_names import mixed_precision_setting, strategy_setting, tpu_setting
from keras_bert_impl.utils.settings import (
    BOOLEAN,
    INTEGER,
    NUMBER,
    check_settings,
    one_of,
    optional,
    run_settings,
    setting,
)

from keras_bert_impl.utils.optional_dependencies import is_installed

logger = logging.getLogger(__name__)

# What a run writes into --output_dir (what --overwrite_output_dir removes).
RUN_OUTPUTS = ("checkpoints", "train_log.jsonl", "logs", "final", "metrics.json")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainingConfig:
    """The settings of a pretraining run: one field per flag, with run_pretraining.py's names and defaults (plus
    a few extras); `output_dir` is required. The fields declared `shapes_weights=False` (where the outputs go,
    evaluation, checkpointing, logging, the distribution, the TPU flags) may change between the runs of one
    output_dir; the others are bound to it (`utils.settings.run_settings`).

    Examples:

    >>> config = PretrainingConfig(output_dir="/tmp/run", config="bert_tiny", do_train=True)
    >>> config.train_batch_size, config.num_train_steps, config.objective
    (32, 100000, 'mlm_nsp')
    """

    bert_config_file: Optional[str] = setting(None, help="The config json file of the pre-trained BERT model.")
    config: Optional[str] = setting(None, help="A BertConfig preset name (e.g. bert_tiny) instead of a file.")
    input_file: Optional[str] = setting(None, help="Input TF example files (comma-separated list or globs).")
    eval_input_file: Optional[str] = setting(None, help="Held-out TF example files; default --input_file.",
                                             shapes_weights=False)
    output_dir: str = setting(help="Where the checkpoints, logs and final model go.", shapes_weights=False)
    init_checkpoint: Optional[str] = setting(None, help="Initial checkpoint (anything from_pretrained reads).")
    max_seq_length: int = setting(128, INTEGER, "Maximum total input sequence length.")
    max_predictions_per_seq: int = setting(20, INTEGER, "Maximum masked LM predictions per sequence.")
    do_train: bool = setting(False, BOOLEAN, "Whether to run training.", shapes_weights=False)
    do_eval: bool = setting(False, BOOLEAN, "Whether to run eval on the dev set.", shapes_weights=False)
    train_batch_size: int = setting(32, INTEGER, "Total batch size for training.")
    eval_batch_size: int = setting(8, INTEGER, "Total batch size for eval.", shapes_weights=False)
    learning_rate: float = setting(5e-5, NUMBER, "The initial learning rate for Adam.")
    num_train_steps: int = setting(100000, INTEGER, "Number of training steps.")
    num_warmup_steps: int = setting(10000, INTEGER, "Number of warmup steps.")
    save_checkpoints_steps: int = setting(1000, INTEGER, "How often to save the model checkpoint.",
                                          shapes_weights=False)
    iterations_per_loop: int = setting(1000, INTEGER, "Steps per fit epoch: the progress bar's unit and the window "
                                       "of the logged train metrics.", shapes_weights=False)
    max_eval_steps: int = setting(100, INTEGER, "Maximum number of eval steps.", shapes_weights=False)
    optimizer: str = setting("adamw", one_of(("adamw", "lamb")), "adamw (original) or lamb.")
    gradient_accumulation_steps: int = setting(1, INTEGER, "Split each --train_batch_size batch into this many "
                                               "batches whose gradients are summed before one update (less memory, "
                                               "the same updates); steps count updates.")
    steps_per_execution: int = setting(1, INTEGER, "Train steps per compiled call.", shapes_weights=False)
    keep_checkpoint_max: int = setting(5, INTEGER, "Newest checkpoints kept.", shapes_weights=False)
    seed: Optional[int] = setting(None, optional(INTEGER), "Seed of weights init, dropout and data shuffling.")
    verbose: str = setting("auto", help="fit's progress: auto/1 (a progress bar on a terminal, a line per loop in a "
                           "file), 2 (a line per loop), 0.",
                           shapes_weights=False)
    objective: str = setting("mlm_nsp", one_of(PRETRAINING_OBJECTIVES), "mlm_nsp (original), sop (the same on "
                             "--sentence_order data), mlm (no NSP head) or ltr (left-to-right LM, causal attention, no "
                             "NSP).")
    overwrite_output_dir: bool = setting(False, BOOLEAN, "Start afresh: remove what an earlier run wrote in "
                                         "--output_dir (checkpoints, logs, final/, metrics.json) instead of resuming "
                                         "it; other files stay.", shapes_weights=False)
    strategy: str = strategy_setting()
    tpu: Optional[str] = tpu_setting()
    mixed_precision: str = mixed_precision_setting()
    # The original's TPU flags: --use_tpu means --strategy=tpu and --tpu_name means --tpu; the others are
    # accepted for command-line compatibility (TPUClusterResolver finds the zone and project itself).
    use_tpu: bool = setting(False, BOOLEAN, "Same as --strategy=tpu.", shapes_weights=False)
    tpu_name: Optional[str] = setting(None, help="Same as --tpu.", shapes_weights=False)
    tpu_zone: Optional[str] = setting(None, help="Accepted and ignored.", shapes_weights=False)
    gcp_project: Optional[str] = setting(None, help="Accepted and ignored.", shapes_weights=False)
    master: Optional[str] = setting(None, help="Accepted and ignored.", shapes_weights=False)
    num_tpu_cores: int = setting(8, INTEGER, "Accepted and ignored (the strategy counts them).", shapes_weights=False)

    def __post_init__(self):
        check_settings(self)


def build_parser():
    """The argument parser: a flag per field of `PretrainingConfig`."""
    return settings_parser(PretrainingConfig, __doc__.split("\n")[0])


def build_model(config):
    """The BertPretrainer of `config` (a `PretrainingConfig`): --init_checkpoint's (with --bert_config_file /
    --config fields) or a fresh one, for --objective (ltr: a causal backbone)."""
    from keras_bert_impl.checkpoints import task_registry
    from keras_bert_impl.config import BertConfig
    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.utils.errors import UserInputError

    pretrainer_class = task_registry.architecture_class("BertForPreTraining")

    bert_config = None
    if config.bert_config_file:
        bert_config = BertConfig.from_json_file(config.bert_config_file)
    elif config.config:
        bert_config = BertConfig.preset(config.config)
    if config.init_checkpoint:
        # The checkpoint's attention direction is that of its weights: a config file does not change it.
        overrides = {k: v for k, v in (bert_config.to_dict() if bert_config else {}).items()
                     if k != "attention_direction"}
        try:
            return pretrainer_class.from_pretrained(config.init_checkpoint, objective=config.objective, **overrides)
        except UserInputError as error:
            if config.objective == "ltr" and "objective='ltr'" in str(error):
                raise UserInputError(f"--objective=ltr: --init_checkpoint {error}") from None
            raise
    if bert_config is not None and config.objective == "ltr":
        bert_config = dataclasses.replace(bert_config, attention_direction="causal")
    if bert_config is None:
        raise ValueError("One of --bert_config_file, --config or --init_checkpoint is required.")
    if config.max_seq_length > bert_config.max_position_embeddings:
        raise ValueError(
            f"--max_seq_length={config.max_seq_length} exceeds max_position_embeddings="
            f"{bert_config.max_position_embeddings}."
        )
    return pretrainer_class(BertBackbone(bert_config), objective=config.objective)


def main(argv=None):
    """Runs the recipe; returns the dict written to output_dir/metrics.json. A user's mistake is one line on
    stderr and exit status 2, a diverged run (a non-finite loss or weight) one line and exit status 1
    (--debug: their traceback)."""
    return run_main(build_parser, run, sys.argv[1:] if argv is None else argv)


def run(args):
    """The recipe with parsed flags `args`; returns the dict written to output_dir/metrics.json."""
    return run_pretraining(config_from_flags(PretrainingConfig, args))


def run_pretraining(config):
    """Pretrains (and / or evaluates) as `config` (a `PretrainingConfig`) says; returns the dict written to
    output_dir/metrics.json."""
    if not config.do_train and not config.do_eval:
        raise ValueError("At least one of `do_train` or `do_eval` must be True.")
    if not config.input_file:
        raise ValueError("--input_file is required.")

    import keras

    from keras_bert_impl.training import checkpoint_store, distribute, run_directory

    # The strategy first: MultiWorkerMirroredStrategy configures TensorFlow's collectives, which must
    # precede any other use of the TensorFlow runtime (set_random_seed included).
    distribution = distribute.get_distribution("tpu" if config.use_tpu else config.strategy,
                                               tpu=config.tpu or config.tpu_name)
    if config.seed is not None:
        keras.utils.set_random_seed(config.seed)
    distribute.set_mixed_precision(config.mixed_precision)
    if distribution.process_share is not None and not is_installed("tensorflow"):
        # The numpy batches are each process's share already (`pretraining_batches(process_share=...)`).
        distribution.keras_distribution.auto_shard_dataset = False
    if distribution.num_replicas > 1:
        logger.info(f"{distribution.name}: {distribution.num_replicas} replicas x "
                    f"{distribution.per_replica_batch_size(config.train_batch_size)} = global batch "
                    f"{config.train_batch_size}")
    if config.init_checkpoint:  # a TF1 checkpoint without TensorFlow: one line, before output_dir is made
        from keras_bert_impl.checkpoints.model_directory import require_checkpoint_reader

        require_checkpoint_reader(config.init_checkpoint)
    # The chief writes output_dir, holding its lock; another worker of a multi-worker job writes a deleted
    # temporary directory. A run that fails before it writes anything leaves no output_dir it created.
    with run_directory.created_output_dir(config.output_dir), distribution.scope(), \
            distribution.write_dir(config.output_dir) as write_dir:
        with run_directory.RunLock(config.output_dir) if distribution.is_chief else contextlib.nullcontext():
            if config.overwrite_output_dir and distribution.is_chief:
                removed = run_directory.remove_run_outputs(config.output_dir, RUN_OUTPUTS, dataclasses.asdict(config))
                if removed:
                    logger.info(f"--overwrite_output_dir: removed {', '.join(removed)} from {config.output_dir}")
            checkpoint_dir = os.path.join(config.output_dir, checkpoint_store.CHECKPOINT_SUBDIR)
            if config.do_train:  # a directory holding checkpoints is bound to the settings of its run
                run_directory.bind_run_settings(config.output_dir, run_settings(config),
                                                bound=bool(checkpoint_store.list_checkpoints(checkpoint_dir)))
            return train_and_evaluate(config, distribution, write_dir)


def input_batches(config, file_patterns, batch_size, distribution, is_training, seed=None, drop_remainder=None,
                  skip_batches=0):
    """The `(x, y)` batches of `file_patterns` for `config.objective`: a `tf.data` pipeline
    (`tf_pretraining_datasets`) when TensorFlow is installed, else a generator of numpy batches
    (`pretraining_batches`, whose first `skip_batches` batches are skipped)."""
    if is_installed("tensorflow"):
        from keras_bert_impl.data.tf_pretraining_datasets import pretraining_dataset
        from keras_bert_impl.data.tf_pretraining_objectives import objective_dataset

        return objective_dataset(pretraining_dataset(
            file_patterns, config.max_seq_length, config.max_predictions_per_seq, batch_size, is_training=is_training,
            drop_remainder=drop_remainder, seed=seed), config.objective)
    from keras_bert_impl.data.pretraining_batches import pretraining_batches

    return pretraining_batches(
        file_patterns, config.max_seq_length, config.max_predictions_per_seq, batch_size, is_training=is_training,
        drop_remainder=drop_remainder, seed=seed, skip_batches=skip_batches, objective=config.objective,
        process_share=distribution.process_share)


def training_input(config, batch_size, distribution):
    """What `resumable.run_training` reads: with `--seed` one seeded pipeline past the batches the restored
    steps read (a resumed run sees exactly the batches of an uninterrupted one), else a function of the
    restored step giving a fresh unseeded pipeline."""
    if config.seed is not None and is_installed("tensorflow"):  # run_training skips the restored steps' batches
        return input_batches(config, config.input_file, batch_size, distribution, is_training=True, seed=config.seed)
    return lambda initial_step: input_batches(
        config, config.input_file, batch_size, distribution, is_training=True, seed=config.seed,
        skip_batches=0 if config.seed is None else initial_step * config.gradient_accumulation_steps)


def train_and_evaluate(config, distribution, write_dir=None):
    """The recipe's work, inside the strategy scope of `main`; outputs go to `write_dir` (default
    --output_dir), checkpoints are restored from --output_dir."""
    write_dir = config.output_dir if write_dir is None else write_dir
    import keras

    from keras_bert_impl.training import checkpoint_store, resumable
    from keras_bert_impl.training.optimization import accumulation_options, create_optimizer
    from keras_bert_impl.utils import file_io

    model = build_model(config)
    accumulation = accumulation_options(config.gradient_accumulation_steps, config.train_batch_size)
    optimizer = create_optimizer(
        config.learning_rate, config.num_train_steps, config.num_warmup_steps, optimizer_type=config.optimizer,
        **accumulation,
    )
    model.compile(optimizer=optimizer, steps_per_execution=config.steps_per_execution)
    verbose = config.verbose if config.verbose == "auto" else int(config.verbose)
    results = {"backend": keras.backend.backend(), "num_train_steps": config.num_train_steps}
    start = time.time()

    if config.do_train:
        batch_size = config.train_batch_size // config.gradient_accumulation_steps  # the batches of one update
        train_dataset = training_input(config, batch_size, distribution)
        # The driver: a non-finite or grown loss stops the run naming the step (the newest checkpoint stays a
        # finite one), Ctrl-C after a step with its checkpoint; the final weights are checked finite.
        outcome = resumable.run_training(
            model, train_dataset,
            resumable.StepSchedule(config.num_train_steps, config.save_checkpoints_steps, config.iterations_per_loop,
                                   config.steps_per_execution),
            config.output_dir, keep_checkpoint_max=config.keep_checkpoint_max, verbose=verbose, write_dir=write_dir,
            run_settings=run_settings(config) if write_dir == config.output_dir else None,
            batch_size=config.train_batch_size, sequence_length=config.max_seq_length,
        )
        logger.info(f"Trained from step {outcome['initial_step']} to step {outcome['global_step']}.")
        results.update(
            initial_step=outcome["initial_step"], global_step=outcome["global_step"], train=outcome["train_metrics"]
        )
        model.save_pretrained(os.path.join(write_dir, "final"))
    else:
        step = checkpoint_store.restore_latest_checkpoint(
            model, os.path.join(config.output_dir, checkpoint_store.CHECKPOINT_SUBDIR))
        results.update(initial_step=step, global_step=step)

    if config.do_eval:
        eval_dataset = input_batches(config, config.eval_input_file or config.input_file, config.eval_batch_size,
                                     distribution, is_training=False, drop_remainder=distribution.whole_batches_only)
        results["eval"] = resumable.evaluate(model, eval_dataset, config.max_eval_steps)
        logger.info("***** Eval results *****")
        for name, value in sorted(results["eval"].items()):
            logger.info(f"  {name} = {value:.4f}")
    results["elapsed_seconds"] = round(time.time() - start, 1)
    file_io.write_json(os.path.join(write_dir, "metrics.json"), results)
    return results


if __name__ == "__main__":
    main()
