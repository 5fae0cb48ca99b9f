"""Real multi-process training: worker processes on 127.0.0.1 ports, started by
`keras_bert_impl.runners.launch`, train as one job. The engine is the suite's backend: TensorFlow workers
under MultiWorkerMirroredStrategy (`TF_CONFIG`), or JAX processes under `jax.distributed` (gloo CPU
collectives) with `keras.distribution.DataParallel` over every process's device. PyTorch has no
multi-process training: under torch each test checks that the launcher refuses it.

* 2 workers pretrain a tiny BERT with the per-step losses of one process with the same global batch, and
  only the chief (worker 0) writes the output directory. One worker is killed with SIGKILL mid-run; the
  launcher fails the job, and the same command resumes both workers from the newest complete checkpoint
  to exactly `--num_train_steps`, every step's loss still the one-process run's.
* Each worker's share of every global batch is disjoint from the other's, and together they are the
  one-process batch; over an epoch they are the whole input.
* The launcher fails the job, naming the worker, when one worker fails; PyTorch is refused.
* Ctrl-C to the launcher is forwarded to the workers; a worker that does not stop is killed after
  --stop_timeout; the launcher exits 130 with one line, no traceback and no worker left alive. A busy port is
  refused in one line naming it.
"""

import json
import os
import signal
import subprocess
import sys
import time
import types

import keras
import numpy as np
import pytest

from keras_bert_impl.config import BertConfig
from keras_bert_impl.runners import launch
from keras_bert_impl.training import checkpoint_store
from tests.finetuning_files import REPO, signal_when, subprocess_env
from tests.test_training import MAX_PREDICTIONS, SEQ_LEN, write_tiny_data

PRETRAIN = os.path.join(REPO, "recipes", "pretrain.py")
ENGINE = keras.backend.backend()
STRATEGY = launch.STRATEGY.get(ENGINE)


def _env(tmp_path):
    # TMPDIR: the launcher's temporary directory (the workers' TMPDIR, where the non-chief writes its output
    # copies) goes there, so the test can see it was deleted, also after a worker was killed.
    os.makedirs(tmp_path / "tmp", exist_ok=True)
    return dict(subprocess_env(), KERAS_BACKEND=ENGINE, TMPDIR=str(tmp_path / "tmp"))


def _launch(argv, env, timeout=300):
    return subprocess.run([sys.executable, "-m", "keras_bert_impl.runners.launch", "--backend", ENGINE, *argv],
                          env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO)


def _files(directory):
    """Relative paths under `directory`, the TensorBoard event file's host/pid/time suffix left out."""
    names = set()
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.relpath(os.path.join(root, name), directory)
            names.add(path.split(".out.tfevents.")[0] + ".out.tfevents" if ".out.tfevents." in path else path)
    return sorted(names)


def _complete_checkpoint_steps(directory):
    """Steps of the complete checkpoints in `directory/checkpoints` (`checkpoint_store.list_checkpoints`)."""
    return [step for step, _ in checkpoint_store.list_checkpoints(os.path.join(directory, "checkpoints"))]


def _worker_pid(launcher_pid, index):
    """The pid of worker `index` of a running launcher (its child whose environment names that index)."""
    with open(f"/proc/{launcher_pid}/task/{launcher_pid}/children") as f:
        children = [int(p) for p in f.read().split()]
    for pid in children:
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        if ENGINE == "jax" and environ[b"KERAS_DISTRIBUTION_PROCESS_ID"] == str(index).encode():
            return pid
        if ENGINE == "tensorflow" and json.loads(environ[b"TF_CONFIG"])["task"]["index"] == index:
            return pid
    raise AssertionError(f"worker {index} of launcher {launcher_pid} not found among {children}")


def _torch_refuses(capsys):
    """Under torch: a job of several workers is refused in one line (what each training test checks there)."""
    assert launch.main(["--num_workers", "2", "--backend", "torch", "--", PRETRAIN]) == 2
    assert capsys.readouterr().err.startswith("error: --backend torch: multi-process training is not available")
    return True


def _step_losses(directory):
    with open(os.path.join(directory, "train_log.jsonl")) as f:
        return [(r["step"], r["loss"]) for r in map(json.loads, f)]


@pytest.mark.large
def test_two_workers_pretrain_like_one_process_only_the_chief_writes_and_a_killed_job_resumes(tmp_path, capsys):
    if ENGINE == "torch" and _torch_refuses(capsys):
        return
    data = write_tiny_data(str(tmp_path / "data"), num_documents=12, dupe_factor=1)
    with open(data["config"]) as f:
        config = json.load(f)
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # equal losses need no dropout
    with open(data["config"], "w") as f:
        json.dump(config, f)
    steps = 40
    flags = [f"--input_file={data['train']}", f"--eval_input_file={data['eval']}",
             f"--bert_config_file={data['config']}", "--do_train", "--do_eval", f"--max_seq_length={SEQ_LEN}",
             f"--max_predictions_per_seq={MAX_PREDICTIONS}", "--train_batch_size=4", "--eval_batch_size=4",
             "--max_eval_steps=2", f"--num_train_steps={steps}", "--num_warmup_steps=2", "--learning_rate=1e-4",
             "--save_checkpoints_steps=4", "--iterations_per_loop=1", "--seed=1", "--verbose=0"]
    env = _env(tmp_path)
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    job_argv = [sys.executable, "-m", "keras_bert_impl.runners.launch", "--backend", ENGINE, "--num_workers", "2",
                "--", PRETRAIN, *flags, f"--output_dir={two}"]
    # The one-process run goes alongside the 2-worker job (their start-up is mostly imports).
    single = subprocess.Popen([sys.executable, PRETRAIN, *flags, f"--output_dir={one}"], env=env, cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with open(tmp_path / "killed.log", "w+") as log:
        job = subprocess.Popen(job_argv, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, text=True)
        # Worker 1 is killed once the chief has logged step 4k+1 or 4k+2 (k >= 1): the checkpoint of step 4k
        # is complete, and the chief, which needs worker 1 for every step's all-reduce, cannot reach the
        # checkpoint of step 4k+4. So the job resumes from step 4k and redoes at least one logged step.
        deadline = time.time() + 240
        while job.poll() is None and time.time() < deadline:
            logged = _step_losses(two) if os.path.exists(os.path.join(two, "train_log.jsonl")) else []
            if logged and logged[-1][0] > 4 and logged[-1][0] % 4 in (1, 2):
                break
            time.sleep(0.02)
        assert job.poll() is None, "the job ended before a worker could be killed"
        os.kill(_worker_pid(job.pid, 1), signal.SIGKILL)
        assert job.wait(timeout=120) == 1
        log.seek(0)
        killed_output = log.read()
    assert "error: worker 1 exited with status -9; the other workers were stopped." in killed_output
    killed_losses = dict(_step_losses(two))
    resume_step = _complete_checkpoint_steps(two)[-1]
    assert resume_step % 4 == 0 and resume_step < max(killed_losses) < steps, killed_output[-3000:]
    assert "final/config.json" not in _files(two)

    resumed = subprocess.run(job_argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    single_stderr = single.communicate(timeout=300)[1]
    assert single.returncode == 0, single_stderr[-3000:]
    assert resumed.returncode == 0, (resumed.stdout + resumed.stderr)[-3000:]
    for worker in (0, 1):
        assert f"[worker {worker}] {STRATEGY}: 2 replicas x 2 = global batch 4" in resumed.stdout
        assert f"[worker {worker}] Trained from step {resume_step} to step {steps}." in resumed.stdout

    # Each step logged once, and the steps the killed job had logged after its last checkpoint give the same
    # losses again: the resumed job is the same computation (weights, optimizer state, data position).
    steps_two, losses_two = zip(*_step_losses(two))
    assert steps_two == tuple(range(1, steps + 1))
    redone = range(resume_step + 1, max(killed_losses) + 1)
    assert [losses_two[s - 1] for s in redone] == [killed_losses[s] for s in redone]
    # Against one process with the same global batch: the same losses up to float32 rounding. Each step's
    # gradients and losses are sums over the two workers' halves of the global batch, all-reduced in another
    # order than one process sums them. Measured: at most 1.9e-7 relative on JAX; on TensorFlow the
    # differences grow through Adam's updates: 4.5e-7 relative at step 4, 4.4e-5 at most over 40 steps.
    steps_one, losses_one = zip(*_step_losses(one))
    assert steps_one == steps_two
    relative = [abs(a - b) / abs(b) for a, b in zip(losses_two, losses_one)]
    print(f"2 workers vs 1 process, relative loss difference: steps 1-4 {max(relative[:4]):.1e}, "
          f"all {max(relative):.1e}")
    assert max(relative[:4]) < 1e-5 and max(relative) < 5e-4, [f"{s}: {r:.1e}" for s, r in zip(steps_one, relative)]
    assert len(set(losses_one)) == steps, "the weights must change between steps"
    with open(os.path.join(one, "metrics.json")) as f, open(os.path.join(two, "metrics.json")) as g:
        metrics_one, metrics_two = json.load(f), json.load(g)
    assert metrics_two["global_step"] == metrics_one["global_step"] == steps
    assert metrics_two["initial_step"] == resume_step
    assert abs(metrics_two["eval"]["loss"] - metrics_one["eval"]["loss"]) < 5e-4 * metrics_one["eval"]["loss"]

    # The chief wrote what one process writes; the other worker's copies went to a deleted directory.
    kept = [f"checkpoints/ckpt-{s:08d}.weights.h5{suffix}" for s in range(steps - 16, steps + 1, 4)
            for suffix in ("", ".sha256")]
    # (.lock: the chief's lock on the directory; run_settings.json: the settings of its run.)
    assert _files(two) == _files(one) == sorted(kept + [
        ".lock", "final/config.json", "final/model.safetensors", "logs/train/events.out.tfevents", "metrics.json",
        "run_settings.json", "train_log.jsonl"])
    assert os.listdir(tmp_path / "tmp") == []


@pytest.mark.slow
def test_two_workers_fine_tune_like_one_process(tmp_path, minilm_vocab_file, capsys):
    if ENGINE == "torch" and _torch_refuses(capsys):
        return
    config = os.path.join(tmp_path, "bert_config.json")  # a tiny random BERT over the real uncased vocabulary
    BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
               max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
               ).to_json_file(config)
    # No dropout anywhere (the classifier's own too): every replica would draw its own dropout masks. Every
    # batch padded to 32 tokens: one shape to compile (JAX) or trace (TensorFlow) per process.
    sentiment = os.path.join(REPO, "data", "sentiment")
    flags = ["--task_name=sst2", f"--data_dir={sentiment}", f"--bert_config_file={config}",
             f"--vocab_file={minilm_vocab_file}", "--do_train", "--do_eval", "--do_predict", "--max_seq_length=32",
             "--train_batch_size=16", "--learning_rate=1e-3", "--num_train_epochs=2", "--classifier_dropout=0",
             "--seed=3", "--verbose=0", "--pad_to_multiple_of=32"]
    env = _env(tmp_path)
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    glue = os.path.join(REPO, "recipes", "run_glue.py")
    # The one-process run goes alongside the 2-worker job.
    single = subprocess.Popen([sys.executable, glue, *flags, f"--output_dir={one}"], env=env, cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    job = _launch(["--num_workers", "2", "--", glue, *flags, f"--output_dir={two}"], env)
    single_stderr = single.communicate(timeout=300)[1]
    assert job.returncode == 0, (job.stdout + job.stderr)[-3000:]
    assert single.returncode == 0, single_stderr[-3000:]
    assert f"[worker 1] {STRATEGY}: 2 replicas x 8 = global batch 16" in job.stdout
    # 480 training examples: 30 whole batches of 16 an epoch (a JAX job trains on whole batches only).
    assert "[worker 1] sst2: 480 training examples, 2 epochs, 60 steps" in job.stdout

    # The same training (measured: the best weights equal to 2.4e-7), the same dev metrics and test
    # predictions: the workers' predictions gather both halves of every batch in order (tf.distribute's
    # `predict`; on JAX `distribute.CrossProcessPredictions`).
    def log(directory):
        with open(os.path.join(directory, "train_log.jsonl")) as f:
            return [json.loads(line) for line in f]

    for a, b in zip(log(one), log(two), strict=True):
        assert (a["step"], a["accuracy"], a["dev_accuracy"]) == (b["step"], b["accuracy"], b["dev_accuracy"])
        assert abs(a["loss"] - b["loss"]) < 1e-5 * a["loss"]
    for name in ("eval_results.json", "SST-2.tsv"):
        with open(os.path.join(one, name)) as f, open(os.path.join(two, name)) as g:
            assert f.read() == g.read(), name
    # The chief wrote what one process writes; the other worker wrote a deleted temporary directory.
    assert _files(two) == _files(one)
    assert os.listdir(tmp_path / "tmp") == []


# Run by each worker: the example ids (token 1 of each example) of this worker's share of each batch, for one
# epoch of evaluation batches and 3 training batches. TensorFlow: what tf.distribute hands this worker's
# replica; JAX: the per-process slice Keras' DataParallel feeds this process (`distribute_dataset`).
_SHARD_SCRIPT = """
import json, sys
import keras
from keras_bert_impl.training import distribute
from keras_bert_impl.data.tf_pretraining_datasets import pretraining_dataset
name = "multiworker" if keras.backend.backend() == "tensorflow" else "data_parallel"
distribution = distribute.get_distribution(name)
strategy = distribution.tf_strategy
for mode, steps in (("eval", 10), ("train", 3)):
    dataset = pretraining_dataset(sys.argv[1], 8, 2, batch_size=4, is_training=mode == "train", seed=1,
                                  drop_remainder=distribution.whole_batches_only)
    batches = []
    if strategy is not None:
        for _, (x, _) in zip(range(steps), strategy.experimental_distribute_dataset(dataset)):
            batches.append([int(i) for t in strategy.experimental_local_results(x["token_ids"]) for i in t[:, 1]])
    else:
        for _, (x, _) in zip(range(steps), distribution.keras_distribution.distribute_dataset(dataset)):
            batches.append([int(i) for i in x["token_ids"][:, 1]])
    print(mode, json.dumps(batches))
if strategy is None:
    # The fine-tuning recipes' batches: every process plans the same global batches (10 examples of ids
    # 0-9, batches of 4: whole batches only) and feeds its share of each.
    import numpy as np
    from keras_bert_impl.data.batching import BucketedBatches
    features = {"token_ids": [[i] * (1 + i % 3) for i in range(10)]}
    batches = BucketedBatches(features, np.arange(10), 4, seed=1, pad_to_multiple_of=1,
                              process_share=distribution.process_share)
    print("finetune", json.dumps([[int(i) for i in batches[b][1]] for b in range(len(batches))]))
    # Predictions across the processes: a batch of 5 rows (padded to the job's devices, then cut) comes back
    # whole and in order on every process.
    inputs = keras.Input((3,), name="x")
    model = keras.Model(inputs, keras.layers.Dense(2, kernel_initializer="ones")(inputs))
    x = np.arange(15, dtype="float32").reshape(5, 3)
    print("predictions", json.dumps(distribute.CrossProcessPredictions(model).predict_on_batch(x).tolist()))
"""


def _id_records(path, count):
    """`count` examples whose token 1 is the example's id (4 + its number)."""
    from keras_bert_impl.data.pretraining_instances import TrainingInstance
    from keras_bert_impl.data.pretraining_records import write_instances_to_example_files

    vocab = {t: i for i, t in enumerate(["[PAD]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(count)])}
    tokenizer = types.SimpleNamespace(vocab=vocab, convert_tokens_to_ids=lambda ts: [vocab[t] for t in ts])
    instances = [TrainingInstance(["[CLS]", f"w{i}", "[SEP]", "w0", "[SEP]"], [0, 0, 0, 1, 1], False, [3], ["w0"])
                 for i in range(count)]
    write_instances_to_example_files(instances, tokenizer, path, 8, 2)
    return list(range(4, 4 + count))


@pytest.mark.slow
@pytest.mark.tensorflow
def test_each_worker_reads_a_disjoint_share_of_every_batch_and_together_the_whole_input(tmp_path, capsys):
    if ENGINE == "torch" and _torch_refuses(capsys):
        return
    from keras_bert_impl.data.tf_pretraining_datasets import pretraining_dataset

    path = str(tmp_path / "ids.tfrecord")
    # TensorFlow splits a last partial global batch too (10 examples: batches of 4, 4, 2); a multi-process
    # JAX job reads whole global batches only (12 examples: 4, 4, 4).
    ids = _id_records(path, 10 if ENGINE == "tensorflow" else 12)
    job = _launch(["--num_workers", "2", "--", sys.executable, "-c", _SHARD_SCRIPT, path], _env(tmp_path))
    assert job.returncode == 0, (job.stdout + job.stderr)[-3000:]
    shares = {(mode, w): json.loads(job.stdout.split(f"[worker {w}] {mode} ", 1)[1].splitlines()[0])
              for mode in ("eval", "train") for w in (0, 1)}
    # Evaluation: one process's batches (read here) of 4; each worker gets its half of each batch:
    # disjoint, and together the whole input.
    one = [[int(i) for i in x["token_ids"][:, 1]] for x, _ in pretraining_dataset(path, 8, 2, 4, is_training=False)]
    assert one == [ids[i:i + 4] for i in range(0, len(ids), 4)]
    worker0, worker1 = shares["eval", 0], shares["eval", 1]
    assert [a + b for a, b in zip(worker0, worker1)] == one
    flat0, flat1 = sum(worker0, []), sum(worker1, [])
    assert not set(flat0) & set(flat1) and sorted(flat0 + flat1) == ids
    assert len(flat0) == len(flat1) == len(ids) // 2
    # Training (seeded shuffle, repeated): each worker gets 2 examples of every global batch of 4; that
    # the two halves make the one-process batch is what the equal losses of the test above show.
    worker0, worker1 = shares["train", 0], shares["train", 1]
    assert [len(b) for b in worker0] == [len(b) for b in worker1] == [2, 2, 2]
    assert set(sum(worker0 + worker1, [])) <= set(ids) and worker0 != worker1
    if ENGINE == "jax":
        from keras_bert_impl.data.batching import BucketedBatches

        # Fine-tuning batches: each process's share is its half of the one-process global batch.
        features = {"token_ids": [[i] * (1 + i % 3) for i in range(10)]}
        one = BucketedBatches(features, np.arange(10), 4, seed=1, pad_to_multiple_of=1, drop_remainder=True)
        one = [[int(i) for i in one[b][1]] for b in range(len(one))]
        finetune = {w: json.loads(job.stdout.split(f"[worker {w}] finetune ", 1)[1].splitlines()[0]) for w in (0, 1)}
        assert [len(b) for b in one] == [4, 4]
        assert [a + b for a, b in zip(finetune[0], finetune[1])] == one
        # Predictions: every process gets the 5 rows' outputs, x @ ones(3, 2), in order.
        expected = (np.arange(15, dtype="float32").reshape(5, 3) @ np.ones((3, 2), "float32")).tolist()
        for w in (0, 1):
            assert json.loads(job.stdout.split(f"[worker {w}] predictions ", 1)[1].splitlines()[0]) == expected


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
    (argv, env0), (_, env1) = launch.worker_commands(["recipes/pretrain.py"], 2, backend="jax", ports=[5, 6])
    assert argv == [sys.executable, "recipes/pretrain.py", "--strategy=data_parallel"]
    assert env0 == {"KERAS_BACKEND": "jax", "KERAS_DISTRIBUTION_JOB_ADDRESSES": "127.0.0.1:5,127.0.0.1:6",
                    "KERAS_DISTRIBUTION_NUM_PROCESSES": "2", "KERAS_DISTRIBUTION_PROCESS_ID": "0"}
    assert env1["KERAS_DISTRIBUTION_PROCESS_ID"] == "1"
    assert launch.main(["--num_workers", "2", "--backend", "torch", "--", "recipes/pretrain.py"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --backend torch: multi-process training is not available on PyTorch here; run the recipe as one "
        "process (python recipes/pretrain.py ...) on one device, or several worker processes with --backend "
        "tensorflow or jax.")
    assert launch.main(["--num_workers", "0", "--", "recipes/pretrain.py"]) == 2
    assert "--num_workers must be at least 1; got 0." in capsys.readouterr().err


# A worker that stops on SIGINT (exit 130) when it is worker 0, and ignores it when it is worker 1 (as a worker
# waiting in a collective for a peer that stopped a step earlier).
_STOPPING_WORKER = """
import json, os, signal, sys, time
index = int(json.loads(os.environ["TF_CONFIG"])["task"]["index"])
signal.signal(signal.SIGINT, signal.SIG_IGN if index == 1 else (lambda signum, frame: sys.exit(130)))
print("ready", os.getpid(), flush=True)
time.sleep(120)
"""


def test_ctrl_c_to_the_launcher_stops_every_worker_and_exits_130_in_one_line(tmp_path):
    launcher = subprocess.Popen(
        [sys.executable, "-m", "keras_bert_impl.runners.launch", "--backend", "tensorflow", "--num_workers", "2",
         "--stop_timeout", "2", "--", sys.executable, "-c", _STOPPING_WORKER],
        env=_env(tmp_path), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def both_ready():
        pids = []
        while len(pids) < 2:
            line = launcher.stdout.readline()
            assert line, "the launcher ended before its workers were ready"
            if " ready " in line:
                pids.append(int(line.split()[-1]))
        return pids

    start = time.time()
    pids, (_, stderr) = signal_when(launcher, both_ready, signal.SIGINT)
    assert launcher.returncode == 130 and time.time() - start < 30
    # The last line (TensorFlow's absl may log its initialization on stderr first); no traceback.
    assert stderr.strip().splitlines()[-1] == (
        "interrupted by SIGINT: forwarded it to the 2 workers (worker 0 exited with 130, worker 1 was killed after "
        "2 s); run the same command again to resume.") and "Traceback" not in stderr, stderr
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), f"worker {pid} is alive"
    assert os.listdir(tmp_path / "tmp") == []


def test_a_busy_port_is_refused_in_one_line_naming_it(capsys):
    import socket

    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        for first, role in ((port, "the coordinator, worker 0"), (port - 1, "worker 1")):
            assert launch.main(["--num_workers", "2", "--backend", "tensorflow", "--port", str(first), "--",
                                "recipes/pretrain.py"]) == 2
            err = capsys.readouterr().err.strip()
            assert err.startswith(f"error: port 127.0.0.1:{port} ({role}'s address) is in use (") and "\n" not in err
            assert err.endswith("pass another --port, or leave --port out to use free ports"), err
    finally:
        busy.close()
    # A port taken between the check and the worker's start: the worker's failure names its address.
    script = "print('UNKNOWN: Failed to start RPC server'); raise SystemExit(1)"
    workers = launch.worker_commands([sys.executable, "-c", script], 1, ports=[port])
    assert launch.run_workers(workers) == 1
    assert capsys.readouterr().err.strip() == (
        f"error: worker 0 exited with status 1 (worker 0 could not bind its address 127.0.0.1:{port}: in use?); the "
        "other workers were stopped.")


@pytest.mark.large
def test_ctrl_c_stops_a_real_two_worker_job_leaving_no_worker_alive(tmp_path, capsys):
    if ENGINE == "torch" and _torch_refuses(capsys):
        return
    data = write_tiny_data(str(tmp_path / "data"), num_documents=12, dupe_factor=1)
    out = str(tmp_path / "run")
    flags = [f"--input_file={data['train']}", f"--bert_config_file={data['config']}", "--do_train",
             f"--max_seq_length={SEQ_LEN}", f"--max_predictions_per_seq={MAX_PREDICTIONS}", "--train_batch_size=4",
             "--num_train_steps=100000", "--num_warmup_steps=2", "--learning_rate=1e-4", "--save_checkpoints_steps=4",
             "--iterations_per_loop=1", "--seed=1", "--verbose=0", f"--output_dir={out}"]
    launcher = subprocess.Popen([sys.executable, "-m", "keras_bert_impl.runners.launch", "--backend", ENGINE,
                                 "--num_workers", "2", "--stop_timeout", "20", "--", PRETRAIN, *flags],
                                env=_env(tmp_path), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def worker_pids_once_checkpointed():
        if not (os.path.exists(os.path.join(out, "train_log.jsonl")) and _complete_checkpoint_steps(out)):
            return None
        return [_worker_pid(launcher.pid, i) for i in (0, 1)]

    workers, (stdout, stderr) = signal_when(launcher, worker_pids_once_checkpointed, signal.SIGINT)
    assert launcher.returncode == 130, (stdout + stderr)[-3000:]
    # (TensorFlow's absl logs its initialization on the launcher's stderr before anything else.)
    assert stderr.strip().splitlines()[-1].startswith("interrupted by SIGINT: forwarded it to the 2 workers (worker 0 ")
    assert "Traceback" not in stdout + stderr, (stdout + stderr)[-3000:]
    # The chief stopped after a step and wrote its checkpoint (unless it had to be killed, waiting for its peer).
    if "worker 0 exited with 130" in stderr:
        stopped = [line for line in stdout.splitlines() if line.startswith("[worker 0] stopped by SIGINT after step ")]
        assert stopped and ": the same command resumes from step " in stopped[-1], stdout[-3000:]
    for pid in workers:
        assert not os.path.exists(f"/proc/{pid}"), f"worker {pid} is alive"
    assert _complete_checkpoint_steps(out) and not os.path.exists(os.path.join(out, "final"))
    assert os.listdir(tmp_path / "tmp") == []
