"""jitscan quickstart: a prefix sum on the default device, next to NumPy's."""

import numpy as np

import jitscan
from jitscan import backends

rng = np.random.default_rng(2026)
x = rng.integers(-100, 100, size=1_000_003, dtype=np.int32)

b = backends.default()
info = b.device_info(b.queue_of(None))
stats: dict = {}
y = jitscan.cumsum(x, stats=stats)  # variant "fallback": single pass, safe on every device
ref = np.cumsum(x, dtype=np.int32)

print(f"backend : {b.name}")
print(f"device  : {info.name}")
print("variant : fallback (decoupled look-back with decoupled fallback)")
print(f"input   : {x[:6]} ... ({x.size} int32)")
print(f"jitscan : {y[:6]} ... {y[-1]}")
print(f"numpy   : {ref[:6]} ... {ref[-1]}")
print(f"equal   : {np.array_equal(y, ref)}")
print(
    f"look-back: {stats['tiles']} tiles, {stats['lookback_steps']} steps, {stats['spins']} spins, "
    f"{stats['fallbacks']} fallbacks"
)
m = jitscan.Monoid("ffill", combine="b != 0 ? b : a", identity=0)
gaps = np.array([0, 3, 0, 0, 7, 0, 2, 0], dtype=np.int32)
print(f"ffill   : {gaps} -> {jitscan.scan(gaps, op=m)}")
