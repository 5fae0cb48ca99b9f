"""The fine-tuning driver: `run_finetuning(task)` runs any `keras_bert_impl.tasks` task on its config (seed,
tokenizer, model, BERT's optimizer schedule, `fit` keeping the best checkpoint by the task's dev metric,
the model directory, eval_results.json, predictions) under `--strategy` and `--mixed_precision`.

The task recipes (`keras_bert_impl.runners.run_glue`, `run_ner`, `run_squad`, `run_swag`; `recipes/run_*.py`)
are their flags (the fields of `tasks.configs`) and `finetuning_recipe`: the task's config made from the flags,
and one call of `run_finetuning`. The settings are a task's config (`tasks.base.FinetuningConfig`), one
field per flag of the same name; the flag names below are those fields.

Order of a run: the settings are checked (`task.check_flags`, `tasks.base.check_model_flags`), the tokenizer
loaded, every data file the config names read and checked (`task.setup`, `task.training_set`), its [UNK]
tokens reported (`tokenizers.unknown_tokens.report_unknown_tokens` on `task.texts_read()`: one line, and a
warning above 1%), and only then the checkpoint loaded (`task.build_model`), so a user's mistake is
reported within seconds (`UserInputError`, printed as one line by `runners.cli.run_main`).

What a training run leaves in `--output_dir` (printed at the end, with the disk each takes and their sum):

    train_log.jsonl            one JSON line per epoch: step, epoch, train loss/metrics, dev_<metric>s
    train_steps_log.jsonl      the epoch's running train loss/metrics every --log_every_steps steps
    logs/train/                the same as TensorBoard scalars (`tensorboard --logdir output_dir/logs`)
    dev_metrics_per_epoch.json every epoch's dev metrics
    best.weights.h5            the best epoch's weights (no optimizer state)
    checkpoints/               model + optimizer state at the last `--keep_checkpoint_max` (1) epoch ends, and
                               state.json (epoch, best dev metric and history per checkpoint)
    model/, eval_results.json, prediction files    (the task's)

Divergence: a NaN or infinite train loss or metric, or a loss above 100 x max(1, its start)
(`training.divergence.DivergenceGuard`, first of the fit callbacks), a non-finite main dev metric
(`BestCheckpoint`) or non-finite weights about to be saved as best or final stop the run with
`TrainingDivergedError` naming the step or epoch (one line and exit status 1 through `runners.cli.run_main`);
the epoch's checkpoint, best.weights.h5 and model/ are not written from it, so the newest checkpoint and
best.weights.h5 stay finite.

The training is the package's one resumable driver (`training.resumable.run_training`, on fine-tuning's
`training.epoch_schedule.EpochSchedule`: epoch checkpoints, the best epoch on dev), as pretraining's is.
Resuming: when `output_dir/checkpoints` holds a checkpoint, the same command restores the latest one
(weights, optimizer state and step, the best epoch so far) and trains the remaining epochs; every epoch
sees the batches an uninterrupted run would have seen (the shuffle is seeded with `--seed` + epoch), so
with the same seed and no dropout the result is the uninterrupted run's. A run whose checkpoints already
reach `--num_train_epochs` trains nothing: it takes its best weights and evaluates / predicts / saves as
the flags say. `--overwrite_output_dir` (or another `--output_dir`) trains from the start: it removes what a
run writes in output_dir (`OUTPUT_DESCRIPTIONS`: checkpoints, logs, model/, results), nothing else, and is
refused in one line when a file the run reads (--init_checkpoint, --vocab_file, a data file) lies in one of them.

One run per output_dir, bound to its settings (`training.run_directory`): the run holds `output_dir/.lock`
while it lives, and a second run on the directory is refused, naming the process that holds it; a training
run records the settings that shape the trained weights in `output_dir/run_settings.json`
(`utils.settings.run_settings`), and while output_dir holds checkpoints, a training run with other values
(e.g. another --learning_rate, --train_batch_size or --max_seq_length) is refused before it reads anything,
in one line naming each setting with its two values.

Ctrl-C (SIGINT) or SIGTERM during training stops the run after the current step on every backend
(`training.interrupts.StopOnSignal`), in one line, with exit status 130 or 143. Fine-tuning resumes at an
epoch's start (its batches are those of the epoch's seeded shuffle, which Keras' own shuffle of SQuAD's
features does not let a run enter halfway): the same command resumes from the newest epoch checkpoint, and
the line says which one and how many steps after it are trained again (none when the signal came during
the epoch's dev evaluation: the epoch's checkpoint is written first).

Several worker processes (TensorFlow, `--strategy=multiworker`, e.g. started by `runners.launch`): every
worker runs the same driver on its share of every batch (tf.distribute), `predict` gathers every worker's
predictions, and only the chief (worker 0) writes `--output_dir`; the others write a temporary directory
(`distribute.Distribution.write_dir`) and resume from the chief's checkpoints. In a job of several JAX
processes each process feeds its share of every global batch and the predictions run across the processes
(`setup_distribution`).

The paper's protocol: with `--learning_rate_grid` and / or `--num_restarts` > 1, `run_finetuning` trains one
such run per (learning rate, seed) in `output_dir/runs/lr=...,seed=.../`, selects the best on dev and writes
`output_dir/protocol_results.json` (`runners.protocol`).
"""

import contextlib
import dataclasses
import logging
import math
import os
import time
import warnings

import keras

from keras_bert_impl.checkpoints import model_directory
from keras_bert_impl.data import batching, streaming
from keras_bert_impl.runners import protocol
from keras_bert_impl.tasks.base import (  # noqa: F401 (load_backbone: part of this module's API)
    check_model_flags,
    load_backbone,
    load_tokenizer,
)
from keras_bert_impl.tokenizers.unknown_tokens import report_unknown_tokens
from keras_bert_impl.training import checkpoint_store, distribute, run_directory
from keras_bert_impl.training.epoch_schedule import BEST_WEIGHTS, DEV_METRICS, BestCheckpoint, EpochSchedule
from keras_bert_impl.training.optimization import accumulation_options, create_optimizer
from keras_bert_impl.training.resumable import STEPS_LOG, TENSORBOARD_DIR, TRAIN_LOG, run_training
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.settings import run_settings

logger = logging.getLogger(__name__)

LORA_WEIGHTS = "adapters.lora.h5"
# What a resumed run reads back from --output_dir (a multi-worker job's other workers read the chief's).
READ_BACK = (checkpoint_store.CHECKPOINT_SUBDIR, BEST_WEIGHTS)

# What the driver and the tasks write into --output_dir, for the list printed at the end of a run.
OUTPUT_DESCRIPTIONS = {
    TRAIN_LOG: "train and dev metrics per epoch (JSON lines)",
    STEPS_LOG: "running train metrics every --log_every_steps steps (JSON lines)",
    TENSORBOARD_DIR: "TensorBoard events (tensorboard --logdir {path})",
    checkpoint_store.CHECKPOINT_SUBDIR: "model + optimizer state per epoch: the same command resumes from it",
    BEST_WEIGHTS: "the best epoch's weights (model.load_weights)",
    LORA_WEIGHTS: "--lora_rank: the LoRA adapters (backbone.load_lora_weights)",
    DEV_METRICS: "dev metrics of every epoch",
    "eval_results.json": "the final dev metrics",
    "model": "the fine-tuned model directory (from_pretrained, export_savedmodel.py)",
    "train_data_stats.json": "counts of the training examples and features",
    "predictions.json": "SQuAD: the answer of every question",
    "nbest_predictions.json": "SQuAD: the n best answers of every question, with probabilities",
    "null_odds.json": "SQuAD v2.0: score(no answer) - score(best span) per question",
    "test_predictions.txt": "NER: the predicted tag of every test word (CoNLL columns)",
    "test_predictions.json": "NER, a CLUENER test file: its records with the predicted entities as label",
    "test_predictions.csv": "SWAG: the predicted ending of every test example",
    "test_predictions.tsv": "your own classification data: the predicted label of every test example",
    protocol.RUNS_DIR: "one directory per (learning rate, seed) run of the protocol",
    protocol.RESULTS_JSON: "every run's dev metrics, the selected run, mean and std per learning rate",
    protocol.RESULTS_MD: "the same as a markdown table",
    run_directory.SETTINGS_FILE: "the settings that shape the trained weights (a rerun with others is refused)",
}


def setup_distribution(config):
    """Applies `--mixed_precision`, resolves `--strategy`/`--tpu` and returns the `distribute.Distribution`
    whose `scope()` the run builds and compiles its model in (`config`: a `tasks.base.FinetuningConfig`).

    `--train_batch_size` stays the global batch. The distribution says how the batches are fed: on a TPU
    (`is_tpu`) every batch has one static shape (padded to `--max_seq_length`, whole batches only);
    `whole_batches_only` says whether an epoch's last partial batch is left out; in a multi-process JAX job
    `process_share` is `(process index, process count)`: every process plans the same global batches and
    feeds its share of each (whole batches only), and predictions run across the processes
    (`distribute.CrossProcessPredictions`); elsewhere it is None.
    """
    distribute.set_mixed_precision(config.mixed_precision)
    distribution = distribute.get_distribution(config.strategy, tpu=config.tpu)
    if distribution.is_multiprocess_jax and protocol.protocol_settings(config) is not None:
        raise UserInputError("--learning_rate_grid / --num_restarts run in one process: start one JAX process (a "
                             "worker would not see the runs the chief has finished).")
    if distribution.process_share is not None:
        # The training batches are already each process's share (`BucketedBatches(process_share=...)`).
        distribution.keras_distribution.auto_shard_dataset = False
    if distribution.num_replicas > 1 and config.do_train:
        per_replica = distribution.per_replica_batch_size(config.train_batch_size)
        logger.info(f"{distribution.name}: {distribution.num_replicas} replicas x {per_replica} = global batch "
                    f"{config.train_batch_size}")
    return distribution


def distributed_config(config, distribution, output_dir):
    """The config this process runs under `distribution`: `config` writing `output_dir` (on a multi-worker
    job's other workers a temporary directory, `Distribution.write_dir`), on a TPU without
    `--dynamic_padding` (static shapes)."""
    if distribution.is_tpu and config.dynamic_padding:
        logger.info("TPU: every batch is padded to --max_seq_length (static shapes); --dynamic_padding is off.")
        config = dataclasses.replace(config, dynamic_padding=False)
    return dataclasses.replace(config, output_dir=output_dir)


def num_train_steps(num_examples, train_batch_size, num_train_epochs, whole_batches_only=False):
    """Optimizer steps of a fine-tuning run: every batch of every epoch (the last partial batch counts,
    unless `whole_batches_only`)."""
    return max(1, batching.num_batches(num_examples, train_batch_size, whole_batches_only)
               * math.ceil(num_train_epochs))


def predictor(model, distribution):
    """What the tasks compute `model`'s predictions with: the model, or across the processes of a
    multi-process JAX job (`distribute.CrossProcessPredictions`, which compiles its step once per batch
    shape: make one per model)."""
    return distribute.CrossProcessPredictions(model) if distribution.process_share is not None else model


def create_finetuning_optimizer(config, total_steps):
    """BERT's AdamW with warmup over `warmup_proportion` of the steps, then linear decay to zero; with
    `gradient_accumulation_steps` N, an update every N batches (`total_steps` counts updates)."""
    return create_optimizer(config.learning_rate, total_steps, int(total_steps * config.warmup_proportion),
                            **accumulation_options(config.gradient_accumulation_steps, config.train_batch_size))


def training_batches(features, labels, config, distribution=None, initial_epoch=0, **options):
    """The shuffled, length-bucketed training batches of a recipe, reshuffled every epoch, for `model.fit`.

    A `tf.data.Dataset` on the TensorFlow backend (static whole batches on a TPU), a Keras `PyDataset` on
    JAX and PyTorch (see `batching.BucketedBatches` for why). Pass `shuffle=False` to `model.fit`: the
    batches are already shuffled within length buckets. Epoch k (0-based) is shuffled with the seed
    `config.seed + k`, also when a resumed run starts at `initial_epoch=k`.

    Args:
        features, labels: as in `batching.bucketed_batches`; or a `streaming.StreamedExamples` (a training file
            read epoch by epoch, labels None).
        config: the run's `tasks.base.FinetuningConfig` (train_batch_size, seed, dynamic_padding,
            max_seq_length, pad_to_multiple_of).
        distribution: the run's `distribute.Distribution` (a TPU: static shapes; a multi-process JAX job:
            this process's share of every batch), None: one process on its default device.
        initial_epoch: the epoch (0-based) `fit` starts at.
        **options: more `bucketed_batches` arguments (e.g. label_padding_value).
    """
    options = {"dynamic_padding": config.dynamic_padding, "max_length": config.max_seq_length,
               "pad_to_multiple_of": config.pad_to_multiple_of, **options}
    static_shapes = distribution is not None and distribution.is_tpu
    streamed = isinstance(features, streaming.StreamedExamples)
    if keras.backend.backend() == "tensorflow":
        from keras_bert_impl.data import tf_batching

        epochs = dict(batch_size=config.train_batch_size, seed=config.seed, static_shapes=static_shapes,
                      initial_epoch=initial_epoch, **options)
        if streamed:
            return tf_batching.streamed_dataset(features, **epochs)
        return tf_batching.bucketed_dataset(features, labels, shuffle=True, **epochs)
    if static_shapes:
        options.update(dynamic_padding=False, drop_remainder=True)
    epochs = dict(seed=config.seed, initial_epoch=initial_epoch,
                  process_share=None if distribution is None else distribution.process_share, **options)
    if streamed:
        return streaming.StreamedBatches(features, config.train_batch_size, **epochs)
    return batching.BucketedBatches(features, labels, config.train_batch_size, **epochs)


def warn_untrained_heads(model, config):
    """Before an evaluation-only run: one warning (logged: a recipe's line `warning: ...` on stderr) when the
    model's task head (e.g. the classifier) holds its random initialization, because the checkpoint had none."""
    heads = getattr(model, "newly_initialized_heads", [])
    if not heads:
        return
    source = (f"--init_checkpoint {config.init_checkpoint}" if config.init_checkpoint
              else "the model (no --init_checkpoint)")
    logger.warning(f"{source} has no trained {' or '.join(heads)} head: it is randomly initialized, so this "
                   f"evaluation scores an untrained head. Pass a fine-tuned model (an output_dir/model of a --do_train "
                   f"run) as --init_checkpoint.")


# ------------------------------------------------------------------------------------------- the driver
def run_finetuning(task):
    """Trains / evaluates / predicts `task` (a `keras_bert_impl.tasks.base.FinetuningTask`) as its config
    says, under `strategy` (in its scope) and `mixed_precision`; returns the results written to
    eval_results.json (or {}).

    With `learning_rate_grid` or `num_restarts` > 1: the paper's protocol (`runners.protocol.run_protocol`),
    one `finetune` per (learning rate, seed) in output_dir/runs/, the best on dev selected; returns the
    selected run's results.

    From Python (docs/training_in_python.md, "Fine-tuning from Python"), e.g.:

        run_finetuning(GlueTask(GlueConfig(task_name="sst2", data_dir="data/sentiment", init_checkpoint=...,
                                           output_dir="output/sst2", do_train=True, do_eval=True)))
    """
    config = task.config
    protocol_settings = protocol.protocol_settings(config)
    if protocol_settings is not None and config.strategy == "multiworker":
        raise UserInputError("--learning_rate_grid / --num_restarts run in one process: leave out "
                             "--strategy=multiworker (a worker would not see the runs the chief has finished).")
    if config.init_checkpoint:  # a TF1 checkpoint without TensorFlow: one line, before output_dir is made
        model_directory.require_checkpoint_reader(config.init_checkpoint)
    distribution = setup_distribution(config)
    # A multi-worker job: the chief writes output_dir, holding its lock; every other worker writes a temporary
    # directory in which the checkpoints and best weights the chief has written are links (it resumes from them).
    # A run that fails before it writes anything leaves no output_dir it created.
    with run_directory.created_output_dir(config.output_dir), distribution.scope(), \
            distribution.write_dir(config.output_dir, read_back=READ_BACK) as write_dir, \
            run_directory.RunLock(config.output_dir) if distribution.is_chief else contextlib.nullcontext():
        if config.overwrite_output_dir and distribution.is_chief:
            removed = run_directory.remove_run_outputs(config.output_dir, OUTPUT_DESCRIPTIONS,
                                                       dataclasses.asdict(config))
            if removed:
                logger.info(f"--overwrite_output_dir: removed {', '.join(removed)} from {config.output_dir}")
        task = task.with_config(distributed_config(config, distribution, write_dir))
        if protocol_settings is None:
            return finetune(task, distribution)
        return protocol.run_protocol(task, distribution, finetune)


def finetune(task, distribution, select_on_dev=False):
    """The work of `run_finetuning`, inside the strategy scope of `distribution` (see the module docstring
    for the order, the files written and resuming); `select_on_dev`: the protocol selects this run on its
    dev metric (refused before training when the task has no labelled dev set).

    Checks the config, loads the tokenizer, lets the task read every file the config names (`setup`, and
    `training_set` with --do_train), builds the model from the checkpoint; with --do_train compiles
    BERT's AdamW schedule with the task's loss and fits (resuming from output_dir/checkpoints),
    evaluating every epoch and keeping the best weights (`BestCheckpoint`, by `task.main_metric`) when the
    task can evaluate, then saves output_dir/model; evaluates (when not done by training); with
    --do_predict writes the task's prediction files; writes eval_results.json; prints what it wrote.
    """
    started = time.time() - 1  # file times may be rounded to the second
    config = task.config
    task.check_flags()
    check_model_flags(config)
    accumulation_options(config.gradient_accumulation_steps, config.train_batch_size)  # refused before any reading
    if config.do_train:  # a directory holding checkpoints is bound to the settings of its run
        run_directory.bind_run_settings(config.output_dir, run_settings(config), bound=bool(
            checkpoint_store.list_checkpoints(os.path.join(config.output_dir, checkpoint_store.CHECKPOINT_SUBDIR))))
    keras.utils.set_random_seed(config.seed)
    tokenizer = load_tokenizer(config)
    task.setup(tokenizer)
    report_unknown_tokens(tokenizer, task.texts_read(), "the data read")
    if select_on_dev and not task.can_evaluate:
        raise UserInputError(f"--learning_rate_grid / --num_restarts select the best run on the dev set's "
                             f"{task.main_metric}: this task has no labelled dev set with these flags (--do_eval; "
                             "SQuAD: a --predict_file with answers and --do_predict).")
    train = task.training_set(distribution) if config.do_train else None
    os.makedirs(config.output_dir, exist_ok=True)
    keras.utils.set_random_seed(config.seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        model = task.build_model()
    for warning in caught:  # a new head is one plain line when it is trained (`warn_untrained_heads` otherwise)
        if "initialized randomly" not in str(warning.message):
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
        elif config.do_train:
            logger.info(f"{str(warning.message).rstrip('.')} (a new head: training sets its weights).")
    if config.lora_rank:
        try:
            model.backbone.enable_lora(config.lora_rank)
        except UserInputError as error:
            raise UserInputError(f"--lora_rank: {error}") from None
    predictions = predictor(model, distribution)
    results = {}
    if config.do_train:
        results = fit_task(task, model, train, distribution, predictions)
        if config.save_model:
            task.save_model(model, os.path.join(config.output_dir, "model"))  # LoRA: the adapters merged
            if config.lora_rank:
                model.backbone.save_lora_weights(os.path.join(config.output_dir, LORA_WEIGHTS))
    elif config.do_eval or config.do_predict:
        warn_untrained_heads(model, config)
    if task.can_evaluate and not results:
        results = task.evaluate(predictions)
    if config.do_predict:
        results = task.predict(predictions, results)
    task.write_results(results)
    run_directory.print_outputs(config.output_dir, started, OUTPUT_DESCRIPTIONS)
    return results


def fit_task(task, model, train, distribution, predictions):
    """Compiles and fits `model` on `train` (a `tasks.base.TrainingSet`) for `num_train_epochs` of the task's
    config with the training driver (`training.resumable.run_training` on an `EpochSchedule`), resuming from
    output_dir/checkpoints; returns the best epoch's results (`task.best_results`), or {} when the task has no
    dev set. `predictions`: what the dev set is scored with after every epoch, `model` or
    `predictor(model, distribution)`."""
    config = task.config
    epochs = math.ceil(config.num_train_epochs)
    # Gradient accumulation: batches of train_batch_size / N, an update every N of them; steps count updates.
    accumulation = config.gradient_accumulation_steps
    batch_config = dataclasses.replace(config, train_batch_size=config.train_batch_size // accumulation)
    batches_per_epoch = batching.num_batches(train.num_examples, batch_config.train_batch_size,
                                             distribution.whole_batches_only)
    total_steps = max(1, num_train_steps(train.num_examples, batch_config.train_batch_size, config.num_train_epochs,
                                         distribution.whole_batches_only) // accumulation)
    # The task's loss, by default the model's own with its metrics (`BertTaskModel.compile`'s defaults).
    model.compile(optimizer=create_finetuning_optimizer(config, total_steps), loss=task.training_loss(),
                  steps_per_execution=config.steps_per_execution)
    # `fit` hands the callback `model` itself; `predictions` computes its outputs.
    best = (BestCheckpoint(lambda fitted: task.evaluate(predictions), task.main_metric, config.output_dir)
            if task.can_evaluate else None)
    if train.bucketed:  # shuffle=False: the batches are shuffled (within length buckets) already
        def data(initial_epoch):
            return training_batches(train.features, train.labels, batch_config, distribution,
                                    initial_epoch=initial_epoch, **train.batching_options)

        fit_kwargs = {"shuffle": False, **train.fit_kwargs}
    else:
        data = train.features
        fit_kwargs = {"y": train.labels, "batch_size": batch_config.train_batch_size, "shuffle": True,
                      **train.fit_kwargs}
    with streaming.raising_stream_errors(train.features):  # a streamed file that changed: its own one line
        run_training(model, data, EpochSchedule(epochs, config.seed, batches_per_epoch, best, task.trained_labels()),
                     config.output_dir, keep_checkpoint_max=config.keep_checkpoint_max, verbose=config.verbose,
                     fit_kwargs=fit_kwargs, log_every_steps=config.log_every_steps, run_settings=run_settings(config),
                     announcement=f"{task.name}: {train.description}, {epochs} epoch{'s' * (epochs != 1)}, "
                                  f"{total_steps} steps",
                     batch_size=config.train_batch_size, sequence_length=config.max_seq_length)
    # The model now holds the best epoch's weights, or the last epoch's without a dev set (checked finite).
    if best is None or best.best_metrics is None:
        return {}
    return task.best_results(best.best_metrics)
