#!/usr/bin/env python3
"""A session with `nsys-explorer mcp` through the reference MCP client, printed as Markdown:
each tool call's arguments, its summary line, its JSON (cut to a few lines) and how long it
took. What docs/agents.md shows; also the MCP figures of docs/benchmarks.md (each call's
time after `open_trace`).

Usage: scripts/mcp-transcript.py BINARY EXPORT [AFTER_EXPORT]
Needs the `mcp` Python package (pip install mcp).
"""
import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def cut(value, lines=14):
    text = json.dumps(value, indent=1)
    rows = text.splitlines()
    return "\n".join(rows[:lines] + (["…"] if len(rows) > lines else []))


async def main(binary, export, after=None):
    # The server gets this environment (the MCP client passes only a few variables by
    # default): XDG_CACHE_HOME picks the cache.
    params = StdioServerParameters(command=binary, args=["mcp"], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()

            async def call(tool, **args):
                t = time.perf_counter()
                r = await s.call_tool(tool, args)
                ms = 1000 * (time.perf_counter() - t)
                summary = r.content[0].text if r.content else ""
                print(f"### `{tool}` ({ms:.0f} ms)\n")
                print(f"```json\n{json.dumps(args)}\n```\n")
                print(f"> {summary}\n")
                if r.structured_content is not None:
                    size = len(json.dumps(r.structured_content, separators=(",", ":")))
                    print(f"```json\n{cut(r.structured_content)}\n```\n*{size} bytes of JSON*\n")
                return r.structured_content or {}, ms

            o, _ = await call("open_trace", paths=[export])
            tid = o["trace_id"]
            await call("findings", trace_id=tid, limit=3)
            await call("breakdown", trace_id=tid)
            it, _ = await call("iterations", trace_id=tid, limit=5)
            if it.get("slowest_index") is not None:
                await call("iteration", trace_id=tid, index=it["slowest_index"], limit=3)
                await call("critical_path", trace_id=tid, limit=3)
            g, _ = await call("gaps", trace_id=tid, limit=3)
            await call("gaps", trace_id=tid, cause="host_bound", min_ns=100_000, limit=2, offset=2)
            await call("recurring_gaps", trace_id=tid, limit=2)
            await call("kernels", trace_id=tid, limit=3)
            await call("nccl", trace_id=tid, limit=3)
            await call("memory", trace_id=tid, limit=3)
            if o["recorded"]["cpu_samples"]:
                await call("cpu_samples", trace_id=tid, limit=5)
            if g.get("gaps"):
                first = g["gaps"][0]
                await call("events", trace_id=tid, start_ns=first["start_ns"] - 200_000,
                           end_ns=first["start_ns"] + first["duration_ns"] + 200_000, limit=8)
            f, _ = await call("findings", trace_id=tid, limit=1)
            if f.get("findings") and f["findings"][0].get("what_if"):
                print("(the top finding's what_if, as `what-if` flags: "
                      f"`{' '.join(f['findings'][0]['what_if'])}`)\n")
            await call("what_if", trace_id=tid, remove_sync=["cudaStreamSynchronize"])
            await call("figure", trace_id=tid, name="per_device_walltime")
            if after:
                a, _ = await call("open_trace", paths=[after])
                await call("diff", before=tid, after=a["trace_id"], fail_if_slower_pct=5)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
