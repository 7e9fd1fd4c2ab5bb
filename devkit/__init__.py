"""Tooling for the tests and the benchmarks (not shipped): throwaway servers,
a private Docker engine and the images built for it."""
