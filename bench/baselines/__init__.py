"""Baselines the benchmarks measure beside the product, never imported by it."""
