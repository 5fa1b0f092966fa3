"""Nothing: the executable runs black:patched_main."""
