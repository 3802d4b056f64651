"""asv (airspeed velocity) benchmarks of jitscan; see docs/benchmarks.md."""
