//! Self-calls: a process the application started from its own executable (`sys.executable`, by
//! `subprocess`, `multiprocessing`, joblib's loky, a reloader, `os.execv`) reads its command line
//! as python would; any other start of the executable runs the application, whatever its
//! arguments. See README.md, "Self-calls", for the rules and why they are safe.
//!
//! Whether the parent is the application is decided from what the parent process is, not from
//! the command line: the parent's `/proc/<ppid>/exe` is the same file as this process's
//! executable, or, where /proc cannot tell, the variable [`PARENT_VARIABLE`] that every process
//! of the executable sets for its children names the parent's pid. A person's shell, a script or
//! `sudo` is the parent of what they start, so none of them gets Python mode; a set-user-ID or
//! file-capability start never does.
//!
//! The same variable carries how deep the chain of self-calls is, so that an application that
//! starts itself unconditionally stops at [`MAX_DEPTH`] instead of filling the machine with
//! processes; where a parent dropped the environment, the depth is counted on /proc instead.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The environment variable a process of the executable sets for its children:
/// `<pid>:<depth>:<uid>`, its own pid, how many self-calls deep it is (0 when a person, a script
/// or another program started it) and its user id.
pub const PARENT_VARIABLE: &str = "INGOT_PARENT";

/// The deepest chain of self-calls allowed: a process deeper than this exits with an error.
/// multiprocessing's and loky's workers are 1 deep, their helpers (resource tracker,
/// forkserver) 1 or 2; a reloader's child restarted by it stays at 1.
pub const MAX_DEPTH: u32 = 8;

/// What this process is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Run the application with this `sys.argv`.
    App { argv: Vec<OsString> },
    /// Read the command line as python does (`-c`, `-m`, a script, `-`, interpreter options).
    Python,
    /// `EXE --multiprocessing-fork name=value...`, multiprocessing's form for frozen
    /// executables (`multiprocessing.freeze_support()`).
    FrozenFork,
}

/// How the application started this process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Started {
    /// As a child: its parent process runs this executable, as this user.
    Child,
    /// The application replaced itself with it (`os.execv(sys.executable, ...)`): same pid.
    Replaced,
}

/// A self-call: started by the application (or by a self-call of it) from the same executable.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelfCall {
    pub started: Started,
    /// 1 for a process the application started, 2 for one that process started, ...
    pub depth: u32,
}

/// What [`PARENT_VARIABLE`] says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Variable {
    pub pid: u32,
    pub depth: u32,
    pub uid: u32,
}

/// Where the facts about the process come from (the real ones in [`ThisProcess`]; tests give
/// others).
pub trait Process {
    fn pid(&self) -> u32;
    fn parent(&self) -> u32;
    /// The real and the effective user id.
    fn uids(&self) -> (u32, u32);
    /// [`PARENT_VARIABLE`], if it is set and well formed.
    fn variable(&self) -> Option<Variable>;
    /// Whether process `pid` runs the executable this process runs, as which (effective) user:
    /// `None` when that cannot be told (no /proc, no permission, the process is gone).
    fn runs_this_executable(&self, pid: u32) -> Option<(bool, u32)>;
    /// The parent of process `pid`, from /proc.
    fn parent_of(&self, pid: u32) -> Option<u32>;
    /// A set-user-ID, set-group-ID or file-capability start (`AT_SECURE`).
    fn secure(&self) -> bool;
}

/// Was this process started by the application? `None` for a start by anything else.
///
/// A child is a self-call when its parent process runs the same executable file as the same
/// user (both of this process's user ids); where /proc cannot tell, when the variable names the
/// parent and this user. The variable alone never makes a child a self-call where /proc can
/// tell, so a variable that leaked (a hook script the app ran, `sudo -E`) or was forged does
/// nothing. A process that replaced itself is recognized by the variable (its own pid), and only
/// restarts the application (see [`read_restart`]): the variable is all there is to tell.
pub fn self_call(process: &dyn Process) -> Option<SelfCall> {
    if process.secure() {
        return None;
    }
    let (real, effective) = process.uids();
    let variable = process.variable().filter(|variable| real == effective && variable.uid == real);
    let (pid, parent) = (process.pid(), process.parent());
    if let Some(variable) = variable.filter(|variable| variable.pid == pid) {
        return Some(SelfCall {
            started: Started::Replaced,
            depth: variable.depth.saturating_add(1),
        });
    }
    let is_app = |pid: u32| {
        process
            .runs_this_executable(pid)
            .map(|(same, owner)| same && owner == real && owner == effective)
    };
    let parent_is_app = match is_app(parent) {
        Some(answer) => answer,
        None => variable.is_some_and(|variable| variable.pid == parent),
    };
    if !parent_is_app {
        return None;
    }
    let depth = match variable {
        Some(variable) if variable.pid == parent => variable.depth.saturating_add(1),
        // The parent started this process with an environment of its own making: count the
        // ancestors that run this executable instead.
        _ => {
            let mut depth = 1;
            let mut ancestor = parent;
            while depth <= MAX_DEPTH {
                match process.parent_of(ancestor) {
                    Some(next) if next > 1 && is_app(next) == Some(true) => {
                        depth += 1;
                        ancestor = next;
                    }
                    _ => break,
                }
            }
            depth
        }
    };
    Some(SelfCall { started: Started::Child, depth })
}

/// The value of [`PARENT_VARIABLE`] for the children of this process.
pub fn variable_value(variable: Variable) -> String {
    format!("{}:{}:{}", variable.pid, variable.depth, variable.uid)
}

fn parse_variable(value: &OsStr) -> Option<Variable> {
    let text = std::str::from_utf8(value.as_bytes()).ok()?;
    let mut fields = text.split(':').map(str::parse::<u32>);
    let (pid, depth, uid) = (fields.next()?.ok()?, fields.next()?.ok()?, fields.next()?.ok()?);
    fields.next().is_none().then_some(Variable { pid, depth, uid })
}

/// This process, as the kernel describes it.
pub struct ThisProcess {
    /// The executable's device and inode.
    identity: Option<(u64, u64)>,
}

impl ThisProcess {
    pub fn new(exe: &Path) -> ThisProcess {
        // The file this process runs, even if `exe` was replaced since.
        let identity = std::fs::metadata("/proc/self/exe")
            .or_else(|_| std::fs::metadata(exe))
            .ok()
            .map(|metadata| (metadata.dev(), metadata.ino()));
        ThisProcess { identity }
    }
}

impl Process for ThisProcess {
    fn pid(&self) -> u32 {
        std::process::id()
    }

    fn parent(&self) -> u32 {
        // SAFETY: getppid cannot fail.
        unsafe { libc::getppid() as u32 }
    }

    fn uids(&self) -> (u32, u32) {
        // SAFETY: getuid and geteuid cannot fail.
        unsafe { (libc::getuid(), libc::geteuid()) }
    }

    fn variable(&self) -> Option<Variable> {
        parse_variable(&std::env::var_os(PARENT_VARIABLE)?)
    }

    fn runs_this_executable(&self, pid: u32) -> Option<(bool, u32)> {
        let identity = self.identity?;
        // The link resolves to the file the process runs even if it was deleted or replaced.
        let metadata = std::fs::metadata(format!("/proc/{pid}/exe")).ok()?;
        // /proc/<pid> belongs to the process's effective user.
        let owner = std::fs::metadata(format!("/proc/{pid}")).ok()?.uid();
        Some(((metadata.dev(), metadata.ino()) == identity, owner))
    }

    fn parent_of(&self, pid: u32) -> Option<u32> {
        let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid ...`: comm may hold spaces and parentheses; the last `)` ends it.
        let end = stat.iter().rposition(|&byte| byte == b')')?;
        let rest = std::str::from_utf8(&stat[end + 1..]).ok()?;
        rest.split_ascii_whitespace().nth(1)?.parse().ok()
    }

    fn secure(&self) -> bool {
        // SAFETY: getauxval only reads the auxiliary vector.
        unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
    }
}

/// The options CPython 3.10-3.13 accept, without and with a value (`Modules/main.c`,
/// `Python/getopt.c`): `-P` exists since 3.11 (CPython itself rejects it on 3.10).
const FLAGS: &[u8] = b"bBdEhiIOPqsSuvVx?";
const FLAGS_WITH_VALUE: &[u8] = b"cmWX";
const LONG_OPTIONS: &[&str] = &[
    "--help",
    "--version",
    "--check-hash-based-pycs",
    "--help-env",
    "--help-xoptions",
    "--help-all",
];

/// Whether `arg` starts a python command line: an option python accepts (a cluster of flags
/// such as `-IS`, `-c`, `-m`, `-W`, `-X`, with or without their value attached, or a long option).
fn is_python_option(arg: &[u8]) -> bool {
    if arg.starts_with(b"--") {
        let name = arg.split(|&byte| byte == b'=').next().unwrap_or(arg);
        return LONG_OPTIONS.iter().any(|option| option.as_bytes() == name);
    }
    let Some(cluster) = arg.strip_prefix(b"-") else {
        return false;
    };
    if cluster.is_empty() {
        return false;
    }
    for &flag in cluster {
        if FLAGS_WITH_VALUE.contains(&flag) {
            return true; // the rest of the cluster, or the next argument, is its value
        }
        if !FLAGS.contains(&flag) {
            return false;
        }
    }
    true
}

/// How a self-call's command line is read (`argv[0]` is the program), in order:
///
/// 1. no arguments: the application (a restart with no arguments);
/// 2. `--multiprocessing-fork ...`: multiprocessing's frozen form;
/// 3. the first argument names this executable (a path to it, or a command name `PATH` finds):
///    the application, with `sys.argv` from there (`[sys.executable, sys.argv[0], *args]`);
/// 4. `-` or an option python accepts (`-c`, `-m`, `-I`, `-W x`, `--version`, ...): Python;
/// 5. another option (`--port`): the application, with the whole command line;
/// 6. an existing file or directory: Python runs it as a script (or a `__main__.py` directory
///    or zip);
/// 7. anything else: the application, with the whole command line
///    (`[sys.executable, *app_args]`).
pub fn read_command_line(
    argv: &[OsString],
    names_this_executable: impl Fn(&OsStr) -> bool,
) -> Mode {
    let Some(first) = argv.get(1) else {
        return Mode::App { argv: argv.to_vec() };
    };
    let bytes = first.as_bytes();
    if bytes == b"--multiprocessing-fork" {
        return Mode::FrozenFork;
    }
    if !bytes.starts_with(b"-") && names_this_executable(first) {
        return Mode::App { argv: argv[1..].to_vec() };
    }
    if bytes == b"-" || is_python_option(bytes) {
        return Mode::Python;
    }
    if bytes.starts_with(b"-") {
        return Mode::App { argv: argv.to_vec() };
    }
    if std::fs::metadata(Path::new(first)).is_ok() {
        return Mode::Python;
    }
    Mode::App { argv: argv.to_vec() }
}

/// The module of `-m MODULE` in a python command line, read as CPython's getopt reads it
/// (`-mjson.tool`, `-I -m x`, `-Im x`; `-c` or a script before it means there is none).
pub fn python_module(argv: &[OsString]) -> Option<String> {
    let mut args = argv.iter().skip(1).map(|arg| arg.as_bytes());
    while let Some(arg) = args.next() {
        if arg == b"--" || !arg.starts_with(b"-") || arg == b"-" {
            return None;
        }
        if arg.starts_with(b"--") {
            if arg == b"--check-hash-based-pycs" {
                args.next();
            }
            continue;
        }
        let cluster = &arg[1..];
        for (position, &flag) in cluster.iter().enumerate() {
            if FLAGS_WITH_VALUE.contains(&flag) {
                let attached = &cluster[position + 1..];
                let value = if attached.is_empty() { args.next()? } else { attached };
                match flag {
                    b'm' => return String::from_utf8(value.to_vec()).ok(),
                    b'c' => return None,
                    _ => break,
                }
            }
        }
    }
    None
}

/// How the command line of a process that replaced itself is read: the application, with
/// `sys.argv` from the first argument on if that names this executable
/// (`os.execv(sys.executable, [sys.executable, *sys.argv])`), else with the whole command line.
/// Never Python: the variable that tells such a process from a fresh start can be set by anyone
/// who sets its environment.
pub fn read_restart(argv: &[OsString], names_this_executable: impl Fn(&OsStr) -> bool) -> Mode {
    match argv.get(1) {
        Some(first) if !first.as_bytes().starts_with(b"-") && names_this_executable(first) => {
            Mode::App { argv: argv[1..].to_vec() }
        }
        _ => Mode::App { argv: argv.to_vec() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake {
        pid: u32,
        parent: u32,
        uids: (u32, u32),
        variable: Option<Variable>,
        /// (pid, parent, runs the executable, owner); pids not listed: unknown (no /proc).
        tree: Vec<(u32, u32, bool, u32)>,
        secure: bool,
    }

    impl Process for Fake {
        fn pid(&self) -> u32 {
            self.pid
        }
        fn parent(&self) -> u32 {
            self.parent
        }
        fn uids(&self) -> (u32, u32) {
            self.uids
        }
        fn variable(&self) -> Option<Variable> {
            self.variable
        }
        fn runs_this_executable(&self, pid: u32) -> Option<(bool, u32)> {
            self.tree.iter().find(|entry| entry.0 == pid).map(|entry| (entry.2, entry.3))
        }
        fn parent_of(&self, pid: u32) -> Option<u32> {
            self.tree.iter().find(|entry| entry.0 == pid).map(|entry| entry.1)
        }
        fn secure(&self) -> bool {
            self.secure
        }
    }

    const USER: u32 = 1000;

    fn variable(pid: u32, depth: u32) -> Option<Variable> {
        Some(Variable { pid, depth, uid: USER })
    }

    /// Process 500 of USER, child of `parent`; `tree` entries are (pid, parent, runs the app).
    fn fake(parent: u32, variable: Option<Variable>, tree: &[(u32, u32, bool)]) -> Fake {
        let tree = tree.iter().map(|&(pid, parent, app)| (pid, parent, app, USER)).collect();
        Fake { pid: 500, parent, uids: (USER, USER), variable, tree, secure: false }
    }

    fn child(depth: u32) -> Option<SelfCall> {
        Some(SelfCall { started: Started::Child, depth })
    }

    #[test]
    fn a_shell_or_sudo_parent_is_not_a_self_call() {
        // bash (100) started the executable; the variable leaked from an app further up.
        assert_eq!(
            self_call(&fake(100, variable(50, 0), &[(100, 50, false), (50, 1, true)])),
            None
        );
        // sudo kept the variable (sudo -E) and is the parent.
        assert_eq!(self_call(&fake(100, variable(100, 0), &[(100, 50, false)])), None);
        assert_eq!(self_call(&fake(100, None, &[(100, 1, false)])), None);
    }

    #[test]
    fn the_app_as_parent_is_a_self_call_with_its_depth_plus_one() {
        assert_eq!(self_call(&fake(100, variable(100, 0), &[(100, 1, true)])), child(1));
        assert_eq!(self_call(&fake(100, variable(100, 3), &[(100, 1, true)])), child(4));
    }

    #[test]
    fn the_app_of_another_user_as_parent_is_not_a_self_call() {
        // A sudo that does not fork: the app (user 1000) is the parent of a root process.
        let mut process = fake(100, None, &[(100, 1, true)]);
        process.uids = (0, 0);
        assert_eq!(self_call(&process), None);
        process.uids = (USER, 0);
        assert_eq!(self_call(&process), None);
        // Without /proc, the variable must name this user.
        let mut process = fake(100, variable(100, 0), &[]);
        process.uids = (0, 0);
        assert_eq!(self_call(&process), None);
    }

    #[test]
    fn without_the_variable_the_depth_is_counted_on_proc() {
        let tree = [(100, 90, true), (90, 80, true), (80, 70, false), (70, 1, true)];
        assert_eq!(self_call(&fake(100, None, &tree)), child(2));
        // A forked child of the app (pid 100) with the variable of its parent (90).
        assert_eq!(self_call(&fake(100, variable(90, 1), &tree)), child(2));
        // A long chain stops counting past the limit.
        let chain: Vec<(u32, u32, bool)> = (2..40).map(|pid| (pid, pid - 1, true)).collect();
        assert_eq!(self_call(&fake(39, None, &chain)).unwrap().depth, MAX_DEPTH + 1);
    }

    #[test]
    fn without_proc_the_variable_must_name_the_parent() {
        assert_eq!(self_call(&fake(100, variable(100, 0), &[])), child(1));
        assert_eq!(self_call(&fake(100, variable(99, 0), &[])), None);
        assert_eq!(self_call(&fake(100, None, &[])), None);
    }

    #[test]
    fn a_process_that_replaced_itself_is_a_restart() {
        let replaced = self_call(&fake(100, variable(500, 2), &[(100, 1, false)]));
        assert_eq!(replaced, Some(SelfCall { started: Started::Replaced, depth: 3 }));
    }

    #[test]
    fn a_secure_start_is_never_a_self_call() {
        let mut process = fake(100, variable(100, 0), &[(100, 1, true)]);
        process.secure = true;
        assert_eq!(self_call(&process), None);
    }

    #[test]
    fn variable_values() {
        let value = Variable { pid: 42, depth: 3, uid: 7 };
        assert_eq!(parse_variable(OsStr::new(&variable_value(value))), Some(value));
        for bad in ["", "42", "42:1", "x:1:1", "1:y:1", "1:2:3:4", "-1:0:0"] {
            assert_eq!(parse_variable(OsStr::new(bad)), None, "{bad}");
        }
    }

    fn read(args: &[&str]) -> Mode {
        let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        read_command_line(&argv, |name| name == "/bin/app" || name == "app")
    }

    fn app(args: &[&str]) -> Mode {
        Mode::App { argv: args.iter().map(OsString::from).collect() }
    }

    #[test]
    fn python_command_lines() {
        for args in [
            &["/bin/app", "-c", "print(1)"][..],
            &["/bin/app", "-m", "json.tool"],
            &["/bin/app", "-mjson.tool"],
            &["/bin/app", "-I", "-S", "-c", "x"],
            &["/bin/app", "-IS", "-c", "x"],
            &["/bin/app", "-Wignore", "-c", "x"],
            &["/bin/app", "-X", "dev", "-m", "x"],
            &["/bin/app", "-"],
            &["/bin/app", "-u"],
            &["/bin/app", "--version"],
            &["/bin/app", "-V"],
            &["/bin/app", "--check-hash-based-pycs=never", "x.py"],
            &["/bin/app", "/"],
        ] {
            assert_eq!(read(args), Mode::Python, "{args:?}");
        }
    }

    #[test]
    fn application_command_lines() {
        assert_eq!(read(&["/bin/app"]), app(&["/bin/app"]));
        assert_eq!(read(&["/bin/app", "/bin/app", "-c", "x"]), app(&["/bin/app", "-c", "x"]));
        assert_eq!(read(&["/bin/app", "app", "serve"]), app(&["app", "serve"]));
        assert_eq!(read(&["/bin/app", "--port", "80"]), app(&["/bin/app", "--port", "80"]));
        assert_eq!(read(&["/bin/app", "-Ix"]), Mode::Python); // a cluster of python flags
        assert_eq!(read(&["/bin/app", "-Iz"]), app(&["/bin/app", "-Iz"]));
        assert_eq!(read(&["/bin/app", "serve", "-c", "x"]), app(&["/bin/app", "serve", "-c", "x"]));
        assert_eq!(
            read(&["/bin/app", "--multiprocessing-fork", "pipe_handle=5"]),
            Mode::FrozenFork
        );
    }

    #[test]
    fn module_of_dash_m() {
        let module =
            |args: &[&str]| python_module(&args.iter().map(OsString::from).collect::<Vec<_>>());
        assert_eq!(module(&["app", "-m", "json.tool", "-m", "x"]).as_deref(), Some("json.tool"));
        assert_eq!(module(&["app", "-I", "-W", "error", "-mpip"]).as_deref(), Some("pip"));
        assert_eq!(module(&["app", "-ISm", "pip"]).as_deref(), Some("pip"));
        assert_eq!(
            module(&["app", "-X", "dev", "--check-hash-based-pycs", "never", "-m", "a"]).as_deref(),
            Some("a")
        );
        assert_eq!(module(&["app", "-c", "x", "-m", "pip"]), None);
        assert_eq!(module(&["app", "-Wm", "-c", "x"]), None); // -W's value is "m"
        assert_eq!(module(&["app", "script.py", "-m", "pip"]), None);
        assert_eq!(module(&["app", "-m"]), None);
    }

    #[test]
    fn restart_command_lines() {
        let argv = |args: &[&str]| -> Vec<OsString> { args.iter().map(OsString::from).collect() };
        let restart = |args: &[&str]| read_restart(&argv(args), |name| name == "/bin/app");
        assert_eq!(restart(&["/bin/app", "/bin/app", "x"]), app(&["/bin/app", "x"]));
        assert_eq!(restart(&["/bin/app", "-c", "x"]), app(&["/bin/app", "-c", "x"]));
        assert_eq!(restart(&["/bin/app", "-m", "pip"]), app(&["/bin/app", "-m", "pip"]));
    }
}
