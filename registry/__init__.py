"""The closed registry: every family, label and label value the exporter may emit.

Plain frozen data; it imports nothing from the exporter.
"""

from registry.families import BUILTIN, BY_NAME, FAMILIES, META, TAIL_FAMILIES, extended, families_of
from registry.model import Family, MetricType, Registry, RegistryError
from registry.values import SIGNALS, VERSION

__all__ = [
    "BUILTIN",
    "BY_NAME",
    "FAMILIES",
    "META",
    "SIGNALS",
    "TAIL_FAMILIES",
    "VERSION",
    "Family",
    "MetricType",
    "Registry",
    "RegistryError",
    "extended",
    "families_of",
]
