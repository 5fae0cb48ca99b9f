"""Create masked-LM / next-sentence pretraining TFRecords (google-research/bert's script, streamed).

Same flags and same output format as google-research/bert's `create_pretraining_data.py`; the corpus is
read `--shard_size_documents` documents at a time instead of all at once (see
keras_bert_impl/data/pretraining_instances.py for the algorithm and the few documented differences).

    python recipes/create_pretraining_data.py \
        --input_file=corpus/*.txt --output_file=out/train-0.tfrecord,out/train-1.tfrecord \
        --vocab_file=vocab.txt --do_lower_case=True --max_seq_length=128 \
        --max_predictions_per_seq=20 --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=10

Boolean flags take absl's forms: `--do_lower_case`, `--do_lower_case=False`, `--nodo_lower_case`.
Extra flags: `--sentence_order` (ALBERT sentence-order labels in `next_sentence_labels`),
`--shard_size_documents` (memory bound), `--dynamic_masking` (write unmasked pairs for
`tf_pretraining_datasets.unmasked_pretraining_dataset`, which masks on the fly). WikiExtractor's `<doc ...>` and
`</doc>` lines are dropped (each ends a document); the summary says how many.
"""

from keras_bert_impl.runners.create_pretraining_data import build_parser, main, run  # noqa: F401

if __name__ == "__main__":
    main()
