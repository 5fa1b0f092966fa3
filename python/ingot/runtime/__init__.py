"""Runtimes: CPython and its libraries built from source with zig for glibc 2.17, kept in a store,
and ``ingot build`` run under one.

- :mod:`ingot.runtime.store`: where runtimes live, finding, listing, removing them; building one
- :mod:`ingot.runtime.recipes`: how each library and CPython itself is configured and built
- :mod:`ingot.runtime.toolchain`: zig as the C compiler and linker for the target glibc
"""
