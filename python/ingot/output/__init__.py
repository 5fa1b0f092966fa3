"""What the command line prints of what it reads: ``ingot inspect`` (:mod:`.inspect_text`) and
``ingot cache`` (:mod:`.cache_text`). The command line (:mod:`ingot.cli`) parses arguments and
calls these; the build's own report is :mod:`ingot.build.report`."""
