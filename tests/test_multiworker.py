"""Real multi-worker training: TensorFlow worker processes on 127.0.0.1 ports, started by
`keras_bert_impl.runners.launch`, train as one job.

* 2 workers under MultiWorkerMirroredStrategy pretrain a tiny BERT with the per-step losses of one
  process with the same global batch, and only the chief (worker 0) writes the output directory.
* Each worker's share of every global batch (tf.data auto-sharding by DATA) is disjoint from the other's,
  and together they are the one-process batch; over an epoch they are the whole input.
* The launcher fails the job, naming the worker, when one worker fails; PyTorch is refused.

The workers always run with KERAS_BACKEND=tensorflow (tf.distribute is TensorFlow's), so these tests run
the same way under every backend of the suite.
"""

import json
import os
import subprocess
import sys
import time
import types

import pytest

from keras_bert_impl.runners import launch
from tests.finetuning_files import REPO, subprocess_env
from tests.test_training import MAX_PREDICTIONS, SEQ_LEN, write_tiny_data

PRETRAIN = os.path.join(REPO, "recipes", "pretrain.py")


def _tf_env(tmp_path):
    # TMPDIR: the non-chief's temporary output directory goes there, so the test can see it was deleted.
    os.makedirs(tmp_path / "tmp", exist_ok=True)
    return dict(subprocess_env(), KERAS_BACKEND="tensorflow", TMPDIR=str(tmp_path / "tmp"))


def _launch(argv, env, timeout=300):
    return subprocess.run([sys.executable, "-m", "keras_bert_impl.runners.launch", *argv], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


def _files(directory):
    """Relative paths under `directory`, the TensorBoard event file's host/pid/time suffix left out."""
    names = []
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.relpath(os.path.join(root, name), directory)
            names.append(path.split(".out.tfevents.")[0] + ".out.tfevents" if ".out.tfevents." in path else path)
    return sorted(names)


@pytest.mark.slow
def test_two_workers_pretrain_with_the_one_process_losses_and_only_the_chief_writes(tmp_path):
    data = write_tiny_data(str(tmp_path / "data"), num_documents=12, dupe_factor=1)
    with open(data["config"]) as f:
        config = json.load(f)
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # equal losses need no dropout
    with open(data["config"], "w") as f:
        json.dump(config, f)
    flags = [f"--input_file={data['train']}", f"--eval_input_file={data['eval']}",
             f"--bert_config_file={data['config']}", "--do_train", "--do_eval", f"--max_seq_length={SEQ_LEN}",
             f"--max_predictions_per_seq={MAX_PREDICTIONS}", "--train_batch_size=4", "--eval_batch_size=4",
             "--max_eval_steps=2", "--num_train_steps=4", "--num_warmup_steps=1", "--learning_rate=1e-3",
             "--save_checkpoints_steps=2", "--iterations_per_loop=1", "--seed=1", "--verbose=0"]
    env = _tf_env(tmp_path)
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    # The one-process run goes alongside the 2-worker job (their start-up is mostly imports).
    single = subprocess.Popen([sys.executable, PRETRAIN, *flags, f"--output_dir={one}"], env=env, cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    job = _launch(["--num_workers", "2", "--", PRETRAIN, *flags, f"--output_dir={two}"], env)
    single_stderr = single.communicate(timeout=300)[1]
    assert single.returncode == 0, single_stderr[-3000:]
    assert job.returncode == 0, (job.stdout + job.stderr)[-3000:]
    for worker in (0, 1):
        assert f"[worker {worker}] multiworker: 2 replicas x 2 = global batch 4" in job.stdout
        assert f"[worker {worker}] Trained from step 0 to step 4." in job.stdout

    def step_losses(directory):
        with open(os.path.join(directory, "train_log.jsonl")) as f:
            return [(r["step"], r["loss"]) for r in map(json.loads, f)]

    # Same steps; same losses up to float32 rounding: each step's gradients and losses are sums over the
    # two workers' halves of the global batch, all-reduced in another order than one process sums them,
    # and Adam's division by sqrt(v) carries those last-bit differences on (measured: 1.1e-6 relative).
    (steps_one, losses_one), (steps_two, losses_two) = map(lambda r: list(zip(*r)), (step_losses(one), step_losses(two)))
    assert steps_two == steps_one == (1, 2, 3, 4)
    assert max(abs(a - b) / abs(b) for a, b in zip(losses_two, losses_one)) < 1e-5
    assert len(set(losses_one)) == 4, "the weights must change between steps"
    with open(os.path.join(one, "metrics.json")) as f, open(os.path.join(two, "metrics.json")) as g:
        eval_one, eval_two = json.load(f)["eval"], json.load(g)["eval"]
    assert abs(eval_two["loss"] - eval_one["loss"]) < 1e-4 * eval_one["loss"]

    # The chief wrote exactly what one process writes; the other worker's copies went to a deleted directory.
    assert _files(two) == _files(one) == [
        "checkpoints/ckpt-00000002.weights.h5", "checkpoints/ckpt-00000002.weights.h5.sha256",
        "checkpoints/ckpt-00000004.weights.h5", "checkpoints/ckpt-00000004.weights.h5.sha256",
        "final/config.json", "final/model.safetensors", "logs/train/events.out.tfevents", "metrics.json",
        "train_log.jsonl"]
    assert os.listdir(tmp_path / "tmp") == []


# Run by each worker: the example ids (token 1 of each example) of this worker's share of each batch, for one
# epoch of evaluation batches and 3 training batches.
_SHARD_SCRIPT = """
import json, sys
from keras_bert_impl.training import distribute
from keras_bert_impl.data.tf_pretraining_data import pretraining_dataset
strategy = distribute.get_distribution("multiworker").tf_strategy
for mode, steps in (("eval", 10), ("train", 3)):
    dataset = pretraining_dataset(sys.argv[1], 8, 2, batch_size=4, is_training=mode == "train", seed=1)
    batches = []
    for _, (x, _) in zip(range(steps), strategy.experimental_distribute_dataset(dataset)):
        batches.append([int(i) for t in strategy.experimental_local_results(x["token_ids"]) for i in t[:, 1]])
    print(mode, json.dumps(batches))
"""


def _id_records(path, count):
    """`count` examples whose token 1 is the example's id (4 + its number)."""
    from keras_bert_impl.data.pretraining_data import TrainingInstance
    from keras_bert_impl.data.tf_pretraining_data import write_instances_to_example_files

    vocab = {t: i for i, t in enumerate(["[PAD]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(count)])}
    tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    instances = [TrainingInstance(["[CLS]", f"w{i}", "[SEP]", "w0", "[SEP]"], [0, 0, 0, 1, 1], False, [3], ["w0"])
                 for i in range(count)]
    write_instances_to_example_files(instances, tokenizer, path, 8, 2)
    return list(range(4, 4 + count))


@pytest.mark.slow
def test_each_worker_reads_a_disjoint_share_of_every_batch_and_together_the_whole_input(tmp_path):
    from keras_bert_impl.data.tf_pretraining_data import pretraining_dataset

    path = str(tmp_path / "ids.tfrecord")
    ids = _id_records(path, 10)
    job = _launch(["--num_workers", "2", "--", sys.executable, "-c", _SHARD_SCRIPT, path], _tf_env(tmp_path))
    assert job.returncode == 0, (job.stdout + job.stderr)[-3000:]
    shares = {(mode, w): json.loads(job.stdout.split(f"[worker {w}] {mode} ", 1)[1].splitlines()[0])
              for mode in ("eval", "train") for w in (0, 1)}
    # Evaluation: 10 examples in global batches of 4, 4, 2 (one process's batches, read here); each
    # worker gets its half of each batch: disjoint, and together the whole input.
    one = [[int(i) for i in x["token_ids"][:, 1]] for x, _ in pretraining_dataset(path, 8, 2, 4, is_training=False)]
    assert one == [ids[0:4], ids[4:8], ids[8:10]]
    worker0, worker1 = shares["eval", 0], shares["eval", 1]
    assert [a + b for a, b in zip(worker0, worker1)] == one
    flat0, flat1 = sum(worker0, []), sum(worker1, [])
    assert not set(flat0) & set(flat1) and sorted(flat0 + flat1) == ids and len(flat0) == len(flat1) == 5
    # Training (seeded shuffle, repeated): each worker gets 2 examples of every global batch of 4; that
    # the two halves make the one-process batch is what the equal losses of the test above show.
    worker0, worker1 = shares["train", 0], shares["train", 1]
    assert [len(b) for b in worker0] == [len(b) for b in worker1] == [2, 2, 2]
    assert set(sum(worker0 + worker1, [])) <= set(ids) and worker0 != worker1


_FAILING_WORKER = """
import json, os, sys, time
index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
print("started", index, flush=True)
if index == 1:
    sys.exit(3)
time.sleep(120)
"""


def test_launcher_fails_the_job_naming_the_failed_worker_and_refuses_torch(tmp_path, capsys):
    start = time.time()
    status = launch.run_workers(launch.worker_commands([sys.executable, "-c", _FAILING_WORKER], 2))
    elapsed = time.time() - start
    out, err = capsys.readouterr()
    assert status == 3
    assert "error: worker 1 exited with status 3; the other workers were stopped." in err
    assert "[worker 0] started 0" in out and "[worker 1] started 1" in out
    assert elapsed < 30  # worker 0 (sleeping 120 s) was killed, not waited for

    (argv, env), (_, env1) = launch.worker_commands(["recipes/pretrain.py", "--strategy=multiworker"], 2, ports=[5, 6])
    assert argv == [sys.executable, "recipes/pretrain.py", "--strategy=multiworker"]  # --strategy given: kept
    assert json.loads(env1["TF_CONFIG"])["task"] == {"type": "worker", "index": 1}
    assert launch.main(["--num_workers", "2", "--backend", "torch", "--", "recipes/pretrain.py"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --backend torch: multi-process training is not available on PyTorch here; run the recipe as one "
        "process (python recipes/pretrain.py ...) on one device.")
    assert launch.main(["--num_workers", "0", "--", "recipes/pretrain.py"]) == 2
    assert "--num_workers must be at least 1; got 0." in capsys.readouterr().err
