"""orpycamcp-exporter: a Prometheus exporter for what piles up in silence on the platform."""

from registry import VERSION as __version__

__all__ = ["__version__"]
