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
shape the trained weights (`RUN_SETTINGS_IGNORED` lists those that do not), and while the directory holds
checkpoints a training run with other values is refused, naming each flag with its two values.
`--overwrite_output_dir` starts afresh: it removes what a run writes there (`RUN_OUTPUTS`), nothing else (refused
when --init_checkpoint or an input file lies in one of them).

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
import os
import sys
import time

from keras_bert_impl.config import PRETRAINING_OBJECTIVES
from keras_bert_impl.runners.cli import run_main
from keras_bert_impl.runners.flags import FlagParser, accumulation_options, add_distribution_flags
from keras_bert_impl.utils.optional_dependencies import is_installed

# What a run writes into --output_dir (what --overwrite_output_dir removes).
RUN_OUTPUTS = ("checkpoints", "train_log.jsonl", "logs", "final", "metrics.json")
# Flags that do not change the trained weights: a rerun may change them (`run_directory.bind_run_settings`).
RUN_SETTINGS_IGNORED = (
    "output_dir", "overwrite_output_dir", "eval_input_file", "do_train", "do_eval", "eval_batch_size",
    "max_eval_steps", "save_checkpoints_steps", "iterations_per_loop", "steps_per_execution",
    "keep_checkpoint_max", "verbose", "strategy", "tpu", "use_tpu", "tpu_name", "tpu_zone", "gcp_project",
    "master", "num_tpu_cores", "debug",
)


def build_parser():
    """The argument parser, with run_pretraining.py's flag names and defaults (plus a few extras)."""
    p = FlagParser(description=__doc__.split("\n")[0])
    p.add_argument("--bert_config_file", default=None, help="The config json file of the pre-trained BERT model.")
    p.add_argument("--config", default=None, help="A BertConfig preset name (e.g. bert_tiny) instead of a file.")
    p.add_argument("--input_file", default=None, help="Input TF example files (comma-separated list or globs).")
    p.add_argument("--eval_input_file", default=None, help="Held-out TF example files; default --input_file.")
    p.add_argument("--output_dir", required=True, help="Where the checkpoints, logs and final model go.")
    p.add_argument("--init_checkpoint", default=None, help="Initial checkpoint (anything from_pretrained reads).")
    p.add_argument("--max_seq_length", type=int, default=128, help="Maximum total input sequence length.")
    p.add_argument("--max_predictions_per_seq", type=int, default=20, help="Maximum masked LM predictions per sequence.")
    p.add_bool_flag("do_train", False, "Whether to run training.")
    p.add_bool_flag("do_eval", False, "Whether to run eval on the dev set.")
    p.add_argument("--train_batch_size", type=int, default=32, help="Total batch size for training.")
    p.add_argument("--eval_batch_size", type=int, default=8, help="Total batch size for eval.")
    p.add_argument("--learning_rate", type=float, default=5e-5, help="The initial learning rate for Adam.")
    p.add_argument("--num_train_steps", type=int, default=100000, help="Number of training steps.")
    p.add_argument("--num_warmup_steps", type=int, default=10000, help="Number of warmup steps.")
    p.add_argument("--save_checkpoints_steps", type=int, default=1000, help="How often to save the model checkpoint.")
    p.add_argument("--iterations_per_loop", type=int, default=1000,
                   help="Steps per fit epoch: the progress bar's unit and the window of the logged train metrics.")
    p.add_argument("--max_eval_steps", type=int, default=100, help="Maximum number of eval steps.")
    p.add_argument("--optimizer", default="adamw", choices=("adamw", "lamb"), help="adamw (original) or lamb.")
    p.add_argument("--gradient_accumulation_steps", type=int, default=1,
                   help="Split each --train_batch_size batch into this many batches whose gradients are summed "
                        "before one update (less memory, the same updates); steps count updates.")
    p.add_argument("--steps_per_execution", type=int, default=1, help="Train steps per compiled call.")
    p.add_argument("--keep_checkpoint_max", type=int, default=5, help="Newest checkpoints kept.")
    p.add_argument("--seed", type=int, default=None, help="Seed of weights init, dropout and data shuffling.")
    p.add_argument("--verbose", default="auto", help="fit's progress: auto/1 (a progress bar on a terminal, a line per "
                   "loop in a file), 2 (a line per loop), 0.")
    p.add_argument("--objective", default="mlm_nsp", choices=PRETRAINING_OBJECTIVES,
                   help="mlm_nsp (original), sop (the same on --sentence_order data), mlm (no NSP head) or ltr "
                        "(left-to-right LM, causal attention, no NSP).")
    p.add_bool_flag("overwrite_output_dir", False,
                    "Start afresh: remove what an earlier run wrote in --output_dir (checkpoints, logs, final/, "
                    "metrics.json) instead of resuming it; other files stay.")
    add_distribution_flags(p)
    # The original's TPU flags: --use_tpu means --strategy=tpu and --tpu_name means --tpu; the others are
    # accepted for command-line compatibility (TPUClusterResolver finds the zone and project itself).
    p.add_bool_flag("use_tpu", False, "Same as --strategy=tpu.")
    p.add_argument("--tpu_name", default=None, help="Same as --tpu.")
    for name in ("tpu_zone", "gcp_project", "master"):
        p.add_argument(f"--{name}", default=None, help="Accepted and ignored.")
    p.add_argument("--num_tpu_cores", type=int, default=8, help="Accepted and ignored (the strategy counts them).")
    return p


def build_model(args):
    """The BertPretrainer of --init_checkpoint (with --bert_config_file/--config fields) or a fresh one,
    for --objective (ltr: a causal backbone)."""
    import dataclasses

    from keras_bert_impl.checkpoints import task_registry
    from keras_bert_impl.config import BertConfig
    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.utils.errors import UserInputError

    pretrainer_class = task_registry.architecture_class("BertForPreTraining")

    config = None
    if args.bert_config_file:
        config = BertConfig.from_json_file(args.bert_config_file)
    elif args.config:
        config = BertConfig.preset(args.config)
    if args.init_checkpoint:
        # The checkpoint's attention direction is that of its weights: a config file does not change it.
        overrides = {k: v for k, v in (config.to_dict() if config else {}).items() if k != "attention_direction"}
        try:
            return pretrainer_class.from_pretrained(args.init_checkpoint, objective=args.objective, **overrides)
        except UserInputError as error:
            if args.objective == "ltr" and "objective='ltr'" in str(error):
                raise UserInputError(f"--objective=ltr: --init_checkpoint {error}") from None
            raise
    if config is not None and args.objective == "ltr":
        config = dataclasses.replace(config, attention_direction="causal")
    if config is None:
        raise ValueError("One of --bert_config_file, --config or --init_checkpoint is required.")
    if args.max_seq_length > config.max_position_embeddings:
        raise ValueError(
            f"--max_seq_length={args.max_seq_length} exceeds max_position_embeddings={config.max_position_embeddings}."
        )
    return pretrainer_class(BertBackbone(config), objective=args.objective)


def main(argv=None):
    """Runs the recipe; returns the dict written to output_dir/metrics.json. A user's mistake is one line on
    stderr and exit status 2, a diverged run (a non-finite loss or weight) one line and exit status 1
    (--debug: their traceback)."""
    return run_main(build_parser, run, sys.argv[1:] if argv is None else argv)


def run(args):
    """The recipe with parsed flags `args`; returns the dict written to output_dir/metrics.json."""
    if not args.do_train and not args.do_eval:
        raise ValueError("At least one of `do_train` or `do_eval` must be True.")
    if not args.input_file:
        raise ValueError("--input_file is required.")

    import keras

    from keras_bert_impl.training import checkpoint_store, distribute, run_directory

    # The strategy first: MultiWorkerMirroredStrategy configures TensorFlow's collectives, which must
    # precede any other use of the TensorFlow runtime (set_random_seed included).
    distribution = distribute.get_distribution("tpu" if args.use_tpu else args.strategy, tpu=args.tpu or args.tpu_name)
    if args.seed is not None:
        keras.utils.set_random_seed(args.seed)
    distribute.set_mixed_precision(args.mixed_precision)
    if distribution.process_share is not None and not is_installed("tensorflow"):
        # The numpy batches are each process's share already (`pretraining_batches(process_share=...)`).
        distribution.keras_distribution.auto_shard_dataset = False
    if distribution.num_replicas > 1:
        print(f"{distribution.name}: {distribution.num_replicas} replicas x "
              f"{distribution.per_replica_batch_size(args.train_batch_size)} = global batch {args.train_batch_size}")
    if args.init_checkpoint:  # a TF1 checkpoint without TensorFlow: one line, before output_dir is made
        from keras_bert_impl.checkpoints.model_directory import require_checkpoint_reader

        require_checkpoint_reader(args.init_checkpoint)
    # The chief writes output_dir, holding its lock; another worker of a multi-worker job writes a deleted
    # temporary directory. A run that fails before it writes anything leaves no output_dir it created.
    with run_directory.created_output_dir(args.output_dir), distribution.scope(), \
            distribution.write_dir(args.output_dir) as write_dir:
        with run_directory.RunLock(args.output_dir) if distribution.is_chief else contextlib.nullcontext():
            if args.overwrite_output_dir and distribution.is_chief:
                removed = run_directory.remove_run_outputs(args.output_dir, RUN_OUTPUTS, vars(args))
                if removed:
                    print(f"--overwrite_output_dir: removed {', '.join(removed)} from {args.output_dir}")
            checkpoint_dir = os.path.join(args.output_dir, checkpoint_store.CHECKPOINT_SUBDIR)
            if args.do_train:  # a directory holding checkpoints is bound to the settings of its run
                run_directory.bind_run_settings(args.output_dir, run_settings(args),
                                                bound=bool(checkpoint_store.list_checkpoints(checkpoint_dir)))
            return train_and_evaluate(args, distribution, write_dir)


def run_settings(args):
    """The flags of `args` that shape the trained weights (all but `RUN_SETTINGS_IGNORED`)."""
    return {name: value for name, value in sorted(vars(args).items()) if name not in RUN_SETTINGS_IGNORED}


def input_batches(args, file_patterns, batch_size, distribution, is_training, seed=None, drop_remainder=None,
                  skip_batches=0):
    """The `(x, y)` batches of `file_patterns` for `args.objective`: a `tf.data` pipeline
    (`tf_pretraining_datasets`) when TensorFlow is installed, else a generator of numpy batches
    (`pretraining_batches`, whose first `skip_batches` batches are skipped)."""
    if is_installed("tensorflow"):
        from keras_bert_impl.data.tf_pretraining_datasets import pretraining_dataset
        from keras_bert_impl.data.tf_pretraining_objectives import objective_dataset

        return objective_dataset(pretraining_dataset(
            file_patterns, args.max_seq_length, args.max_predictions_per_seq, batch_size, is_training=is_training,
            drop_remainder=drop_remainder, seed=seed), args.objective)
    from keras_bert_impl.data.pretraining_batches import pretraining_batches

    return pretraining_batches(
        file_patterns, args.max_seq_length, args.max_predictions_per_seq, batch_size, is_training=is_training,
        drop_remainder=drop_remainder, seed=seed, skip_batches=skip_batches, objective=args.objective,
        process_share=distribution.process_share)


def training_input(args, batch_size, distribution):
    """What `resumable.run_training` reads: with `--seed` one seeded pipeline past the batches the restored
    steps read (a resumed run sees exactly the batches of an uninterrupted one), else a function of the
    restored step giving a fresh unseeded pipeline."""
    if args.seed is not None and is_installed("tensorflow"):  # run_training skips the restored steps' batches
        return input_batches(args, args.input_file, batch_size, distribution, is_training=True, seed=args.seed)
    return lambda initial_step: input_batches(
        args, args.input_file, batch_size, distribution, is_training=True, seed=args.seed,
        skip_batches=0 if args.seed is None else initial_step * args.gradient_accumulation_steps)


def train_and_evaluate(args, distribution, write_dir=None):
    """The recipe's work, inside the strategy scope of `main`; outputs go to `write_dir` (default
    --output_dir), checkpoints are restored from --output_dir."""
    write_dir = args.output_dir if write_dir is None else write_dir
    import keras

    from keras_bert_impl.training import checkpoint_store, divergence, resumable, run_directory
    from keras_bert_impl.training.optimization import create_optimizer
    from keras_bert_impl.training.out_of_memory import explain_out_of_memory
    from keras_bert_impl.utils import file_io

    model = build_model(args)
    accumulation = accumulation_options(args.gradient_accumulation_steps, args.train_batch_size)
    optimizer = create_optimizer(
        args.learning_rate, args.num_train_steps, args.num_warmup_steps, optimizer_type=args.optimizer,
        **accumulation,
    )
    model.compile(optimizer=optimizer, steps_per_execution=args.steps_per_execution)
    verbose = args.verbose if args.verbose == "auto" else int(args.verbose)
    results = {"backend": keras.backend.backend(), "num_train_steps": args.num_train_steps}
    start = time.time()

    if args.do_train:
        batch_size = args.train_batch_size // args.gradient_accumulation_steps  # the batches of one update
        train_dataset = training_input(args, batch_size, distribution)
        # A non-finite or grown loss stops the run naming the step; the newest checkpoint stays a finite one.
        guard = divergence.DivergenceGuard(os.path.join(write_dir, checkpoint_store.CHECKPOINT_SUBDIR),
                                           divergence.first_logged_loss(os.path.join(write_dir, "train_log.jsonl")))
        if write_dir == args.output_dir:
            run_directory.record_run_settings(args.output_dir, run_settings(args))
        with explain_out_of_memory(model, args.train_batch_size, args.max_seq_length):
            outcome = resumable.run_training(
                model, train_dataset, num_train_steps=args.num_train_steps, output_dir=args.output_dir,
                save_checkpoints_steps=args.save_checkpoints_steps, iterations_per_loop=args.iterations_per_loop,
                keep_checkpoint_max=args.keep_checkpoint_max, steps_per_execution=args.steps_per_execution,
                verbose=verbose, callbacks=[guard], write_dir=write_dir,
            )
        # The last update can make the weights non-finite while every logged loss was finite.
        divergence.check_finite_weights(model, f"step {outcome['global_step']}")
        print(f"Trained from step {outcome['initial_step']} to step {outcome['global_step']}.", flush=True)
        results.update(
            initial_step=outcome["initial_step"], global_step=outcome["global_step"], train=outcome["train_metrics"]
        )
        model.save_pretrained(os.path.join(write_dir, "final"))
    else:
        step = checkpoint_store.restore_latest_checkpoint(model, os.path.join(args.output_dir, checkpoint_store.CHECKPOINT_SUBDIR))
        results.update(initial_step=step, global_step=step)

    if args.do_eval:
        eval_dataset = input_batches(args, args.eval_input_file or args.input_file, args.eval_batch_size,
                                     distribution, is_training=False, drop_remainder=distribution.whole_batches_only)
        results["eval"] = resumable.evaluate(model, eval_dataset, args.max_eval_steps)
        print("***** Eval results *****")
        for name, value in sorted(results["eval"].items()):
            print(f"  {name} = {value:.4f}")
    results["elapsed_seconds"] = round(time.time() - start, 1)
    file_io.write_json(os.path.join(write_dir, "metrics.json"), results)
    return results


if __name__ == "__main__":
    main()
