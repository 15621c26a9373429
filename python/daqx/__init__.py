"""daqx's Python tools: the partition model (partition.py, validated by params.py) and the benchmark helpers (bench.py)."""
