"""Fine-tunes BERT on SWAG (multiple choice; Devlin et al. §4.4), for Keras 3 on any backend.

    python recipes/run_swag.py --data_dir=DIR --init_checkpoint=CKPT --output_dir=/tmp/swag \\
        --do_train --do_eval --do_predict --max_seq_length=128 --train_batch_size=16 \\
        --learning_rate=2e-5 --num_train_epochs=3

`--data_dir` holds SWAG's train.csv, val.csv (and test.csv); `--train_file`, `--validation_file` and
`--test_file` name a split's file instead (the original CSV, or datasets' JSON lines, JSON, CSV or parquet
with the columns sent1, sent2, ending0..ending3, label). Each choice is packed as
`[CLS] sent1 [SEP] sent2 ending_i [SEP]`; the model scores the four choices and a softmax across them
is trained with cross-entropy. Writes to `--output_dir`: eval_results.json (dev accuracy of the best
epoch), dev_metrics_per_epoch.json and best.weights.h5 (BestCheckpoint by dev accuracy), model/ (a
Hugging Face BertForMultipleChoice directory, with vocab.txt, tokenizer_config.json and max_seq_length
in config.json) and test_predictions.csv (`id,label`). The task itself is keras_bert_impl/tasks/swag.py.

Every training run also leaves train_log.jsonl, train_steps_log.jsonl, logs/ (TensorBoard) and
checkpoints/; the same command resumes an interrupted run (keras_bert_impl/runners/finetuning.py, on the
training driver of keras_bert_impl/training/resumable.py).
A mistake in a flag or a file stops the run with one line (--debug: the traceback).

The recipe is keras_bert_impl/runners/run_swag.py (also `python -m keras_bert_impl.runners.run_swag`): its
flags set the fields of `SwagConfig`, and from Python `run_finetuning(SwagTask(SwagConfig(...)))` runs it.
"""

from keras_bert_impl.runners.run_swag import build_parser, main, run  # noqa: F401

if __name__ == "__main__":
    main()
