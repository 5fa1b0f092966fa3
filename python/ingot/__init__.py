"""ingot: cast a Python application into one executable that imports everything from memory.

This package holds the importer (usable in any Python: ``ingot.install("app.ingot")``) and the
tools that write archives (``ingot pack``).
"""

from ingot._ingot import ArchiveError, ArchiveWriter, FORMAT_VERSION, elf_dynamic

__all__ = ["ArchiveError", "ArchiveWriter", "FORMAT_VERSION", "elf_dynamic"]
