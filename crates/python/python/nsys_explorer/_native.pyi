"""Type stubs of the Rust extension (``crates/python/src/lib.rs``)."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Union

class NsysExplorerError(Exception):
    """A trace that cannot be opened or analysed; the message says what to do."""

_Columns = Dict[str, Dict[str, Any]]

class Trace:
    @property
    def devices(self) -> List[Dict[str, Any]]: ...
    @property
    def paths(self) -> List[PathLike[str]]: ...
    def report(self) -> Dict[str, Any]: ...
    def findings(self) -> List[Dict[str, Any]]: ...
    def what_if(
        self,
        remove_sync: Optional[Sequence[str]] = None,
        scale_kernel: Optional[Sequence[str]] = None,
        nccl_own_stream: bool = False,
        remove_cpu: Optional[Sequence[str]] = None,
    ) -> Dict[str, Any]: ...
    def critical_path(self, iteration: Optional[int] = None) -> Dict[str, Any]: ...
    def _table(self, name: str, min_ns: int = 1000) -> _Columns: ...

def open(
    paths: Sequence[Union[str, PathLike[str]]],
    marker: Optional[str] = None,
    cache: bool = True,
) -> Trace: ...
def diff(before: Trace, after: Trace) -> Dict[str, Any]: ...
def generate(path: Union[str, PathLike[str]], preset: str = "tiny") -> Dict[str, Any]: ...
