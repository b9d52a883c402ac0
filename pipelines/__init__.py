"""The commands (setup.py's console scripts) and the benchmarks behind them."""
# Imported first, before any command imports numpy: sampler/numpy_cpu.py.
import sampler  # noqa: F401
