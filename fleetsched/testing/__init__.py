"""Helpers for tests, benchmarks and local trials; the operator, estimator and webhook never use them."""
