"""Starts N local worker processes of a recipe that train together, as one job.

    python -m keras_bert_impl.runners.launch --num_workers 2 -- recipes/pretrain.py --input_file=... --output_dir=run

TensorFlow (the default backend, `--backend tensorflow`): every worker gets `KERAS_BACKEND=tensorflow` and a
`TF_CONFIG` whose `cluster.worker` lists one free 127.0.0.1 port per worker and whose `task.index` is the
worker's number, and `--strategy=multiworker` is added to the recipe's flags unless a `--strategy` is given.

JAX (`--backend jax`): every process gets `KERAS_BACKEND=jax` and the three variables
`keras.distribution.initialize` reads: `KERAS_DISTRIBUTION_JOB_ADDRESSES` (the addresses; the first, process
0's, is the coordinator), `KERAS_DISTRIBUTION_NUM_PROCESSES` and `KERAS_DISTRIBUTION_PROCESS_ID`; and
`--strategy=data_parallel` is added: `keras.distribution.DataParallel` over every process's devices.

Worker 0 is the chief: it alone writes `output_dir`. Each worker's output lines are printed with a
`[worker i] ` prefix; when a worker exits with a non-zero status (or is killed) the others are killed and
the launcher exits with that status, naming the worker. The workers' `TMPDIR` is a directory of the
launcher's, deleted when the job ends, so a killed worker leaves no temporary files behind. Running the
same command again resumes every worker from the newest complete checkpoint (pretrain.py's resume).

Ctrl-C (SIGINT) or SIGTERM to the launcher is forwarded to every worker, which stops after its current step
(the chief writes a checkpoint; `training.interrupts`); the launcher waits for them, kills any still running
after `--stop_timeout` seconds (a worker whose peers stopped a step earlier waits for them forever in its
next step), prints one line and exits 130 (SIGINT) or 143 (SIGTERM), without a traceback and with no worker
left alive. A second Ctrl-C kills the workers at once.

The ports: `--port P` gives the workers P, P+1, ... (the first, worker 0's, is JAX's coordinator); by
default free ones are picked. A port already in use is refused before any worker starts, in one line naming
it; a worker that fails because its port was taken meanwhile is reported naming the port.

On a cluster, run the same recipe command on every host with the environment of its index: `TF_CONFIG`
listing every host's `host:port`, or the three `KERAS_DISTRIBUTION_*` variables (the launcher prints the
per-worker environment with `--dry_run`; docs/distribution.md has the commands).

PyTorch is refused with a one-line error: it trains on one device of one process here.
"""

import argparse
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from keras_bert_impl.runners.flags import add_setting_flags
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.settings import BOOLEAN, INTEGER, NUMBER, one_of, optional, setting

BACKENDS = ("tensorflow", "jax", "torch")
# The --strategy the launcher adds to the recipe's flags, unless it has one.
STRATEGY = {"tensorflow": "multiworker", "jax": "data_parallel"}


def free_ports(count):
    """`count` distinct TCP ports of 127.0.0.1 that were free when asked (held open together, then closed).

    Examples:

    >>> ports = free_ports(2)
    >>> len(set(ports)), all(0 < p < 65536 for p in ports)
    (2, True)
    """
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def worker_commands(command, num_workers, backend="tensorflow", ports=None):
    """The `(argv, environment additions)` of each worker running the recipe `command`.

    Args:
        command: The recipe and its flags, e.g. `["recipes/pretrain.py", "--output_dir=run"]`; a path
            ending in `.py` runs with this Python interpreter, anything else as given.
        num_workers: Number of worker processes (>= 1).
        backend: The Keras backend of the workers: "tensorflow" or "jax" ("torch" is refused).
        ports: One 127.0.0.1 port per worker; default `free_ports(num_workers)`.

    Examples:

    >>> (argv, env), _ = worker_commands(["recipes/pretrain.py", "--do_train"], 2, ports=[1234, 1235])
    >>> argv[1:]
    ['recipes/pretrain.py', '--do_train', '--strategy=multiworker']
    >>> json.loads(env["TF_CONFIG"])
    {'cluster': {'worker': ['127.0.0.1:1234', '127.0.0.1:1235']}, 'task': {'type': 'worker', 'index': 0}}
    """
    if num_workers < 1:
        raise UserInputError(f"--num_workers must be at least 1; got {num_workers}.")
    if not command:
        raise UserInputError("no recipe given: put it after `--`, e.g. `-- recipes/pretrain.py --output_dir=run`.")
    if backend == "torch":
        raise UserInputError("--backend torch: multi-process training is not available on PyTorch here; "
                             "run the recipe as one process (python recipes/pretrain.py ...) on one device, "
                             "or several worker processes with --backend tensorflow or jax.")
    if backend not in BACKENDS:
        raise UserInputError(f"--backend {backend!r}: allowed: {', '.join(BACKENDS)}.")
    ports = list(ports) if ports is not None else free_ports(num_workers)
    argv = ([sys.executable] if command[0].endswith(".py") else []) + list(command)
    if not any(a == "--strategy" or a.startswith("--strategy=") for a in command[1:]):
        argv.append("--strategy=" + STRATEGY[backend])
    addresses = [f"127.0.0.1:{port}" for port in ports]
    if backend == "jax":  # read by keras.distribution.initialize; process 0 is the coordinator
        return [(argv, {"KERAS_BACKEND": backend, "KERAS_DISTRIBUTION_JOB_ADDRESSES": ",".join(addresses),
                        "KERAS_DISTRIBUTION_NUM_PROCESSES": str(num_workers), "KERAS_DISTRIBUTION_PROCESS_ID": str(i)})
                for i in range(num_workers)]
    cluster = {"worker": addresses}
    return [
        (argv, {"KERAS_BACKEND": backend,
                "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})})
        for i in range(num_workers)
    ]


def check_ports_free(ports):
    """Raises `UserInputError` naming the first of `ports` (127.0.0.1) that another process holds.

    Examples:

    >>> busy = socket.socket()
    >>> busy.bind(("127.0.0.1", 0)); busy.listen()
    >>> try:
    ...     check_ports_free([busy.getsockname()[1]])
    ... except UserInputError as error:
    ...     print(str(error).split(":")[0])
    port 127.0.0.1
    >>> busy.close()
    """
    for index, port in enumerate(ports):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError as error:
                role = "the coordinator, worker 0" if index == 0 else f"worker {index}"
                raise UserInputError(f"port 127.0.0.1:{port} ({role}'s address) is in use ({error.strerror}): pass "
                                     "another --port, or leave --port out to use free ports") from None


# A worker's output line saying that its address could not be bound (TensorFlow's and XLA's gRPC servers).
_PORT_FAILURES = ("Failed to start RPC server", "Address already in use", "address already in use")


def _forward(index, stream, port_failures):
    for line in iter(stream.readline, ""):
        if any(text in line for text in _PORT_FAILURES):
            port_failures.add(index)
        sys.stdout.write(f"[worker {index}] {line}")
        sys.stdout.flush()
    stream.close()


def run_workers(workers, poll_seconds=0.1, stop_timeout=30.0):
    """Starts the workers of `worker_commands`, forwards their output with a `[worker i] ` prefix, and
    waits; returns 0 when all exit with 0, else the first failure's status after killing the others, or
    128 + the signal after forwarding SIGINT / SIGTERM to the workers (see the module docstring;
    `stop_timeout`: seconds the workers get to stop before they are killed)."""
    # The workers' temporary files (a non-chief's output copies among them) go to one directory that is
    # deleted when the job ends, also after a worker was killed before it could clean up.
    temporary = tempfile.mkdtemp(prefix="keras_bert_impl_launch_")
    received = []
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {signum: signal.signal(signum, lambda signum, frame: received.append(signum))
                    for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _run(workers, poll_seconds, temporary, received, stop_timeout)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        shutil.rmtree(temporary, ignore_errors=True)


def _kill(processes, signum=signal.SIGKILL):
    for p in processes:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signum)  # each worker leads its own session (start_new_session)
            except ProcessLookupError:
                pass


def _run(workers, poll_seconds, temporary, received, stop_timeout):
    processes, threads, port_failures = [], [], set()
    for i, (argv, env) in enumerate(workers):
        process = subprocess.Popen(argv, env={**os.environ, **env, "TMPDIR": temporary}, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True)
        processes.append(process)
        threads.append(threading.Thread(target=_forward, args=(i, process.stdout, port_failures), daemon=True))
        threads[-1].start()
    failed, forwarded, killed, deadline = None, 0, {}, None
    while any(p.poll() is None for p in processes):
        if len(received) > forwarded:  # a signal came: forward it (a second one: kill the workers now)
            if forwarded:
                killed.update({i: "at once" for i, p in enumerate(processes) if p.poll() is None})
                _kill(processes)
            else:
                _kill(processes, received[0])
                deadline = time.time() + stop_timeout
            forwarded = len(received)
        elif deadline is not None and time.time() > deadline:
            killed.update({i: f"after {stop_timeout:g} s" for i, p in enumerate(processes) if p.poll() is None})
            _kill(processes)
            deadline = None
        elif not received and failed is None:
            failed = next((i for i, p in enumerate(processes) if p.poll() not in (None, 0)), None)
            if failed is not None:
                _kill(processes)
        time.sleep(poll_seconds)
    for p in processes:
        p.wait()
    for t in threads:
        t.join(timeout=5)
    if received:
        ends = ", ".join(f"worker {i} " + (f"was killed {killed[i]}" if i in killed else f"exited with {p.returncode}")
                         for i, p in enumerate(processes))
        print(f"interrupted by {signal.Signals(received[0]).name}: forwarded it to the {len(processes)} workers "
              f"({ends}); run the same command again to resume.", file=sys.stderr)
        return 128 + received[0]
    if failed is None:
        failed = next((i for i, p in enumerate(processes) if p.returncode != 0), None)
    if failed is None:
        return 0
    status = processes[failed].returncode
    cause = ""
    if port_failures:
        index = min(port_failures)
        cause = f" (worker {index} could not bind its address {_worker_address(workers[index])}: in use?)"
    print(f"error: worker {failed} exited with status {status}{cause}; the other workers were stopped.",
          file=sys.stderr)
    return status if status > 0 else 1


def _worker_address(worker):
    """The `host:port` a worker of `worker_commands` serves on."""
    _, env = worker
    if "TF_CONFIG" in env:
        config = json.loads(env["TF_CONFIG"])
        return config["cluster"]["worker"][config["task"]["index"]]
    return env["KERAS_DISTRIBUTION_JOB_ADDRESSES"].split(",")[int(env["KERAS_DISTRIBUTION_PROCESS_ID"])]


@dataclasses.dataclass(frozen=True, kw_only=True)
class LaunchFlags:
    """The launcher's own flags (those before `--`)."""

    num_workers: int = setting(kind=INTEGER, help="Worker processes to start on this machine.")
    backend: str = setting(kind=one_of(BACKENDS), default_factory=lambda: os.environ.get("KERAS_BACKEND", "tensorflow"),
                           help="Keras backend of the workers (default: $KERAS_BACKEND, else tensorflow).")
    port: int = setting(None, optional(INTEGER), "Port of worker 0 (JAX's coordinator); worker i gets port + i. "
                        "Default: free ports.")
    stop_timeout: float = setting(30.0, NUMBER, "After Ctrl-C or SIGTERM: seconds the workers get to stop before they "
                                  "are killed.")
    dry_run: bool = setting(False, BOOLEAN, "Print each worker's environment and command; run nothing.", switch=True)


def build_parser():
    """The launcher's argument parser: a flag per field of `LaunchFlags`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     usage="%(prog)s [options] -- recipe.py [flags]")
    return add_setting_flags(parser, LaunchFlags)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    own, command = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = build_parser().parse_args(own)
    try:
        ports = None if args.port is None else [args.port + i for i in range(max(args.num_workers, 0))]
        workers = worker_commands(command, args.num_workers, args.backend, ports=ports)
        if args.dry_run:
            for argv_i, env in workers:
                print(" ".join(f"{k}='{v}'" for k, v in env.items()), " ".join(argv_i))
            return 0
        check_ports_free([int(_worker_address(worker).rsplit(":", 1)[1]) for worker in workers])
    except UserInputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return run_workers(workers, stop_timeout=args.stop_timeout)


if __name__ == "__main__":
    sys.exit(main())
