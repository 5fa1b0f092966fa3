"""Code that runs inside an executable (and in a normal Python that imports from an archive).

The launcher compiles :mod:`ingot.boot.archive_paths` into its boot code; the importer runs
:mod:`ingot.boot.support` (its resource readers, embedded in ``_ingot`` as a fallback). Both are
imported at start-up: they import only what a ``python -I -S`` start already has.
"""
