"""``ingot build`` and ``ingot pack``: from a user's project to one executable.

The pipeline (:mod:`ingot.build.pipeline`) resolves what to build into one spec, then runs its
stages: stage (pip installs the dependencies), select (what the application can reach, and which
packages need real files), pack (the archive), assemble (launcher + archive) and check.
"""
