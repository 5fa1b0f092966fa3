"""Writing an archive: collecting the standard library and packages, deciding what is reached, compiling, the build cache, the writer."""
