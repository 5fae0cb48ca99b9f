"""benchmarks/seed_runs.py: one run per seed, each metric's mean and sample standard deviation, the machine it
ran on; checked with a trivial command whose metrics are hand-computed from the seed."""

import importlib.util
import json
import os
import statistics
import sys

import pytest

pytestmark = pytest.mark.backend_independent

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Writes {"accuracy": seed / 10, "steps": 7, "name": "x"} to the file named by its second argument.
WRITE_METRICS = "import json, sys; json.dump({'accuracy': int(sys.argv[1]) / 10, 'steps': 7, 'name': 'x'}, open(sys.argv[2], 'w'))"


def _seed_runs():
    spec = importlib.util.spec_from_file_location("seed_runs", os.path.join(REPO, "benchmarks", "seed_runs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mean_and_sample_std_over_seeds_with_command_and_machine(tmp_path):
    output = str(tmp_path / "out" / "toy")
    rc = _seed_runs().main(["--seeds", "1,2,4", "--results", str(tmp_path / "{seed}.json"), "--output", output, "--",
                            sys.executable, "-c", WRITE_METRICS, "{seed}", str(tmp_path / "{seed}.json")])
    assert rc == 0
    report = json.load(open(output + ".json", encoding="utf-8"))
    assert [r["seed"] for r in report["runs"]] == [1, 2, 4]
    assert [r["metrics"] for r in report["runs"]] == [{"accuracy": 0.1, "steps": 7.0}, {"accuracy": 0.2, "steps": 7.0},
                                                      {"accuracy": 0.4, "steps": 7.0}]  # "name" is not a number
    accuracy = report["metrics"]["accuracy"]
    assert abs(accuracy["mean"] - 0.7 / 3) < 1e-12 and accuracy["n"] == 3
    # The sample standard deviation (n - 1), about the mean 7/30: sqrt(((4/30)^2 + (1/30)^2 + (5/30)^2) / 2).
    assert abs(accuracy["std"] - (42 / 2) ** 0.5 / 30) < 1e-12
    assert abs(accuracy["std"] - statistics.stdev([0.1, 0.2, 0.4])) < 1e-12
    assert report["metrics"]["steps"] == {"mean": 7.0, "std": 0.0, "n": 3}
    assert report["command"][-2:] == ["{seed}", str(tmp_path / "{seed}.json")]
    assert report["machine"]["cpu_count"] >= 1 and report["machine"]["cpu"] and "python" in report["versions"]
    table = open(output + ".md", encoding="utf-8").read()
    assert "| accuracy | 0.2333 ± 0.1528 | 0.1000 | 0.2000 | 0.4000 |" in table
    assert "mean ± std over 3 seeds" in table and "Machine: " in table


def test_named_metrics_only_and_a_failed_run_writes_nothing(tmp_path):
    module = _seed_runs()
    output = str(tmp_path / "named")
    assert module.main(["--seeds", "3", "--metrics", "accuracy", "--results", str(tmp_path / "{seed}.json"),
                        "--output", output, "--", sys.executable, "-c", WRITE_METRICS, "{seed}",
                        str(tmp_path / "{seed}.json")]) == 0
    report = json.load(open(output + ".json", encoding="utf-8"))
    assert report["metrics"] == {"accuracy": {"mean": 0.3, "std": 0.0, "n": 1}}
    failed = str(tmp_path / "failed")
    assert module.main(["--seeds", "1,2", "--results", str(tmp_path / "x.json"), "--output", failed, "--",
                        sys.executable, "-c", "raise SystemExit(3)"]) == 3
    assert not os.path.exists(failed + ".json") and not os.path.exists(failed + ".md")
