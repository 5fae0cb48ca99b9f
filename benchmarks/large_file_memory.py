"""Peak memory and time to the first training step of run_glue.py on large generated training files.

    python benchmarks/large_file_memory.py [--sizes_mb=20,200,1000] [--memory_sizes_mb=20] [--work_dir=DIR]
                                           [--output=docs/large_files.md] [--timeout_s=900]
    python benchmarks/large_file_memory.py --smoke     # tests/test_large_files.py: tiny files, in this process

For every size, an SST-2 training file (`sentence<TAB>label`, 5 to 15 words a line from a 56-word vocabulary,
about 49 bytes a line, as the 200 MB, 4.08M-line file of issue #42) is generated in --work_dir, and
`python -m keras_bert_impl.runners.run_glue --do_train` runs on it in a subprocess (the backend of
KERAS_BACKEND; a 1-layer, hidden-16 model, batch 32, --max_seq_length=64, --log_every_steps=1) until it
logs its first training step (output_dir/train_steps_log.jsonl), then is killed. Measured: the seconds from
the start of the process to that step, and the process's peak resident set (VmHWM of /proc/PID/status) by
then. Each size runs streamed (`--stream_train_data`, `keras_bert_impl.data.streaming`); the sizes of
--memory_sizes_mb also in memory (`--nostream_train_data`: the whole file featurized first), for comparison.
The table goes to --output with the command and the machine.

`--smoke` measures the streaming reader itself on two tiny files, one ten times the other: one epoch of
`StreamedExamples.epoch_batches` each, the examples it held at once (`max_held`) and the peak of the memory
Python allocated during the epoch (tracemalloc). Both stay flat when the file grows.
"""

import argparse
import json
import os
import platform
import random
import signal
import subprocess
import sys
import time
import tracemalloc

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

WORDS = [f"w{i}" for i in range(50)] + ["good", "bad", "movie", "the", "plot", "not"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
CONFIG = {"vocab_size": len(VOCAB), "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
          "intermediate_size": 32, "max_position_embeddings": 64}


def write_training_file(path, num_bytes=None, num_lines=None, seed=0):
    """Writes an SST-2 train.tsv of about `num_bytes` bytes (or exactly `num_lines` examples); returns its
    number of examples."""
    rng = random.Random(seed)
    count = written = 0
    with open(path, "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n")
        while (num_lines is None and written < num_bytes) or (num_lines is not None and count < num_lines):
            lines = [" ".join(rng.choices(WORDS, k=rng.randint(5, 15))) + f"\t{rng.randint(0, 1)}\n"
                     for _ in range(1000 if num_lines is None else min(1000, num_lines - count))]
            f.write("".join(lines))
            written += sum(len(line) for line in lines)
            count += len(lines)
    return count


def write_model_files(directory):
    """vocab.txt and bert_config.json of the tiny model; returns their flags."""
    with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(VOCAB) + "\n")
    with open(os.path.join(directory, "bert_config.json"), "w", encoding="utf-8") as f:
        json.dump(CONFIG, f)
    return [f"--vocab_file={os.path.join(directory, 'vocab.txt')}",
            f"--bert_config_file={os.path.join(directory, 'bert_config.json')}"]


def peak_rss_mb(pid):
    """The peak resident set (VmHWM) of process `pid` in MiB, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def time_to_first_step(data_dir, model_flags, stream, timeout_s):
    """Runs run_glue.py on data_dir/train.tsv until its first training step; returns (seconds or None, peak MiB)."""
    output_dir = os.path.join(data_dir, f"out_{'stream' if stream else 'memory'}")
    steps_log = os.path.join(output_dir, "train_steps_log.jsonl")
    command = [sys.executable, "-m", "keras_bert_impl.runners.run_glue", "--task_name=sst2", f"--data_dir={data_dir}",
               *model_flags, f"--output_dir={output_dir}", "--do_train", "--max_seq_length=64",
               "--train_batch_size=32", "--num_train_epochs=1", "--log_every_steps=1", "--verbose=0",
               "--nosave_model", f"--stream_train_data={str(stream).lower()}"]
    env = {**os.environ, "PYTHONPATH": REPO}
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    seconds, peak = None, 0.0
    try:
        while time.perf_counter() - start < timeout_s and process.poll() is None:
            peak = max(peak, peak_rss_mb(process.pid) or 0.0)
            if os.path.isfile(steps_log) and os.path.getsize(steps_log):
                seconds = time.perf_counter() - start
                break
            time.sleep(0.1)
        if process.poll() is not None and seconds is None:
            raise RuntimeError(f"run_glue.py exited with status {process.returncode}: {process.stderr.read()[-2000:]}")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return seconds, peak


def measure(sizes_mb, memory_sizes_mb, work_dir, timeout_s):
    rows = []
    model_dir = os.path.join(work_dir, "model")
    os.makedirs(model_dir, exist_ok=True)
    model_flags = write_model_files(model_dir)
    for size in sizes_mb:
        data_dir = os.path.join(work_dir, f"{size:g}mb")
        os.makedirs(data_dir, exist_ok=True)
        path = os.path.join(data_dir, "train.tsv")
        examples = write_training_file(path, num_bytes=int(size * 2**20))
        for stream in (True, False) if size in memory_sizes_mb else (True,):
            seconds, peak = time_to_first_step(data_dir, model_flags, stream, timeout_s)
            rows.append({"size_mb": size, "bytes": os.path.getsize(path), "examples": examples,
                         "mode": "streamed" if stream else "in memory", "first_step_s": seconds,
                         "peak_rss_mb": round(peak, 1)})
            print(json.dumps(rows[-1]), flush=True)
        os.remove(path)
    return rows


def write_table(rows, output, argv, timeout_s):
    import keras

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from run_benchmarks import machine, machine_line

    lines = [
        "# Large training files: memory and time to the first step",
        "",
        "Generated by `benchmarks/large_file_memory.py` (its docstring says what it measures); do not edit by hand.",
        "",
        "```bash",
        f"KERAS_BACKEND={keras.backend.backend()} python benchmarks/large_file_memory.py {' '.join(argv)}".rstrip(),
        "```",
        "",
        f"{machine_line(machine())}; {platform.platform()} (shared with other jobs), Python "
        f"{platform.python_version()}, Keras {keras.__version__}, backend {keras.backend.backend()}.",
        "",
        "| training file | examples | read | time to first step | peak resident set |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        seconds = f"{row['first_step_s']:.1f} s" if row["first_step_s"] is not None else f"none in {timeout_s} s"
        lines.append(f"| {row['size_mb']:g} MB | {row['examples']:,} | {row['mode']} | {seconds} | "
                     f"{row['peak_rss_mb']:,.0f} MiB |")
    lines += [
        "",
        "Streamed, the time to the first step is the one pass that checks and counts every line "
        "(`StreamedExamples`), which grows with the file; the memory does not: the process holds the "
        "libraries, the model and one window of examples (`bucket_window` x batch size = 3,200). In memory, "
        "every example is featurized before the first step.",
        "",
    ]
    with open(output, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def smoke(work_dir, num_lines=(1000, 10000), batch_size=8, bucket_window=4):
    """One epoch of the streaming reader on tiny files: [{"examples", "batches", "max_held",
    "traced_peak_bytes"}] per file."""
    from keras_bert_impl.data import glue_data, streaming
    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer(VOCAB)
    rows = []
    for n in num_lines:
        path = os.path.join(work_dir, f"train_{n}.tsv")
        write_training_file(path, num_lines=n)
        header_lines, parse = glue_data.glue_line_parser("sst2", path, "train")

        def featurize(examples):
            return glue_data.encode_examples(tokenizer, examples, 64), glue_data.label_ids("sst2", examples)

        stream = streaming.StreamedExamples(path, parse, featurize, header_lines)
        tracemalloc.start()
        batches = sum(1 for _ in stream.epoch_batches(batch_size, seed=0, bucket_window=bucket_window))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows.append({"examples": stream.num_examples, "batches": batches, "max_held": stream.max_held,
                     "traced_peak_bytes": peak})
    return rows


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes_mb", default="20,200,1000", help="Training file sizes, streamed.")
    parser.add_argument("--memory_sizes_mb", default="20", help="Sizes also read in memory, for comparison.")
    parser.add_argument("--work_dir", default=os.path.join(REPO, "output", "large_files"))
    parser.add_argument("--output", default=os.path.join(REPO, "docs", "large_files.md"))
    parser.add_argument("--timeout_s", type=float, default=900)
    parser.add_argument("--smoke", action="store_true", help="Tiny files, the streaming reader only, in process.")
    args = parser.parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    if args.smoke:
        rows = smoke(args.work_dir)
        print(json.dumps(rows))
        return rows
    sizes = [float(s) for s in args.sizes_mb.split(",")]
    memory_sizes = [float(s) for s in args.memory_sizes_mb.split(",") if s]
    rows = measure(sizes, memory_sizes, args.work_dir, args.timeout_s)
    write_table(rows, args.output, argv, args.timeout_s)
    return rows


if __name__ == "__main__":
    main()
