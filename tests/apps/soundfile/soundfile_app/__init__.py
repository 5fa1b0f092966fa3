"""soundfile: its libsndfile (bundled in `_soundfile_data`, only in the manylinux_2_28 wheel: the
build takes that wheel over the pure one pip takes for glibc 2.17, and raises the floor) is
loaded by path by cffi's `ffi.dlopen`. A sine tone written as WAV and FLAC into the directory
given, and read back."""

import json
import os
import sys


def main():
    import numpy
    import soundfile

    directory = sys.argv[1]
    rate = 8000
    tone = (0.5 * numpy.sin(2 * numpy.pi * 440 * numpy.arange(rate) / rate)).astype(numpy.float32)
    seen = {"libsndfile": soundfile.__libsndfile_version__}
    for kind in ("wav", "flac"):
        path = os.path.join(directory, f"tone.{kind}")
        soundfile.write(path, tone, rate, subtype="PCM_16")
        data, read_rate = soundfile.read(path, dtype="float32")
        info = soundfile.info(path)
        seen[kind] = {
            "frames": len(data),
            "rate": read_rate,
            "format": info.format,
            "max_error": round(float(numpy.abs(data - tone).max()), 4),
        }
    print(json.dumps(seen))
