# The launcher's Python half: compiled by build.rs with the embedded interpreter, unmarshalled and
# run by the launcher after the interpreter's main initialization, in a namespace of its own (not
# a module in sys.modules). The launcher calls its functions. build.rs compiles this file followed
# by python/ingot/boot/archive_paths.py (serve_archive_paths, also ingot.serve_archive_paths).

import sys


def seal_import_system(finder, filesystem_imports=True):
    """Puts the archive's finder first on sys.meta_path and its path hook first in
    sys.path_hooks, and makes the archive the one sys.path entry (for pkgutil & co).

    With ``filesystem_imports`` (the default), importlib's PathFinder stays on sys.meta_path
    after the archive's finder and the standard path hooks stay after the archive's, so that
    modules are imported from directories the application puts on sys.path, as under python
    (sys.path starts as just the archive: nothing on disk is searched until the application
    adds a directory). Without it the archive is the only source of modules."""
    path_finders = [
        entry for entry in sys.meta_path if getattr(entry, "__name__", None) == "PathFinder"
    ]
    sys.meta_path[:] = [entry for entry in sys.meta_path if entry not in path_finders]
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    sys.meta_path.insert(0, finder)
    hooks = [finder.path_hook]
    if filesystem_imports:
        sys.meta_path.extend(path_finders)
        hooks += [hook for hook in sys.path_hooks if hook is not finder.path_hook]
        if not any(
            getattr(hook, "__name__", None) == "path_hook_for_FileFinder" for hook in hooks
        ):  # not where CPython 3.10-3.15 put it: add one
            import _frozen_importlib_external as external

            hooks.append(external.FileFinder.path_hook(*external._get_supported_file_loaders()))
    sys.path_hooks[:] = hooks
    sys.path_importer_cache.clear()
    sys.path[:] = [finder.path]


def run_module(name):
    """``python -m name``, as ``runpy._run_module_as_main(name, alter_argv=False)`` does it, without
    importing runpy and the two dozen modules it needs (about 2 ms of every start)."""
    spec = _main_spec(name)
    code = spec.loader.get_code(spec.name)
    if code is None:
        sys.exit(f"{sys.executable}: No code object available for {spec.name}")
    namespace = sys.modules["__main__"].__dict__
    namespace.update(
        __name__="__main__",
        __file__=spec.origin,
        __cached__=None,
        __doc__=None,
        __loader__=spec.loader,
        __package__=spec.parent,
        __spec__=spec,
    )
    exec(code, namespace)


def _main_spec(name):
    """The spec of the module ``-m name`` runs: ``name``, or ``name.__main__`` for a package."""
    import _frozen_importlib as bootstrap

    package = name.rpartition(".")[0]
    path = None
    if package:
        __import__(package)
        path = getattr(sys.modules[package], "__path__", None)
    spec = bootstrap._find_spec(name, path)
    if spec is None:
        sys.exit(f"{sys.executable}: No module named {name}")
    if spec.submodule_search_locations is not None:
        if name == "__main__" or name.endswith(".__main__"):
            sys.exit(f"{sys.executable}: Cannot use package as __main__ module")
        __import__(name)
        return _main_spec(name + ".__main__")
    return spec


def mark_forked_children(variable, renew_proof, current_value, executable):
    """A forked child makes its own proof for the processes it starts (selfcall.rs: its pid is
    another, its secret a new one) and names itself in the variable they get.

    A forked child that then replaces itself with this executable (``os.fork()`` and
    ``os.execve(sys.executable, args, env)``: loky's workers before joblib 1.5) is a process its
    parent started: the exec gives it the variable the child inherited, which names the parent,
    so that it is a self-call of the parent's (the variable is added to an ``env`` of the
    application's making, as for spawns). A process that was not forked keeps its own variable
    across an exec of the executable: the launcher reads that as a restart, never Python."""
    import posix  # built in and imported already, unlike os; putenv leaves os.environ alone
    import sys

    inherited = []  # in a forked child: the variable naming its parent

    def mark():
        inherited[:] = [current_value()]
        posix.putenv(variable, renew_proof())

    posix.register_at_fork(after_in_child=mark)
    targets = (executable, executable.encode("utf-8", "surrogateescape"))

    def names_executable(path):
        fspath = getattr(path, "__fspath__", None)
        return (fspath() if fspath is not None else path) in targets

    def value_for_exec():
        return inherited[0] if inherited and inherited[0] else current_value()

    execv, execve = posix.execv, posix.execve

    def marked_execv(path, argv):
        if not inherited or not names_executable(path):
            return execv(path, argv)
        own = current_value()
        posix.putenv(variable, value_for_exec())
        try:
            return execv(path, argv)
        finally:  # (the exec failed)
            posix.putenv(variable, own)

    def marked_execve(path, argv, env):
        if names_executable(path) and hasattr(env, "keys"):
            env = dict(env)
            key = variable.encode() if env and isinstance(next(iter(env)), bytes) else variable
            value = value_for_exec()
            env[key] = value.encode() if isinstance(key, bytes) else value
        return execve(path, argv, env)

    marked_execv.__name__, marked_execve.__name__ = "execv", "execve"
    for name, function in (("execv", marked_execv), ("execve", marked_execve)):
        setattr(posix, name, function)
        if "os" in sys.modules:
            setattr(sys.modules["os"], name, function)


def prepare_spawns(variable, drain_proof, current_value):
    """Before each start of a process (`os.fork`, and `_posixsubprocess.fork_exec`, which
    `subprocess`, multiprocessing and loky use): the connections children's checks left in this
    process's listener are closed (its queue would fill up), and a start with an environment of
    the application's making (`env=`) gets the variable that proves the application started it
    (the launcher takes it out before the application sees it), as a child that inherits the
    environment does: this executable, or a shell that will start it (invoke and other task
    runners give the shell a copy of `os.environ`, which lacks the variable). The
    module is wrapped when first used, not imported here: an application that starts no process
    pays nothing, and one whose archive lacks it fails as it would have."""
    import posix
    import sys

    posix.register_at_fork(before=drain_proof)
    name = "_posixsubprocess"
    prefix = variable.encode() + b"="

    def wrap(module):
        fork_exec = module.fork_exec

        def drained_fork_exec(*args):
            drain_proof()
            environment = args[5] if len(args) > 5 else None
            if environment is not None:
                ours = prefix + current_value().encode()
                args = (
                    *args[:5],
                    [e for e in environment if not e.startswith(prefix)] + [ours],
                    *args[6:],
                )
            return fork_exec(*args)

        module.fork_exec = drained_fork_exec

    # os.posix_spawn, which subprocess takes instead on Python 3.13 when it can (glibc 2.34+).
    for spawn in ("posix_spawn", "posix_spawnp"):
        original = getattr(posix, spawn, None)
        if original is not None:
            drained = _drained_spawn(original, drain_proof, variable, current_value)
            setattr(posix, spawn, drained)
            if "os" in sys.modules:
                setattr(sys.modules["os"], spawn, drained)

    if name in sys.modules:
        wrap(sys.modules[name])
        return
    # Only where it can be imported: asked of the finders that need no file system (built-in,
    # frozen, the archive's; importlib's path finder, which would stat sys.path, is not asked).
    if not any(
        getattr(finder, "__name__", type(finder).__name__) != "PathFinder"  # a class, or not
        and finder.find_spec(name, None) is not None
        for finder in sys.meta_path
        if hasattr(finder, "find_spec")
    ):
        return
    # Stands for the module in sys.modules until one of its functions is asked for (a module's
    # own __getattr__, PEP 562: no class to make at every start). Its dunder attributes stay
    # those of an empty module (no __spec__), so that code walking sys.modules loads nothing.
    pending = type(sys)(name)

    def load(attribute):
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        if sys.modules.get(name) is pending:
            del sys.modules[name]
        try:
            module = __import__(name)
        finally:
            sys.modules.setdefault(name, pending)
        if getattr(module.fork_exec, "__name__", "") != "drained_fork_exec":
            wrap(module)
        vars(pending).update(vars(module))
        del pending.__getattr__
        return getattr(module, attribute)

    pending.__getattr__ = load
    sys.modules[name] = pending


def _drained_spawn(original, drain_proof, variable, current_value):
    """``os.posix_spawn`` (or ``posix_spawnp``) that drains the listener first, and gives a start
    with an environment of the application's making the variable (:func:`prepare_spawns`)."""

    def spawn(path, argv, env, *args, **kwargs):
        drain_proof()
        if env is not None:
            env = dict(env)
            key = variable.encode() if env and isinstance(next(iter(env)), bytes) else variable
            value = current_value()
            env[key] = value.encode() if isinstance(key, bytes) else value
        return original(path, argv, env, *args, **kwargs)

    spawn.__name__ = original.__name__
    return spawn


def module_is_missing(name):
    """True if `python -m name` would find no module: neither in the archive nor (through the
    path finder) on sys.path. False when unsure (a parent package fails to import): runpy then
    says what is wrong."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is None
    except Exception:
        return False


def run_frozen_fork(argv):
    """``EXE --multiprocessing-fork name=value ...``, as multiprocessing.freeze_support() does."""
    kwds = {}
    for arg in argv[2:]:
        name, value = arg.split("=")
        kwds[name] = None if value == "None" else int(value)
    from multiprocessing.spawn import spawn_main

    spawn_main(**kwds)


def shutdown():
    """What Py_FinalizeEx does first, before the launcher finalizes live objects and flushes the
    standard streams: wait for non-daemon threads, run atexit handlers."""
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:  # as Py_FinalizeEx: reported, then on with the exit
            import traceback

            print("Exception ignored on threading shutdown:", file=sys.stderr)
            traceback.print_exc()
    import atexit

    atexit._run_exitfuncs()
