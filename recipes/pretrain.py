"""Pretrain BERT (masked LM + next sentence) on TFRecords: google-research/bert's run_pretraining.py.

Same flags as the original, on any Keras backend (KERAS_BACKEND=tensorflow|jax|torch):

    python recipes/pretrain.py --input_file=out/train-*.tfrecord --output_dir=run \
        --do_train --do_eval --eval_input_file=out/heldout.tfrecord \
        --config=bert_tiny --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \
        --num_train_steps=10000 --num_warmup_steps=1000 --learning_rate=1e-4 --save_checkpoints_steps=1000

The input files are those of recipes/create_pretraining_data.py (or of the original script).
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

A NaN or infinite loss, or a loss above 100 x max(1, its start), stops the run: one line `error: training
diverged: step N: ...; the newest finite checkpoint is ...` and exit status 1, with no `final/` and no
`metrics.json`. Ctrl-C (SIGINT) or SIGTERM stops it after the current step with that step's checkpoint, one
line and exit status 130 / 143; the same command resumes. A second run on the same `--output_dir` is refused
while one runs (`output_dir/.lock`), and so is a training run whose flags that shape the weights differ from
those recorded in `output_dir/run_settings.json`; `--overwrite_output_dir` starts afresh (see
`keras_bert_impl/runners/pretrain.py`).

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

from keras_bert_impl.runners.pretrain import build_parser, main, run  # noqa: F401

if __name__ == "__main__":
    main()
