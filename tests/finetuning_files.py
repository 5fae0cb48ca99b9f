"""Small files for the fine-tuning driver's tests: a GLUE SST-2 style task (train/dev/test.tsv) over a
12-word vocabulary, and a 1-layer, hidden-16 bert_config.json without dropout."""

import json
import os
import random
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_GLUE = os.path.join(REPO, "recipes", "run_glue.py")

POSITIVE = ["good", "great", "fine"]
NEGATIVE = ["bad", "awful", "poor"]
FILLER = ["the", "movie", "was", "plot", "very", "not"]


def write_sst2_task(directory, num_train=40, num_dev=12, num_test=5, seed=0):
    """Writes vocab.txt, bert_config.json (dropout 0) and SST-2's train.tsv, dev.tsv, test.tsv into
    `directory`; returns the flags naming them."""
    os.makedirs(directory, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *POSITIVE, *NEGATIVE, *FILLER]
    with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    config = {"vocab_size": len(vocab), "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
              "intermediate_size": 32, "max_position_embeddings": 32, "hidden_dropout_prob": 0.0,
              "attention_probs_dropout_prob": 0.0}
    with open(os.path.join(directory, "bert_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)
    rng = random.Random(seed)

    def sentences(n):
        rows = []
        for _ in range(n):
            label = rng.randint(0, 1)
            words = [rng.choice(POSITIVE if label else NEGATIVE)] + rng.sample(FILLER, rng.randint(1, 5))
            rng.shuffle(words)
            rows.append((" ".join(words), label))
        return rows

    for name, n in (("train.tsv", num_train), ("dev.tsv", num_dev)):
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write("sentence\tlabel\n")
            f.writelines(f"{text}\t{label}\n" for text, label in sentences(n))
    with open(os.path.join(directory, "test.tsv"), "w", encoding="utf-8") as f:
        f.write("index\tsentence\n")
        f.writelines(f"{i}\t{text}\n" for i, (text, _) in enumerate(sentences(num_test)))
    return [f"--data_dir={directory}", f"--vocab_file={os.path.join(directory, 'vocab.txt')}",
            f"--bert_config_file={os.path.join(directory, 'bert_config.json')}"]


def run_glue_flags(data_flags, output_dir, *more):
    """The flags of a seconds-long run_glue.py training run of 3 epochs (10 steps each), dropout off."""
    return ["--task_name=sst2", *data_flags, f"--output_dir={output_dir}", "--do_train", "--do_eval",
            "--max_seq_length=16", "--train_batch_size=4", "--num_train_epochs=3", "--learning_rate=2e-2",
            "--warmup_proportion=0", "--classifier_dropout=0", "--seed=7", "--log_every_steps=4", "--verbose=0", *more]


def load_recipe(name):
    """recipes/<name>.py as a module (its `main(argv)` runs the recipe in this process)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{name}_recipe", os.path.join(REPO, "recipes", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_run_glue():
    """recipes/run_glue.py as a module."""
    return load_recipe("run_glue")


def subprocess_pythonpath():
    """The PYTHONPATH of a test's subprocess: the repository, then tests/without_scikit_learn, where importing
    scikit-learn fails as in an environment without it (Keras imports it at its own import when installed: 0.6 s
    of every subprocess's start; the package does not use it)."""
    return os.pathsep.join([REPO, os.path.join(REPO, "tests", "without_scikit_learn")])


def subprocess_env():
    return {**os.environ, "PYTHONPATH": subprocess_pythonpath(), "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONUNBUFFERED": "1"}


def two_host_devices():
    """XLA_FLAGS giving JAX two host (CPU) devices, the suite's flags (tests/conftest.py: optimization level 0)
    kept."""
    return (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip()


def run_recipe_with_backend_defaults(name, argv, timeout=1200):
    """Runs recipes/<name>.py with `argv` in a subprocess (same backend) with the backends' default kernels,
    not the suite's settings of tests/conftest.py: JAX compiles at XLA's default optimization level (level 0
    doubles the time of a MiniLM fine-tuning run) with its default fusion emitters, and TensorFlow uses oneDNN
    (the MiniLM SQuAD run takes 281 s without it, 195 s with it). Fails the test with the run's output when
    it exits non-zero."""
    import subprocess

    xla_flags = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split()
                         if "optimization_level" not in f and "fusion_emitters" not in f)
    env = dict(subprocess_env(), XLA_FLAGS=xla_flags)
    env.pop("TF_ENABLE_ONEDNN_OPTS", None)
    command = [sys.executable, os.path.join(REPO, "recipes", f"{name}.py"), *argv]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def signal_when(process, ready, signum, timeout=240):
    """Waits until `ready()` returns a true value (failing the test when `process` ends first or after `timeout`
    seconds), sends `signum` to `process` and waits for its end; returns `(that value, (stdout, stderr))`. The
    process is killed if anything fails."""
    try:
        deadline = time.time() + timeout
        value = ready()
        while not value:
            assert process.poll() is None, f"the process ended ({process.returncode}): {process.communicate()}"
            assert time.time() < deadline, f"not ready within {timeout} s"
            time.sleep(0.02)
            value = ready()
        process.send_signal(signum)
        return value, process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


PYTHON = sys.executable
