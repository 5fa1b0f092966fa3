"""Reading code: imports in source order, file reads next to modules, regular expressions, the per-package file policy."""
