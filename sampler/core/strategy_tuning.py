"""The thresholds that choose how sampler.core.strategies draws a row (never what it
draws: every method gives the same exact distribution, see strategies.py). Read at call
time (`tuning.HUB_DEGREE`), so a test can force every method on small rows."""

HUB_DEGREE = 4096        # rows with more edges than this use the O(k)-per-query methods
UNIFORM_DRAW_FACTOR = 8  # RANDOM_UNIFORM draws (not keys) from rows of 8 k edges or more
FLOYD_MAX_K = 16         # ... and for k up to this, Floyd's algorithm (O(k^2) per query)
MIN_ACCEPTANCE = 0.25    # ... if a draw is always new with at least this probability
MAX_PAIRS = 1 << 16      # (query, edge) pairs per chunk: cache-sized temporaries are fastest
