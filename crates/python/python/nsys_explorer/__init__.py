"""nsys-explorer's engine in a notebook: Nsight Systems SQLite exports loaded and analysed
at Rust speed, answers as dicts (the command line's JSON) and tables as ``pyarrow.Table``.

    import nsys_explorer as nx
    t = nx.open("run.sqlite")            # or [rank0.sqlite, ...], or a folder of them
    t.report()["findings"][0]["title"]   # what to fix first
    gaps = t.gaps().to_pandas()          # every idle window of every GPU

Times are int64 nanoseconds on the export's clock; names are dictionary-encoded strings.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Union

import pyarrow as pa

from . import _native
from ._native import NsysExplorerError

__all__ = ["open", "diff", "generate", "job", "Trace", "NsysExplorerError"]

PathLike = Union[str, "os.PathLike[str]"]


def _table(columns: Dict[str, Any]) -> pa.Table:
    """Columns from the native side (NumPy arrays that own Rust's vectors, and the texts of
    dictionary-encoded ones) as a pyarrow Table, without copying the arrays."""
    arrays = columns["arrays"]
    dictionaries = columns["dictionaries"]
    out = {}
    for name, values in arrays.items():
        if name in dictionaries:
            indices = pa.array(values, type=pa.int32())
            # -1 marks "none": a null in Arrow.
            if len(values) and values.min() < 0:
                indices = pa.array(values, type=pa.int32(), mask=values < 0)
            out[name] = pa.DictionaryArray.from_arrays(
                indices, pa.array(dictionaries[name], type=pa.string())
            )
        else:
            out[name] = pa.array(values)
    return pa.table(out)


class Trace:
    """A loaded, analysed trace. Build it with :func:`open`."""

    def __init__(self, native: "_native.Trace") -> None:
        self._t = native

    def __repr__(self) -> str:
        return f"<nsys_explorer.Trace {', '.join(map(str, self.paths))}: {len(self.devices)} GPUs>"

    @property
    def devices(self) -> List[Dict[str, Any]]:
        """The GPUs: ``id``, ``name``, ``key`` (``FILE:ID`` for several files), ``kernels``,
        ``nccl_kernels``, ``streams``."""
        return self._t.devices

    @property
    def paths(self) -> List[str]:
        """The exports it was read from."""
        return [str(p) for p in self._t.paths]

    def report(self) -> Dict[str, Any]:
        """Every analysis, as ``nsys-explorer report --json`` gives it."""
        return self._t.report()

    def findings(self) -> List[Dict[str, Any]]:
        """What to fix first, ranked by the saving a replay of the trace predicts."""
        return self._t.findings()

    def what_if(
        self,
        remove_sync: Optional[Sequence[str]] = None,
        scale_kernel: Optional[Sequence[str]] = None,
        nccl_own_stream: bool = False,
        remove_cpu: Optional[Sequence[str]] = None,
    ) -> Dict[str, Any]:
        """Replays the trace with a change (``what-if --json``): synchronising calls whose
        name (or NVTX range) contains a text made non-blocking, kernels matching
        ``"REGEX=FACTOR"`` scaled, NCCL on a stream of its own, CPU time inside ranges
        removed."""
        return self._t.what_if(
            remove_sync=list(remove_sync) if remove_sync else None,
            scale_kernel=list(scale_kernel) if scale_kernel else None,
            nccl_own_stream=nccl_own_stream,
            remove_cpu=list(remove_cpu) if remove_cpu else None,
        )

    def critical_path(self, iteration: Optional[int] = None) -> Dict[str, Any]:
        """An iteration's critical path across ranks (default: the slowest), as
        ``critical-path --json`` gives it."""
        return self._t.critical_path(iteration)

    def kernels(self) -> pa.Table:
        """One row per kernel: device, stream, start_ns, end_ns, duration_ns, name, kind
        (compute, NCCL, or CUDA graph: a graph launch recorded whole), correlation_id,
        graph_node and graph_id (-1 outside CUDA graphs: a graph-level execution has its
        graph's id, a node-level kernel its node and, in newer exports, its graph)."""
        return _table(self._t._table("kernels"))

    def memory(self) -> pa.Table:
        """One row per memcpy or memset: device, stream, start_ns, end_ns, duration_ns, name,
        kind, correlation_id, bytes, pageable."""
        return _table(self._t._table("memory"))

    def api_calls(self) -> pa.Table:
        """One row per CUDA API call: pid, tid, start_ns, end_ns, duration_ns, name,
        correlation_id."""
        return _table(self._t._table("api_calls"))

    def nvtx(self) -> pa.Table:
        """One row per NVTX range: pid, tid, start_ns, end_ns, duration_ns, text, depth."""
        return _table(self._t._table("nvtx"))

    def gaps(self, min_ns: int = 1000) -> pa.Table:
        """Every idle window of every GPU of at least ``min_ns``: device, start_ns, end_ns,
        duration_ns, before, after (the kernels around it), nvtx (the NVTX range around
        both), cause (host_sync, after_sync, host_bound, dependency, unknown)."""
        return _table(self._t._table("gaps", min_ns))

    def iterations(self) -> pa.Table:
        """One row per iteration and GPU: device, index, start_ns, end_ns, duration_ns,
        slow."""
        return _table(self._t._table("iterations"))

    def graphs(self) -> pa.Table:
        """One row per CUDA graph launched (none without graphs): graph_id, exec_id (-1
        where not recorded: node-level traces), launches, kernels_per_launch (-1 at graph
        level: not recorded), gpu_ns, median_ns, launch_cpu_ns, nvtx."""
        return _table(self._t._table("graphs"))

    def cpu_samples(self) -> pa.Table:
        """One row per CPU sample (nsys's ``--sample``, on by default): time_ns, tid, thread,
        stack (the ``id`` in :meth:`stacks` of its innermost frame; -1 without one),
        state (nsys's ``threadState``). Empty when the capture sampled nothing."""
        return _table(self._t._table("cpu_samples"))

    def gpu_metrics(self) -> pa.Table:
        """One row per GPU metric sample (``--gpu-metrics-devices``), long form: device,
        time_ns, metric (as nsys names it, e.g. ``SMs Active [Throughput %]``), value (clocks
        in MHz). Empty without metrics."""
        return _table(self._t._table("gpu_metrics"))

    def memory_events(self) -> pa.Table:
        """One row per device-memory allocation or free (``--cuda-memory-usage=true``;
        host memory left out): device, time_ns, bytes (negative for a free), address,
        correlation_id. Empty without them."""
        return _table(self._t._table("memory_events"))

    def stacks(self) -> pa.Table:
        """The call stacks of the samples and of OS runtime calls as a tree, a row per
        node: id, parent (the calling frame's node, -1 for the outermost), python (a
        ``.py`` frame), unresolved (an address nsys could not name), symbol, module.
        Follow ``parent`` from a sample's ``stack`` for its frames, innermost first."""
        return _table(self._t._table("stacks"))


def open(
    path: Union[PathLike, Sequence[PathLike]],
    *,
    marker: Optional[str] = None,
    cache: bool = True,
) -> Trace:
    """Opens an export (``.sqlite``, or ``.nsys-rep`` with nsys installed), several ranks'
    exports (a list) or a folder of them as one job, and analyses it. The GIL is released
    while it loads; Ctrl+C cancels. ``marker``: the NVTX text that marks iterations
    (digits match any number). ``cache``: read and write the cache under
    ``$XDG_CACHE_HOME/nsys-explorer`` (never beside the trace). Bad input raises
    :class:`NsysExplorerError` with the command line's message."""
    if isinstance(path, (str, os.PathLike)):
        paths = [os.fspath(path)]
    else:
        paths = [os.fspath(p) for p in path]
    return Trace(_native.open(paths, marker=marker, cache=cache))


def diff(before: Trace, after: Trace) -> Dict[str, Any]:
    """Two runs compared, as ``nsys-explorer diff --json`` gives it."""
    return _native.diff(before._t, after._t)


def job(paths: Union[PathLike, Sequence[PathLike]], top: int = 10) -> Dict[str, Any]:
    """A job of many ranks, as ``nsys-explorer report`` gives it for rank summaries
    (``*.summary`` from ``nsys-explorer summarize``, or a folder of them) or for exports,
    each summarised in turn: per GPU NCCL wait vs transfer, the collectives held back
    longest, the straggler with its replayed saving, the ranks x iterations heatmap."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return _native.job([os.fspath(p) for p in paths], top)


def generate(path: PathLike, preset: str = "tiny") -> Dict[str, Any]:
    """Writes a generated 4-GPU run (``tiny``, ``medium`` or ``large``) to ``path`` and returns
    the numbers it truly has: a trace to try the package on."""
    return _native.generate(os.fspath(path), preset)
