"""`nsys-explorer mcp` driven by the reference MCP client (the `mcp` package: stdio_client +
ClientSession) as an agent drives it: initialise, list the tools, call every tool on the
shared real exports and on generated runs; answers equal `report --json`, `what-if --json`,
`critical-path --json` and `diff --json` of the same files; bad input is a tool error and
the server answers the next call; two calls at once; a cancelled open; and a scripted
session that answers the seed's questions through the tools alone.

Run: NSYS_EXPLORER_BIN=target/debug/nsys-explorer python -m pytest -q tests/mcp
"""

import asyncio
import base64
import json
import os
import subprocess
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"
# The cache goes to a folder of the tests' own, never the user's.
CACHE = ROOT / "target" / "mcp-test-cache-home"
os.environ["XDG_CACHE_HOME"] = str(CACHE)

TOOLS = {
    "open_trace", "findings", "breakdown", "gaps", "recurring_gaps", "iterations", "iteration",
    "critical_path", "what_if", "kernels", "nccl", "memory", "cpu_samples", "events", "diff",
    "figure", "close_trace",
}
# An answer's JSON fits an agent's context.
MAX_BYTES = 20_000


def binary():
    given = os.environ.get("NSYS_EXPLORER_BIN")
    candidates = [Path(given)] if given else [ROOT / "target" / "debug" / "nsys-explorer"]
    for c in candidates:
        if c.exists():
            return c
    pytest.skip("no nsys-explorer binary built (cargo build)")


def real_fixtures():
    return sorted(FIXTURES.glob("real*/*.sqlite"))


def cli_json(*args):
    out = subprocess.run([str(binary()), *args], capture_output=True, text=True, check=True,
                         env={**os.environ, "XDG_CACHE_HOME": str(CACHE)})
    return json.loads(out.stdout)


@asynccontextmanager
async def server():
    params = StdioServerParameters(command=str(binary()), args=["mcp"],
                                   env={**os.environ, "XDG_CACHE_HOME": str(CACHE)})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session, tool, **args):
    """A call's structured answer; fails the test on a tool error."""
    r = await session.call_tool(tool, args)
    text = " ".join(c.text for c in r.content if c.type == "text")
    assert not r.is_error, f"{tool}({args}) failed: {text}"
    assert r.structured_content is not None, f"{tool} gave no structured content"
    assert len(json.dumps(r.structured_content, separators=(",", ":"))) <= MAX_BYTES, f"{tool}'s answer is over {MAX_BYTES} bytes"
    assert r.content[0].type == "text" and r.content[0].text, "a summary line first"
    return r.structured_content


async def tool_error(session, tool, **args):
    """The message of a call that must fail as a tool error."""
    r = await session.call_tool(tool, args)
    assert r.is_error, f"{tool}({args}) should have failed"
    return " ".join(c.text for c in r.content if c.type == "text")


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="session")
def generated(tmp_path_factory):
    """A tiny generated 4-GPU run, and the same run with its per-step sync removed."""
    d = tmp_path_factory.mktemp("generated")
    before, after = d / "before.sqlite", d / "after.sqlite"
    subprocess.run([str(binary()), "synth", "--preset", "tiny", "--no-cache", "--out", str(before)], check=True, capture_output=True)
    subprocess.run([str(binary()), "synth", "--preset", "tiny", "--no-cache", "--no-step-sync", "--out", str(after)], check=True, capture_output=True)
    return before, after


@pytest.fixture(scope="session")
def ranks(tmp_path_factory):
    """A generated job split into one export per rank, each on its own clock."""
    d = tmp_path_factory.mktemp("ranks")
    subprocess.run([str(binary()), "synth", "--preset", "tiny", "--no-cache", "--split-ranks", str(d)], check=True, capture_output=True)
    return d


def test_the_tools_are_listed_with_schemas_and_read_only():
    async def go():
        async with server() as s:
            tools = (await s.list_tools()).tools
            assert {t.name for t in tools} == TOOLS
            for t in tools:
                assert t.description and len(t.description) > 40, t.name
                assert t.input_schema["type"] == "object"
                assert t.annotations.read_only_hint is True and t.annotations.open_world_hint is False
            opened = next(t for t in tools if t.name == "open_trace")
            assert "paths" in opened.input_schema["required"]
    run(go())


@pytest.mark.parametrize("export", real_fixtures(), ids=lambda p: p.name)
def test_every_tool_answers_on_the_real_exports_as_the_cli_does(export):
    report = cli_json("report", "--json", str(export))

    async def go():
        async with server() as s:
            o = await call(s, "open_trace", paths=[str(export)])
            tid = o["trace_id"]
            assert len(o["gpus"]) == len(report["devices"])
            # The findings are the report's, in its order.
            f = await call(s, "findings", trace_id=tid, limit=50)
            assert f["total"] == len(report["findings"])
            assert [x["title"] for x in f["findings"]] == [x["title"] for x in report["findings"]][:len(f["findings"])]
            assert [x.get("saving_ns") for x in f["findings"]] == [x.get("saving_ns") for x in report["findings"]][:len(f["findings"])]
            # Where time goes: each GPU's breakdown as the report's.
            b = await call(s, "breakdown", trace_id=tid)
            for row, dev in zip(b["gpus"], report["devices"]):
                assert row["idle_ns"] == dev["breakdown_ns"]["idle"]
                assert row["compute_only_ns"] == dev["breakdown_ns"]["compute_only"]
            g = await call(s, "gaps", trace_id=tid, limit=5)
            assert g["total"] == report["gaps"]["count"]
            if report["gaps"]["top"]:
                assert g["gaps"][0]["duration_ns"] == report["gaps"]["top"][0]["duration_ns"]
            r = await call(s, "recurring_gaps", trace_id=tid, limit=3)
            assert r["total"] == len(report["recurring_gaps"]) or len(report["recurring_gaps"]) == 10
            it = await call(s, "iterations", trace_id=tid)
            assert it["count"] == report["iterations"]["count"]
            k = await call(s, "kernels", trace_id=tid, limit=3)
            if report["kernels_top"]:
                assert k["kernels"][0]["name"] == report["kernels_top"][0]["name"]
            await call(s, "nccl", trace_id=tid)
            await call(s, "memory", trace_id=tid)
            cp = await call(s, "critical_path", trace_id=tid)
            cli_cp = cli_json("critical-path", "--json", str(export))
            assert cp["by_kind"] == cli_cp["by_kind"] and cp["wall_ns"] == cli_cp["wall_ns"]
            if it["count"]:
                await call(s, "iteration", trace_id=tid, index=it["slowest_index"] or 0)
            # A window: the first 5 ms of events.
            start = o["time_origin_ns"]
            ev = await call(s, "events", trace_id=tid, start_ns=start, end_ns=start + 5_000_000, limit=20)
            assert ev["total"] == ev["gpu_ops"] + ev["api_calls"] + ev["nvtx_ranges"]
            if o["recorded"]["cpu_samples"]:
                await call(s, "cpu_samples", trace_id=tid)
            else:
                assert "no CPU samples" in await tool_error(s, "cpu_samples", trace_id=tid)
    run(go())


def test_what_if_critical_path_and_diff_equal_the_cli(generated):
    before, after = generated

    async def go():
        async with server() as s:
            b = (await call(s, "open_trace", paths=[str(before)]))["trace_id"]
            a = (await call(s, "open_trace", paths=[str(after)]))["trace_id"]
            w = await call(s, "what_if", trace_id=b, remove_sync=["aten::item"])
            cli = cli_json("what-if", "--json", str(before), "--remove-sync", "aten::item")
            assert w["predicted"] == cli["predicted"]
            cp = await call(s, "critical_path", trace_id=b, iteration=2, limit=1000)
            cli_cp = cli_json("critical-path", "--json", "--iteration", "2", str(before))
            assert (cp["by_kind"], cp["by_device"], cp["wall_ns"]) == (cli_cp["by_kind"], cli_cp["by_device"], cli_cp["wall_ns"])
            assert cp["segments"] == cli_cp["segments"][:len(cp["segments"])]
            d = await call(s, "diff", before=b, after=a, fail_if_slower_pct=5)
            cli_d = cli_json("diff", "--json", str(before), str(after))
            assert d["verdict"] == cli_d["verdict"]
            assert d["gate"]["verdict"] in ("slower", "not_slower", "inconclusive")
            fig = await s.call_tool("figure", {"trace_id": b, "name": "iter_duration_over_time"})
            assert not fig.is_error
            image = next(c for c in fig.content if c.type == "image")
            assert image.mime_type == "image/png"
            assert base64.b64decode(image.data)[:8] == b"\x89PNG\r\n\x1a\n"
    run(go())


def test_a_job_split_in_rank_files_opens_as_one(ranks):
    report = cli_json("report", "--json", str(ranks))

    async def go():
        async with server() as s:
            o = await call(s, "open_trace", paths=[str(ranks)])
            assert len(o["files"]) == 4 and len(o["gpus"]) == 4
            f = await call(s, "findings", trace_id=o["trace_id"], limit=50)
            assert [x["title"] for x in f["findings"]] == [x["title"] for x in report["findings"]][:len(f["findings"])]
    run(go())


def test_bad_input_is_a_tool_error_and_the_server_goes_on(tmp_path, generated):
    text = tmp_path / "notes.txt"
    text.write_text("not an export\n")
    empty = tmp_path / "empty"
    empty.mkdir()

    async def go():
        async with server() as s:
            assert "no-such" in await tool_error(s, "open_trace", paths=[str(tmp_path / "no-such.sqlite")])
            assert "notes.txt" in await tool_error(s, "open_trace", paths=[str(text)])
            await tool_error(s, "open_trace", paths=[str(empty)])
            await tool_error(s, "open_trace", paths=[])
            assert "t99" in await tool_error(s, "findings", trace_id="t99")
            tid = (await call(s, "open_trace", paths=[str(generated[0])]))["trace_id"]
            await tool_error(s, "iteration", trace_id=tid, index=10_000)
            await tool_error(s, "what_if", trace_id=tid)
            await tool_error(s, "what_if", trace_id=tid, scale_kernel=["(unclosed=0.5"])
            await tool_error(s, "figure", trace_id=tid, name="no_such_figure")
            await tool_error(s, "gaps", trace_id=tid, start_ns=10)
            await tool_error(s, "events", trace_id=tid, start_ns=10, end_ns=5)
            await call(s, "close_trace", trace_id=tid)
            assert tid in await tool_error(s, "findings", trace_id=tid)
            # Arguments that fail the schema, an unknown tool: protocol errors, the server alive.
            with pytest.raises(Exception):
                await s.call_tool("no_such_tool", {})
            with pytest.raises(Exception):
                await s.call_tool("findings", {"trace_id": 5})
            # Still answering.
            assert {t.name for t in (await s.list_tools()).tools} == TOOLS
    run(go())


def test_two_calls_in_flight_and_a_cancelled_open(generated, tmp_path):
    async def go():
        async with server() as s:
            tid = (await call(s, "open_trace", paths=[str(generated[0])]))["trace_id"]
            # Two calls at once: both answered.
            a, b = await asyncio.gather(
                s.call_tool("what_if", {"trace_id": tid, "remove_sync": ["aten::item"]}),
                s.call_tool("gaps", {"trace_id": tid, "limit": 3}),
            )
            assert not a.is_error and not b.is_error
            # An open cancelled by the client (its request dropped): the server answers next.
            big = tmp_path / "medium.sqlite"
            subprocess.run([str(binary()), "synth", "--preset", "medium", "--no-cache", "--out", str(big)], check=True, capture_output=True)
            opening = asyncio.create_task(s.call_tool("open_trace", {"paths": [str(big)]}))
            await asyncio.sleep(0.3)
            opening.cancel()
            with pytest.raises(asyncio.CancelledError):
                await opening
            f = await call(s, "findings", trace_id=tid)
            assert f["total"] >= 0
    run(go())


def test_the_seeds_questions_answered_through_the_tools_alone(generated):
    """Where does time go per GPU, which iteration is slowest and why, what to fix first and
    what it saves — on a run the generator knows the truth of."""
    before = generated[0]
    truth = json.loads(before.with_suffix(".truth.json").read_text())

    async def go():
        async with server() as s:
            tid = (await call(s, "open_trace", paths=[str(before)]))["trace_id"]
            b = await call(s, "breakdown", trace_id=tid)
            for row, dev in zip(b["gpus"], truth["devices"]):
                idle = dev["breakdown_ns"]["idle"]
                assert abs(row["idle_ns"] - idle) <= max(idle // 100, 10_000), (row, idle)
            it = await call(s, "iterations", trace_id=tid)
            assert it["slowest_index"] == truth["iterations"]["slowest_index"]
            one = await call(s, "iteration", trace_id=tid, index=it["slowest_index"])
            assert one["drilldown"]["straggler_device"] == truth["iterations"]["straggler_device"]
            f = await call(s, "findings", trace_id=tid)
            assert f["findings"], "the generated run has something to fix"
            top = f["findings"][0]
            assert top["saving_ns"] > 0 and top["what_if"]
    run(go())
