"""Speed of jitscan's variants, of the calls a user makes, and of peer libraries.

Used by ``python -m jitscan bench`` (see :mod:`jitscan.__main__`), by the asv suite in
``benchmarks/`` and by the experiments in ``experiments/``.

Three figures, each for jitscan and its peers (docs/benchmarks.md):

- **device time**: CUDA events or OpenCL profiling markers around device work only
  (a spin kernel keeps the device busy while the host queues the run); NumPy, which
  has no device, on the host clock. The throughput tables and the paper's table.
- **the isolated call**: one Python call as a user writes it (``jitscan.cumsum(x,
  out=y)``, a prepared scan, every other call form: segmented, tuple values, along an
  axis, ...; ``torch.cumsum``, CUB, ...) between a mark before it and one after it on an
  idle device, with the host time of the call itself.
- **the pipelined rate**: many calls back to back, one synchronization, per call.

On a CPU device the report adds NumPy to NumPy: jitscan's calls on NumPy arrays beside
``numpy.cumsum``, ``np.copyto`` and NumPy's segmented sum, host-timed (``host``).

The summary statistics follow the paper's results table (Smith, Levien & Owens, SPAA
2025): the harmonic mean of elements per second over the timed runs of one size (``n``
over the mean run time), the ratios fallback/memcpy and fallback/RTS, and the look-back
counters of instrumented runs (spins and look-back length per workgroup, fallbacks
initiated and successful insertions per scan).

One concept per module: ``results`` (what was measured), ``inputs`` (the data),
``timing`` (a timer per backend), ``cases`` (jitscan's variants as prepared scans),
``peers`` (other libraries, per backend), ``cub`` (CUB through ``cuda.compute``),
``calls`` (the per-call figures), ``forms`` (every public call form and its
peers, rows of the per-call table), ``operators`` (the Python operators timed),
``host`` (NumPy to NumPy on a CPU), ``schedule`` (presets and the steps of a run),
``run`` (a whole run), ``tables``, ``files`` and ``plots`` (the report's outputs).
"""

from __future__ import annotations

from .calls import (
    CUMSUM,
    CUMSUM_NEW,
    JITSCAN_CALLS,
    PIPELINE_CALLS,
    PREPARED,
    Contender,
    contenders,
    measure_calls,
)
from .cases import ALGORITHM, VARIANTS, Case, average_counters, measure_variant, prepare
from .cub import cub_call
from .files import CSV_FIELDS, write_csv, write_json
from .forms import FORMS, REFERENCES, SEGMENT_MEAN, form_calls, form_names
from .host import measure_host_calls, numpy_segmented
from .inputs import ROTATE_BYTES, SEGMENT_LENGTH, head_flags, random_values
from .peers import PEERS, BackendPeers, Peer, baseline, measure_numpy, measure_peers, peer_functions
from .plots import plot_blocking, plot_latency, plot_throughput
from .results import CALL_FIGURES, Report, Result, Unsupported, log2_label, summary, versions
from .run import run
from .schedule import BLOCKING_RATES, LATENCY_DTYPES, PAPER_SIZE, Plan, Preset, Task, preset, table_size
from .tables import (
    blocking_table,
    latency_table,
    markdown,
    numpy_table,
    paper_table,
    table,
    throughput_table,
)
from .timing import TIMERS, CudaTimer, OpenCLTimer, Timer, interleaved

__all__ = [
    "ALGORITHM",
    "BLOCKING_RATES",
    "CALL_FIGURES",
    "CSV_FIELDS",
    "CUMSUM",
    "CUMSUM_NEW",
    "FORMS",
    "JITSCAN_CALLS",
    "LATENCY_DTYPES",
    "PAPER_SIZE",
    "PEERS",
    "PIPELINE_CALLS",
    "PREPARED",
    "REFERENCES",
    "ROTATE_BYTES",
    "SEGMENT_LENGTH",
    "SEGMENT_MEAN",
    "TIMERS",
    "VARIANTS",
    "BackendPeers",
    "Case",
    "Contender",
    "CudaTimer",
    "OpenCLTimer",
    "Peer",
    "Plan",
    "Preset",
    "Report",
    "Result",
    "Task",
    "Timer",
    "Unsupported",
    "average_counters",
    "baseline",
    "blocking_table",
    "contenders",
    "cub_call",
    "form_calls",
    "form_names",
    "head_flags",
    "interleaved",
    "latency_table",
    "log2_label",
    "markdown",
    "measure_calls",
    "measure_host_calls",
    "measure_numpy",
    "measure_peers",
    "measure_variant",
    "numpy_segmented",
    "numpy_table",
    "paper_table",
    "peer_functions",
    "plot_blocking",
    "plot_latency",
    "plot_throughput",
    "prepare",
    "preset",
    "random_values",
    "run",
    "summary",
    "table",
    "table_size",
    "throughput_table",
    "versions",
    "write_csv",
    "write_json",
]
