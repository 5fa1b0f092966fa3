"""The assemble stage: the output's checks (before any work: :func:`prepare_output`) and the
executable written atomically, launcher then archive (:func:`assemble`)."""

from __future__ import annotations

import os
from pathlib import Path

from ingot.build.interrupt import temporary_name
from ingot.build.resolve.launcher import is_ingot_file
from ingot.build.resolve.spec import Spec
from ingot.build.resolve.target import Say
from ingot.errors import BuildError

__all__ = ["assemble", "prepare_output"]


def prepare_output(spec: Spec) -> None:
    """Checks, before any work, that the build may write its output: not one of its inputs, not
    inside what it packs, not a directory, not someone else's file (unless ``force``); makes
    its directory if missing."""
    output = spec.plan.output
    _check_not_an_input(output, spec)
    if not output.parent.exists() and not output.parent.is_symlink():
        # `-o out/app` (or the default dist/): made, as PyInstaller makes dist/.
        try:
            output.parent.mkdir(parents=True)
        except OSError as error:
            raise BuildError(
                f"cannot make the output's directory {output.parent}: {error.strerror}",
                hint="choose another -o/--output",
            ) from None
    _check_output(output, spec.force)


def assemble(spec: Spec, head: bytes, archive: Path, say: Say) -> int:
    """Writes the launcher's bytes ``head`` followed by ``archive`` to the spec's output;
    returns its size."""
    launcher = spec.target.launcher
    say(
        f"writing {spec.plan.output}"
        + (f" (launcher {launcher}, {len(head)} bytes)" if head else "")
    )
    mode = 0o644 if spec.archive_only else 0o755
    return _write(spec.plan.output, [head, archive.read_bytes()], mode)


def _check_not_an_input(output: Path, spec: Spec) -> None:
    """The output must be none of the build's inputs, nor inside what the build packs: a copied
    directory, or a package directory of a project or a directory of packages (the next build
    would pack this one's output)."""
    target = output.resolve()
    inputs = [
        *(path for _, path in spec.plan.copies),
        *spec.plan.roots,
        *spec.plan.requirement_files,
        *([spec.plan.pip_project] if spec.plan.pip_project is not None else []),
    ]
    for given in inputs:
        source = given.resolve()
        if target == source:
            raise BuildError(
                f"the output {output} is an input of the build ({given}): it would be overwritten",
                hint="choose another -o/--output",
            )
        if not (source.is_dir() and target.is_relative_to(source)):
            continue
        copied = any(given == path for _, path in spec.plan.copies)
        package = next(
            (
                parent
                for parent in target.parents
                if parent.is_relative_to(source)
                and parent != source
                and (parent / "__init__.py").is_file()
            ),
            None,
        )
        if copied or package is not None:
            inside = source if copied else package
            raise BuildError(
                f"the output {output} is inside {inside}, which the build packs: "
                "the next build would pack this one's output too",
                hint="write it elsewhere, e.g. -o dist/NAME outside the package",
            )


def _check_output(output: Path, force: bool) -> None:
    if output.is_dir():
        raise BuildError(
            f"cannot write {output}: it is a directory", hint="give a file name with -o/--output"
        )
    if output.exists() and not force and not is_ingot_file(output):
        raise BuildError(
            f"{output} exists and is not an ingot output; not overwriting it",
            hint="choose another -o/--output, or pass --force",
        )
    if not output.parent.is_dir():
        raise BuildError(
            f"cannot write {output}: {output.parent} is not a directory",
            hint="choose another -o/--output",
        )
    # Tried now, not after minutes of work: a read-only or someone else's directory.
    probe = output.parent / temporary_name(output, "probe")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as error:
        raise BuildError(
            f"cannot write {output}: {error.strerror} (in {output.parent})",
            hint="choose another -o/--output, in a directory you can write",
        ) from None


def _write(output: Path, parts: list[bytes], mode: int) -> int:
    """Writes the concatenation of ``parts`` to ``output`` atomically (temp file + rename). The
    temporary file's name is chosen before it is made, so that an interrupt at any point leaves
    nothing behind; it holds this process's pid (:func:`ingot.build.interrupt.temporary_name`),
    so that a later build removes it if this one is killed. Everything goes through descriptors (the directory's, held open, and the
    file's: ``fchmod``, then a rename relative to the directory): another user who may write
    the directory cannot swap a link in between and have this user's permissions set on their
    file (issue 39)."""
    name = temporary_name(output, "tmp")
    try:
        directory = os.open(output.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise BuildError(
            f"cannot write {output}: {error.strerror or error} (in {output.parent})",
            hint="choose another -o/--output, in a directory you can write",
        ) from None
    try:
        fd = os.open(
            name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=directory,
        )
        with os.fdopen(fd, "wb") as file:
            for part in parts:
                file.write(part)
            file.flush()
            os.fchmod(file.fileno(), mode)
            os.fsync(file.fileno())
        os.replace(name, output.name, src_dir_fd=directory, dst_dir_fd=directory)
    except OSError as error:
        _remove(name, directory)
        raise BuildError(
            f"cannot write {output}: {error.strerror or error}",
            hint="free some space, or choose another -o/--output",
        ) from None
    except BaseException:
        _remove(name, directory)
        raise
    finally:
        os.close(directory)
    return sum(map(len, parts))


def _remove(name: str, directory: int) -> None:
    try:
        os.unlink(name, dir_fd=directory)
    except FileNotFoundError:
        pass
