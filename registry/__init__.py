"""The closed registry: every family, label and label value the exporter may emit.

Plain frozen data; it imports nothing from the exporter.
"""

from registry.families import BY_NAME, FAMILIES, META, PROCESS_FAMILIES, families_of
from registry.model import Family, MetricType, RegistryError
from registry.values import SIGNALS, VERSION

__all__ = [
    "BY_NAME",
    "FAMILIES",
    "META",
    "PROCESS_FAMILIES",
    "SIGNALS",
    "VERSION",
    "Family",
    "MetricType",
    "RegistryError",
    "families_of",
]
