"""deltabench: synthetic Delta logs and the benchmark harness that measures engines on them."""
