"""The Python package against the command line and the generator's truth: kernel rows equal
the export's SQL count, gaps and iterations equal ``report --json``'s, ``report()`` equals
the CLI's JSON, bad input raises, Ctrl+C cancels a load, and the README's notebook example
runs."""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import threading
import time
import _thread
from pathlib import Path

import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parents[3]
# The cache goes to a folder of the tests' own, never the user's.
os.environ.setdefault("XDG_CACHE_HOME", str(ROOT / "target" / "pytest-cache-home"))

import nsys_explorer as nx  # noqa: E402

FIXTURES = ROOT.parent / "shared" / "fixtures"


def real_fixtures():
    return sorted(FIXTURES.glob("real*/*.sqlite"))


def cli():
    """The command line built by `cargo test` (or as NSYS_EXPLORER_BIN says)."""
    given = os.environ.get("NSYS_EXPLORER_BIN")
    candidates = [Path(given)] if given else [ROOT / "target" / "debug" / "nsys-explorer", ROOT / "target" / "release" / "nsys-explorer"]
    for c in candidates:
        if c.exists():
            return c
    pytest.skip("no nsys-explorer binary built (cargo build) to compare with")


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny") / "tiny.sqlite"
    truth = nx.generate(path, "tiny")
    return path, truth


def sql_count(path, table):
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def test_kernel_rows_equal_the_exports_sql_count(tiny):
    paths = [tiny[0]] + real_fixtures()
    assert len(paths) > 1 or not FIXTURES.exists(), "the shared real exports are found"
    for path in paths:
        t = nx.open(path)
        kernels = t.kernels()
        assert isinstance(kernels, pa.Table)
        assert kernels.num_rows == sql_count(path, "CUPTI_ACTIVITY_KIND_KERNEL"), path
        assert kernels.schema.field("name").type == pa.dictionary(pa.int32(), pa.string())
        assert kernels.schema.field("start_ns").type == pa.int64()
        assert sum(d["kernels"] for d in t.devices) == kernels.num_rows


def test_cpu_samples_and_stacks_equal_the_exports_sql(tiny):
    """Every sample of a real export that has them, and its innermost frame: the most
    sampled one equals SQL's over stackDepth = 0."""
    with_samples = [p for p in real_fixtures() if sql_count(p, "COMPOSITE_EVENTS") > 0]
    assert with_samples or not FIXTURES.exists(), "the round-4 export has samples"
    for path in with_samples:
        t = nx.open(path, cache=False)
        samples, stacks = t.cpu_samples(), t.stacks()
        assert samples.num_rows == sql_count(path, "COMPOSITE_EVENTS")
        symbol = {i: s for i, s in zip(stacks["id"].to_pylist(), stacks["symbol"].to_pylist())}
        leaves = {}
        for node in samples["stack"].to_pylist():
            if node >= 0:
                leaves[symbol[node]] = leaves.get(symbol[node], 0) + 1
        con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        top, count = con.execute(
            "SELECT s.value, count(*) AS n FROM SAMPLING_CALLCHAINS c JOIN StringIds s "
            "ON s.id = c.symbol WHERE c.stackDepth = 0 GROUP BY c.symbol ORDER BY n DESC, s.value LIMIT 1"
        ).fetchone()
        con.close()
        assert max(leaves.values()) == count
        assert leaves[top] == count
    # A capture without samples has empty tables, not an error.
    assert nx.open(tiny[0]).cpu_samples().num_rows == 0


def test_gpu_metrics_and_memory_events_equal_the_exports_sql(tmp_path):
    """A generated run with GPU metrics and device memory: every metric sample, every
    device-memory event (host memory left out)."""
    path = tmp_path / "both.sqlite"
    subprocess.run(
        [str(cli()), "synth", "--preset", "tiny", "--gpu-metrics", "--memory-usage", "--out", str(path)],
        check=True,
        capture_output=True,
    )
    t = nx.open(path, cache=False)
    metrics, memory = t.gpu_metrics(), t.memory_events()
    assert metrics.num_rows == sql_count(path, "GPU_METRICS") > 0
    assert metrics.schema.field("value").type == pa.float64()
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    device = con.execute(
        "SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS WHERE memKind NOT IN (0, 1)"
    ).fetchone()[0]
    con.close()
    assert memory.num_rows == device > 0
    assert min(memory["bytes"].to_pylist()) < 0 < max(memory["bytes"].to_pylist())


def test_gaps_and_iterations_equal_the_reports(tiny):
    t = nx.open(tiny[0])
    report = t.report()
    gaps = t.gaps()
    assert gaps.num_rows == report["gaps"]["count"]
    assert pa.compute.sum(gaps["duration_ns"]).as_py() == report["gaps"]["total_ns"]
    assert set(gaps["cause"].to_pylist()) <= {"host_sync", "after_sync", "host_bound", "dependency", "unknown"}
    assert gaps.column_names == ["device", "start_ns", "end_ns", "duration_ns", "before", "after", "nvtx", "cause"]
    # A larger minimum finds fewer.
    assert t.gaps(min_ns=100_000).num_rows < gaps.num_rows
    its = t.iterations().to_pandas()
    for d in report["iterations"]["per_device"]:
        mine = its[its.device == d["device"]].sort_values("index")
        assert mine.duration_ns.tolist() == d["durations_ns"]
        assert mine[mine.slow]["index"].tolist() == d["slow_indices"]
    truth = tiny[1]
    assert report["iterations"]["slowest_index"] == truth["iterations"]["slowest_index"]


def without_timings(v):
    v = json.loads(json.dumps(v))
    v["load"].pop("seconds", None)
    return v


def test_report_is_the_command_lines_json(tiny):
    path = tiny[0]
    out = subprocess.run([str(cli()), "report", str(path), "--json"], check=True, capture_output=True, env=os.environ)
    theirs = json.loads(out.stdout)
    mine = nx.open(path).report()
    assert without_timings(mine) == without_timings(theirs)


def test_the_other_answers_are_the_command_lines_too(tiny):
    path, truth = tiny
    t = nx.open(path)
    cp = t.critical_path()
    assert cp["iteration"] == truth["iterations"]["slowest_index"]
    assert sum(cp["by_kind"].values()) == cp["wall_ns"]
    out = subprocess.run([str(cli()), "critical-path", str(path), "--json"], check=True, capture_output=True, env=os.environ)
    assert json.loads(out.stdout) == cp
    findings = t.findings()
    assert findings and findings[0]["saving_ns"] > 0
    w = t.what_if(remove_sync=["aten::item"])
    assert w["saving_ns"] > 0
    with pytest.raises(nx.NsysExplorerError):
        t.what_if()
    d = nx.diff(t, nx.open(path))
    assert d["per_device"] and all(x["delta_ns"] == 0 for x in d["per_device"]), d["per_device"]
    assert t.api_calls().num_rows == sql_count(path, "CUPTI_ACTIVITY_KIND_RUNTIME")
    assert t.nvtx().num_rows == truth["nvtx_ranges"]
    assert t.memory().num_rows == sql_count(path, "CUPTI_ACTIVITY_KIND_MEMCPY") + sql_count(path, "CUPTI_ACTIVITY_KIND_MEMSET")


def test_several_rank_files_open_as_one_job(tmp_path):
    out = subprocess.run([str(cli()), "synth", "--preset", "tiny", "--split-ranks", str(tmp_path / "ranks")], check=True, capture_output=True)
    assert out.returncode == 0
    t = nx.open(tmp_path / "ranks")
    assert len(t.devices) == 4
    assert all(d["key"].startswith("rank") for d in t.devices)
    assert t.critical_path()["by_device"][0]["device"].startswith("rank")


def test_a_job_of_rank_summaries_names_its_straggler(tmp_path):
    ranks, summaries = tmp_path / "ranks", tmp_path / "summaries"
    subprocess.run([str(cli()), "synth", "--preset", "tiny", "--split-ranks", str(ranks)], check=True, capture_output=True)
    subprocess.run([str(cli()), "summarize", str(ranks), "--out", str(summaries)], check=True, capture_output=True)
    j = nx.job(summaries)
    assert len(j["files"]) == 4
    assert j["nccl_wait"]["late"][0]["last_device"] == "rank02.sqlite:0"
    assert j["findings"][0]["kind"] == "straggler"
    # The exports themselves give the same job.
    assert nx.job(sorted(ranks.glob("*.sqlite")))["nccl_wait"] == j["nccl_wait"]


def test_bad_input_raises_with_the_command_lines_message(tmp_path):
    with pytest.raises(nx.NsysExplorerError, match="no such file|not found|does not exist"):
        nx.open(tmp_path / "missing.sqlite")
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database")
    with pytest.raises(nx.NsysExplorerError):
        nx.open(text)
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(nx.NsysExplorerError, match="empty"):
        nx.open(empty)
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.close()
    with pytest.raises(nx.NsysExplorerError):
        nx.open(other)
    # Nothing was written beside them.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.sqlite", "notes.sqlite", "other.sqlite"]


def test_ctrl_c_cancels_a_load(tmp_path):
    path = tmp_path / "medium.sqlite"
    nx.generate(path, "medium")
    t0 = time.monotonic()
    nx.open(path, cache=False)
    whole = time.monotonic() - t0
    timer = threading.Timer(0.05, _thread.interrupt_main)
    t0 = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        nx.open(path, cache=False)
    interrupted = time.monotonic() - t0
    assert interrupted < whole, (interrupted, whole)
    # The package still works afterwards.
    assert nx.open(path).kernels().num_rows > 0


def test_the_readmes_notebook_example_runs(tmp_path, monkeypatch):
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- notebook example -->\s*```python\n(.*?)```", readme, re.S)
    assert block, "the README has its notebook example"
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), "README.md", "exec"), {})


def test_the_readmes_duckdb_example_over_exported_rank_files_runs(tmp_path, monkeypatch):
    pytest.importorskip("duckdb")
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- duckdb example -->\s*```python\n(.*?)```", readme, re.S)
    assert block, "the README has its DuckDB example"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{cli().parent}{os.pathsep}{os.environ['PATH']}")
    exec(compile(block.group(1), "README.md", "exec"), {})
    # The tables are the package's: the same rows.
    t = nx.open(tmp_path / "ranks" / "rank00.sqlite")
    import pyarrow.parquet as pq
    assert pq.read_table(tmp_path / "tables" / "rank00.gaps.parquet").num_rows == t.gaps().num_rows
    assert pq.read_table(tmp_path / "tables" / "rank00.kernels.parquet").num_rows == t.kernels().num_rows
