"""Benchmarks, run by hand (bench/README.md); a package so its scripts import each other as `bench.<name>`."""
