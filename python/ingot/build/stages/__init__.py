"""The stages of `ingot build` after resolution: staging, selection, packing, assembling, checking."""
