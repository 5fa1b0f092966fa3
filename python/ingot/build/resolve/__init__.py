"""Resolution: what a build is asked (settings, the input, the project, the target, the launcher), read once into a Spec."""
