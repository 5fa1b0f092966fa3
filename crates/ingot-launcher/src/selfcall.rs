//! Self-calls: a process the application started from its own executable (`sys.executable`, by
//! `subprocess`, `multiprocessing`, joblib's loky, a reloader, `os.execv`) reads its command line
//! as python would; any other start of the executable runs the application, whatever its
//! arguments. See README.md, "Self-calls", and docs/security.md for the rules and why they hold.
//!
//! Every process of the executable makes, at its start, a secret of 16 random bytes, gives it
//! to the processes it starts in the variable [`PARENT_VARIABLE`] (`<pid>:<depth>:<uid>:<secret>`)
//! and listens on an abstract Unix socket named after the executable file, its pid, its depth
//! and the SHA-256 of the secret ([`offer`]). A child is a self-call when the variable names its
//! parent, or an ancestor through programs in between that passed the environment on (`sh -c`,
//! `shell=True`), and the socket that variable names exists, made (so the kernel says,
//! `SO_PEERCRED`) by that pid as this user. Only processes the application started after it
//! began have the secret: a child forked before its parent became the application (`exec` after
//! `fork`), a forged variable, a person's shell, another user's process or `sudo` without the
//! application's environment gets the application. A set-user-ID or file-capability start never
//! gets Python mode.
//!
//! A secret that passed through another user's process grants nothing (issue 53: a root
//! application's job, run as another user with the application's environment, gave it to
//! `sudo`, which ran the executable as root). For a child of the application's process, the
//! kernel says all there is: its parent is that process, as this user, and nothing is in
//! between; nothing of /proc is read. Through programs in between, /proc must say that the
//! application's process is an ancestor, and that it and every process between run as this user
//! (real, effective, saved and file-system user ids) from a program that did not start
//! privileged (`AT_SECURE` in their auxv: `sudo`, `su`); anything it does not say (no /proc,
//! another pid namespace's, a process in between that died) is a no
//! ([`only_this_user_between`]). The decision is this process's: it runs the application's own
//! code as the application's user, and the caller chooses only its environment and arguments,
//! none of which the check believes. Not seen: a process that changed to another user and back
//! within itself, with nothing in between (another user's program that is itself set-user-ID
//! to the application's user and replaces itself with the executable, as `doas` does): the
//! kernel keeps no record of a process's past users.
//!
//! The same variable, checked the same way, carries the depth of the chain of self-calls through
//! programs in between, so that an application that starts itself unconditionally stops at
//! [`MAX_DEPTH`] instead of filling the machine with processes.

use std::ffi::{OsStr, OsString};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use sha2::{Digest, Sha256};

/// The environment variable a process of the executable gives the processes it starts:
/// `<pid>:<depth>:<uid>:<secret>`, its own pid, how many self-calls deep it is (0 when a person,
/// a script or another program started it), its user id and its secret (32 hex digits).
pub const PARENT_VARIABLE: &str = "INGOT_PARENT";

/// The deepest chain of self-calls allowed: a process deeper than this exits with an error.
/// multiprocessing's and loky's workers are 1 deep, their helpers (resource tracker,
/// forkserver) 1 or 2; a reloader's child restarted by it stays at 1.
pub const MAX_DEPTH: u32 = 8;

/// A process's secret, which the processes it starts get in [`PARENT_VARIABLE`].
pub type Secret = [u8; 16];

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
    /// As a child: its parent process is the application (or a self-call of it), as this user.
    Child,
    /// The application replaced itself with it (`os.execv(sys.executable, ...)`): same pid.
    Replaced,
    /// Through another program (`sh -c`, `subprocess.run(..., shell=True)`, a script) that
    /// passed on the variable: its command line is read as a child's, and it counts in the
    /// chain of self-calls. Only the application's processes have the secret; a program in
    /// between that drops the environment (`sudo` without `-E`) drops the variable too, and
    /// one of another user, or one that started privileged, is no way through
    /// ([`only_this_user_between`]).
    Descendant,
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
    pub secret: Secret,
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
    /// Whether process `pid`, as this user, listens for this executable at `depth` with
    /// `secret` ([`offer`]).
    fn proves(&self, pid: u32, depth: u32, secret: &Secret) -> bool;
    /// A set-user-ID, set-group-ID or file-capability start (`AT_SECURE`).
    fn secure(&self) -> bool;
    /// What the kernel says of process `pid` (`0`: this process), in one read of
    /// `/proc/<pid>/status` (`None` if it cannot be read).
    fn status(&self, pid: u32) -> Option<Status>;
    /// Whether process `pid`'s program started privileged (`AT_SECURE` in `/proc/<pid>/auxv`:
    /// `sudo`, `su`, any set-user-ID, set-group-ID or file-capability program); `None` if that
    /// cannot be read (another user's process, one that is not dumpable, a zombie).
    fn started_privileged(&self, pid: u32) -> Option<bool>;
}

/// What `/proc/<pid>/status` says of a process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Status {
    pub pid: u32,
    /// Its parent now (a process whose parent died has the reaper that took it instead).
    pub parent: u32,
    /// The real, effective, saved and file-system user ids.
    pub uids: [u32; 4],
}

/// The most processes a self-call may have between itself and the application's process that
/// gave it the variable (shells in shells): a longer chain is not a self-call.
pub const MAX_BETWEEN: usize = 32;

/// Was this process started by the application? `None` for a start by anything else.
///
/// The variable must be this user's, and the process it names must prove it gave it (its
/// listener): then this process is a self-call if that process is its parent, one started
/// through a program in between if it is an ancestor through processes of this user only
/// ([`only_this_user_between`]). A process whose pid the variable names replaced itself
/// (`os.execv`): the variable is all there is to tell, so it only restarts the application (see
/// [`read_restart`]).
pub fn self_call(process: &dyn Process) -> Option<SelfCall> {
    if process.secure() {
        return None;
    }
    let (real, effective) = process.uids();
    if real != effective {
        return None;
    }
    let variable = process.variable().filter(|variable| variable.uid == real)?;
    let depth = variable.depth.saturating_add(1);
    if variable.pid == process.pid() {
        return Some(SelfCall { started: Started::Replaced, depth });
    }
    if variable.pid <= 1 || !process.proves(variable.pid, variable.depth, &variable.secret) {
        return None;
    }
    if variable.pid == process.parent() {
        return Some(SelfCall { started: Started::Child, depth });
    }
    if !only_this_user_between(process, variable.pid, real) {
        return None;
    }
    Some(SelfCall { started: Started::Descendant, depth })
}

/// Whether process `listener` is an ancestor of this process, and it and every process between
/// them run as `uid` (real, effective, saved and file-system user ids), none started privileged
/// (issue 53: a job the application started as another user handed the variable to `sudo`,
/// which ran the executable as the application's user). Anything /proc does not tell, or a
/// chain longer than [`MAX_BETWEEN`], is a no.
///
/// Each process is read once going up and once more coming down, from the listener to this
/// process last: a process's parent changes only when that parent dies (its children go to a
/// reaper that existed before it, never to a newer process that took its pid), so a link that
/// still holds after the reads above it held at each of them, and none of those reads was of
/// another process that took a dead one's pid. A process in between that died (its pid free
/// for another) breaks the chain: not a self-call.
fn only_this_user_between(process: &dyn Process, listener: u32, uid: u32) -> bool {
    let this_user = |status: &Status| status.uids == [uid; 4];
    let parent = process.parent();
    // /proc/self, as this process knows itself: a /proc of another pid namespace says otherwise.
    let own = process.status(0);
    if !own.is_some_and(|own| own.pid == process.pid() && own.parent == parent && this_user(&own)) {
        return false;
    }
    let mut between: Vec<(u32, u32)> = Vec::new(); // (pid, its parent)
    let mut current = parent;
    while current != listener {
        if current <= 1 || between.len() == MAX_BETWEEN {
            return false; // the listener is no ancestor of this process (any longer)
        }
        let Some(status) = process.status(current).filter(|s| s.pid == current && this_user(s))
        else {
            return false;
        };
        if process.started_privileged(current) != Some(false) {
            return false;
        }
        between.push((current, status.parent));
        current = status.parent;
    }
    // The application's process itself, as it is now (it may have changed user since it made
    // its listener, which SO_PEERCRED describes as it was then).
    if !process.status(listener).is_some_and(|s| s.pid == listener && this_user(&s)) {
        return false;
    }
    between.iter().rev().all(|&(pid, parent)| {
        process.status(pid).is_some_and(|s| s.pid == pid && s.parent == parent && this_user(&s))
    }) && process.parent() == parent
}

/// The value of [`PARENT_VARIABLE`] for the processes this one starts.
pub fn variable_value(variable: &Variable) -> String {
    let secret: String = variable.secret.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{}:{}:{}:{secret}", variable.pid, variable.depth, variable.uid)
}

fn parse_variable(value: &OsStr) -> Option<Variable> {
    let text = std::str::from_utf8(value.as_bytes()).ok()?;
    let mut fields = text.split(':');
    let mut number = || fields.next()?.parse::<u32>().ok();
    let (pid, depth, uid) = (number()?, number()?, number()?);
    let hex = fields.next()?;
    if fields.next().is_some() || hex.len() != 32 {
        return None;
    }
    let mut secret = [0u8; 16];
    for (index, byte) in secret.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * index..2 * index + 2)?, 16).ok()?;
    }
    Some(Variable { pid, depth, uid, secret })
}

/// A new secret, from the kernel's random numbers (`None` if it has none to give). By system
/// call: glibc's `getrandom` wrapper is 2.25's, above the launcher's floor (2.17).
pub fn new_secret() -> Option<Secret> {
    let mut secret = [0u8; 16];
    // SAFETY: getrandom(2) writes at most `secret.len()` bytes into it.
    let got = unsafe {
        libc::syscall(libc::SYS_getrandom, secret.as_mut_ptr(), secret.len(), 0 as libc::c_uint)
    };
    (got == secret.len() as libc::c_long).then_some(secret)
}

/// The abstract socket address where process `pid` of the executable `identity` (device, inode)
/// at `depth` with `secret` listens: the secret's SHA-256, not the secret (/proc/net/unix shows
/// every name to every user).
fn address(
    identity: (u64, u64),
    pid: u32,
    depth: u32,
    secret: &Secret,
) -> (libc::sockaddr_un, libc::socklen_t) {
    let digest = Sha256::digest(secret);
    let hashed: String = digest[..20].iter().map(|byte| format!("{byte:02x}")).collect();
    let name = format!("ingot-self/{:x}:{:x}/{pid}/{depth}/{hashed}", identity.0, identity.1);
    // SAFETY: an all-zero sockaddr_un is valid.
    let mut address: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    address.sun_family = libc::AF_UNIX as libc::sa_family_t;
    // sun_path[0] stays 0: the abstract namespace (no file; gone with the socket).
    let room = address.sun_path.len() - 1;
    for (slot, byte) in address.sun_path[1..].iter_mut().zip(name.bytes()) {
        *slot = byte as libc::c_char;
    }
    let length = size_of::<libc::sa_family_t>() + 1 + name.len().min(room);
    (address, length as libc::socklen_t)
}

/// A non-blocking, close-on-exec Unix stream socket of the caller's (`None` if refused).
fn unix_socket() -> Option<RawFd> {
    let flags = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    // SAFETY: socket(2) with constant arguments.
    let fd = unsafe { libc::socket(libc::AF_UNIX, flags, 0) };
    (fd >= 0).then_some(fd)
}

/// Listens, for the processes this one starts, on the address of this executable, this pid,
/// `depth` and `secret`: the proof that the application started them ([`self_call`]). Never
/// accepted, only drained ([`drain`]); closed at `exec` (a program this process becomes is not
/// the application). `None` when the kernel refuses (the children then run the application).
pub fn offer(identity: (u64, u64), depth: u32, secret: &Secret) -> Option<RawFd> {
    let fd = unix_socket()?;
    // SAFETY: plain system calls on the socket this function owns.
    unsafe {
        let (address, length) = address(identity, std::process::id(), depth, secret);
        let bound = libc::bind(fd, (&raw const address).cast(), length) == 0;
        if !bound || libc::listen(fd, libc::SOMAXCONN) != 0 {
            libc::close(fd);
            return None;
        }
        Some(fd)
    }
}

/// The most connections one [`drain`] closes: a flood of connections from other users (anyone
/// may connect to an abstract socket) slows a start of a process by at most this many accepts.
pub const DRAIN_LIMIT: usize = 256;

/// Closes the connections children made to the listener `fd` (each check leaves one in its
/// queue, which would fill up), at most [`DRAIN_LIMIT`]: called before the application starts a
/// process.
pub fn drain(fd: RawFd) {
    for _ in 0..DRAIN_LIMIT {
        // SAFETY: accept4 on the listener this process made; the connection is closed at once.
        let connection = unsafe {
            libc::accept4(fd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC)
        };
        if connection < 0 {
            return;
        }
        // SAFETY: the fd accept4 just returned.
        unsafe { libc::close(connection) };
    }
}

/// Whether the abstract socket address is bound (by someone): a socket of ours cannot bind it.
/// The name holds the SHA-256 of a secret only the application's processes (of this user) know.
fn name_in_use(address: &libc::sockaddr_un, length: libc::socklen_t) -> bool {
    let Some(fd) = unix_socket() else {
        return false;
    };
    // SAFETY: the socket made above, closed below; a valid address.
    unsafe {
        let bound = libc::bind(fd, (address as *const libc::sockaddr_un).cast(), length) == 0;
        let in_use = !bound && *libc::__errno_location() == libc::EADDRINUSE;
        libc::close(fd);
        in_use
    }
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

    /// The executable's device and inode, which name its processes' listeners.
    pub fn identity(&self) -> Option<(u64, u64)> {
        self.identity
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

    fn proves(&self, pid: u32, depth: u32, secret: &Secret) -> bool {
        let Some(identity) = self.identity else {
            return false;
        };
        let (address, length) = address(identity, pid, depth, secret);
        let Some(fd) = unix_socket() else {
            return false;
        };
        // SAFETY: the socket made above, closed below; valid buffers.
        unsafe {
            let mut credentials: libc::ucred = std::mem::zeroed();
            let mut size = size_of::<libc::ucred>() as libc::socklen_t;
            let connected = libc::connect(fd, (&raw const address).cast(), length) == 0;
            if !connected && *libc::__errno_location() == libc::EAGAIN {
                // The listener's queue is full (a flood of connections from anyone): the name
                // exists, and only a process that knew the secret could make it.
                libc::close(fd);
                return name_in_use(&address, length);
            }
            let proved = connected
                && libc::getsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_PEERCRED,
                    (&raw mut credentials).cast(),
                    &raw mut size,
                ) == 0
                && credentials.pid as u32 == pid
                && credentials.uid == libc::getuid();
            libc::close(fd);
            proved
        }
    }

    fn secure(&self) -> bool {
        // SAFETY: getauxval only reads the auxiliary vector.
        unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
    }

    fn status(&self, pid: u32) -> Option<Status> {
        let path =
            if pid == 0 { "/proc/self/status".into() } else { format!("/proc/{pid}/status") };
        parse_status(&std::fs::read(path).ok()?)
    }

    fn started_privileged(&self, pid: u32) -> Option<bool> {
        parse_auxv_secure(&std::fs::read(format!("/proc/{pid}/auxv")).ok()?)
    }
}

/// `Pid`, `PPid` and `Uid` of a `/proc/<pid>/status` (its `Name` line, the only one the process
/// chooses, comes first and has its newlines escaped by the kernel).
fn parse_status(text: &[u8]) -> Option<Status> {
    let field = |name: &[u8]| -> Option<Vec<u32>> {
        let line = text.split(|&byte| byte == b'\n').find_map(|line| line.strip_prefix(name))?;
        let line = std::str::from_utf8(line).ok()?;
        line.split_ascii_whitespace().map(|number| number.parse().ok()).collect()
    };
    let (pid, parent) = (field(b"Pid:")?, field(b"PPid:")?);
    let uids: [u32; 4] = field(b"Uid:")?.try_into().ok()?;
    match (pid.as_slice(), parent.as_slice()) {
        (&[pid], &[parent]) => Some(Status { pid, parent, uids }),
        _ => None,
    }
}

/// `AT_SECURE`'s value in an auxiliary vector (`/proc/<pid>/auxv`: pairs of native words), or
/// `None` if it has none (a zombie's is empty).
fn parse_auxv_secure(auxv: &[u8]) -> Option<bool> {
    const WORD: usize = size_of::<libc::c_ulong>();
    let word = |bytes: &[u8]| libc::c_ulong::from_ne_bytes(bytes.try_into().expect("a word"));
    auxv.chunks_exact(2 * WORD)
        .map(|pair| (word(&pair[..WORD]), word(&pair[WORD..])))
        .take_while(|&(kind, _)| kind != libc::AT_NULL)
        .find(|&(kind, _)| kind == libc::AT_SECURE)
        .map(|(_, value)| value != 0)
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
    use std::cell::{Cell, RefCell};
    use std::collections::HashMap;

    use super::*;

    const SECRET: Secret = [7; 16];
    const OTHER: Secret = [8; 16];

    struct Fake {
        pid: u32,
        parent: Cell<u32>,
        uids: (u32, u32),
        variable: Option<Variable>,
        /// (pid, depth, secret) of the processes that listen as this user.
        listeners: Vec<(u32, u32, Secret)>,
        secure: bool,
        /// What /proc says (this process's own status included, under its pid).
        statuses: RefCell<HashMap<u32, Status>>,
        /// The processes whose program started privileged, and those whose auxv is unreadable.
        privileged: Vec<u32>,
        no_auxv: Vec<u32>,
        /// How many reads of /proc so far, and what happens after the read of that number.
        reads: Cell<usize>,
        events: RefCell<Vec<(usize, Event)>>,
    }

    /// A change between two reads of /proc.
    #[derive(Clone, Copy)]
    enum Event {
        /// This process gets a new parent (its own died).
        Reparented(u32),
        /// A process appears (a new one, which may have a dead one's pid), or goes.
        Status(u32, Option<Status>),
    }

    impl Fake {
        fn read(&self) {
            let count = self.reads.get() + 1;
            self.reads.set(count);
            for (after, event) in self.events.borrow().iter() {
                if *after + 1 != count {
                    continue;
                }
                match *event {
                    Event::Reparented(parent) => {
                        self.parent.set(parent);
                        let mut statuses = self.statuses.borrow_mut();
                        statuses.get_mut(&self.pid).expect("own status").parent = parent;
                    }
                    Event::Status(pid, Some(status)) => {
                        self.statuses.borrow_mut().insert(pid, status);
                    }
                    Event::Status(pid, None) => {
                        self.statuses.borrow_mut().remove(&pid);
                    }
                }
            }
        }
    }

    impl Process for Fake {
        fn pid(&self) -> u32 {
            self.pid
        }
        fn parent(&self) -> u32 {
            self.parent.get()
        }
        fn uids(&self) -> (u32, u32) {
            self.uids
        }
        fn variable(&self) -> Option<Variable> {
            self.variable
        }
        fn proves(&self, pid: u32, depth: u32, secret: &Secret) -> bool {
            self.listeners.contains(&(pid, depth, *secret))
        }
        fn secure(&self) -> bool {
            self.secure
        }
        fn status(&self, pid: u32) -> Option<Status> {
            let status =
                self.statuses.borrow().get(&if pid == 0 { self.pid } else { pid }).copied();
            self.read();
            status
        }
        fn started_privileged(&self, pid: u32) -> Option<bool> {
            let known = self.statuses.borrow().contains_key(&pid);
            self.read();
            (known && !self.no_auxv.contains(&pid)).then(|| self.privileged.contains(&pid))
        }
    }

    const USER: u32 = 1000;

    fn variable(pid: u32, depth: u32, secret: Secret) -> Option<Variable> {
        Some(Variable { pid, depth, uid: USER, secret })
    }

    /// Process 500 of USER, child of `parent`.
    fn fake(parent: u32, variable: Option<Variable>, listeners: &[(u32, u32, Secret)]) -> Fake {
        let listeners = listeners.to_vec();
        Fake {
            pid: 500,
            parent: Cell::new(parent),
            uids: (USER, USER),
            variable,
            listeners,
            secure: false,
            statuses: RefCell::new(HashMap::from([(500, status(500, parent, USER))])),
            privileged: Vec::new(),
            no_auxv: Vec::new(),
            reads: Cell::new(0),
            events: RefCell::new(Vec::new()),
        }
    }

    /// Process `pid`, child of `parent`, as `uid` (all four user ids).
    fn status(pid: u32, parent: u32, uid: u32) -> Status {
        Status { pid, parent, uids: [uid; 4] }
    }

    /// `fake` with the processes `chain` (pid, parent, uid) in /proc too.
    fn with(mut process: Fake, chain: &[(u32, u32, u32)]) -> Fake {
        let statuses = process.statuses.get_mut();
        for &(pid, parent, uid) in chain {
            statuses.insert(pid, status(pid, parent, uid));
        }
        process
    }

    fn started(started: Started, depth: u32) -> Option<SelfCall> {
        Some(SelfCall { started, depth })
    }

    #[test]
    fn a_child_with_its_parents_secret_is_a_self_call_one_deeper() {
        let parent = [(100, 0, SECRET)];
        assert_eq!(
            self_call(&fake(100, variable(100, 0, SECRET), &parent)),
            started(Started::Child, 1)
        );
        let parent = [(100, 3, SECRET)];
        assert_eq!(
            self_call(&fake(100, variable(100, 3, SECRET), &parent)),
            started(Started::Child, 4)
        );
    }

    #[test]
    fn without_the_secret_the_parent_proves_nothing() {
        // The parent is the application (it listens), but the child never got its secret: it was
        // forked before the parent became the application, or the variable is forged.
        let parent = [(100, 0, SECRET)];
        assert_eq!(self_call(&fake(100, None, &parent)), None);
        assert_eq!(self_call(&fake(100, variable(100, 0, OTHER), &parent)), None);
        assert_eq!(self_call(&fake(100, variable(100, 1, SECRET), &parent)), None);
        // No listener at all (a parent that is not the application, ppid 0 or 1).
        assert_eq!(self_call(&fake(100, variable(100, 0, SECRET), &[])), None);
        assert_eq!(self_call(&fake(0, variable(0, 0, SECRET), &[(0, 0, SECRET)])), None);
        // A variable of another user, or a process whose real and effective users differ.
        let mut process =
            fake(100, Some(Variable { pid: 100, depth: 0, uid: 7, secret: SECRET }), &parent);
        assert_eq!(self_call(&process), None);
        process.variable = variable(100, 0, SECRET);
        process.uids = (0, USER);
        assert_eq!(self_call(&process), None);
    }

    #[test]
    fn through_a_program_in_between_the_chain_still_counts() {
        // The app (50, depth 2) ran `sh -c` (100), which ran the executable.
        let shell = [(100, 50, USER), (50, 1, USER)];
        let process = with(fake(100, variable(50, 2, SECRET), &[(50, 2, SECRET)]), &shell);
        assert_eq!(self_call(&process), started(Started::Descendant, 3));
        let process = with(fake(100, variable(50, 2, OTHER), &[(50, 2, SECRET)]), &shell);
        assert_eq!(self_call(&process), None);
        // Shells in shells.
        let shells = [(100, 90, USER), (90, 80, USER), (80, 50, USER), (50, 1, USER)];
        let process = with(fake(100, variable(50, 2, SECRET), &[(50, 2, SECRET)]), &shells);
        assert_eq!(self_call(&process), started(Started::Descendant, 3));
    }

    /// This process (500, USER) with the variable of the app's process 50 (listening as USER),
    /// and the processes `chain` between.
    fn descendant(chain: &[(u32, u32, u32)]) -> Fake {
        let parent = chain.first().map_or(50, |link| link.0);
        with(fake(parent, variable(50, 0, SECRET), &[(50, 0, SECRET)]), chain)
    }

    #[test]
    fn through_another_users_process_there_is_no_self_call() {
        // Issue 53: the app (50, root here: USER) started a job as another user (100, uid 7),
        // which ran `sudo` (200: real uid 7, the others USER; started privileged), which ran
        // the executable as USER with the app's variable.
        let app = (50, 1, USER);
        let chain = [(200, 100, USER), (100, 50, 7), app];
        let mut process = descendant(&chain);
        process.statuses.get_mut().get_mut(&200).expect("sudo").uids = [7, USER, USER, USER];
        process.privileged.push(200);
        assert_eq!(self_call(&process), None);
        // Each fact alone is enough: another user's process in between, whatever its program;
        assert_eq!(self_call(&descendant(&[(200, 100, USER), (100, 50, 7), app])), None);
        // a process of this user whose program started privileged (`exec sudo` by the job);
        let mut process = descendant(&[(200, 50, USER), app]);
        process.privileged.push(200);
        assert_eq!(self_call(&process), None);
        // one whose saved or file-system user is another;
        let mut process = descendant(&[(200, 50, USER), app]);
        process.statuses.get_mut().get_mut(&200).expect("200").uids[3] = 7;
        assert_eq!(self_call(&process), None);
        // the app's process itself as another user now (it dropped its privileges).
        assert_eq!(self_call(&descendant(&[(200, 50, USER), (50, 1, 7)])), None);
        // All of this user, none privileged: a self-call.
        assert_eq!(
            self_call(&descendant(&[(200, 50, USER), app])),
            started(Started::Descendant, 1)
        );
    }

    #[test]
    fn what_proc_does_not_tell_is_no_self_call() {
        let app = (50, 1, USER);
        // A process in between, or the app's, that /proc does not show (another pid namespace's,
        // /proc not mounted, hidepid), or whose start it does not say.
        assert_eq!(self_call(&descendant(&[(100, 50, USER)])), None);
        assert_eq!(self_call(&descendant(&[(100, 90, USER), app])), None);
        let mut process = descendant(&[(100, 50, USER), app]);
        process.statuses.get_mut().remove(&500);
        assert_eq!(self_call(&process), None);
        let mut process = descendant(&[(100, 50, USER), app]);
        process.no_auxv.push(100); // not dumpable, or a zombie
        assert_eq!(self_call(&process), None);
        // /proc/self of another pid namespace: its parent is not the one getppid gives.
        let mut process = descendant(&[(100, 50, USER), app]);
        process.statuses.get_mut().get_mut(&500).expect("own").parent = 77;
        assert_eq!(self_call(&process), None);
        // The listener no ancestor: the shell in between exited (this process went to init), or
        // the variable was passed on to a process of this user the app did not start.
        assert_eq!(self_call(&descendant(&[(1, 0, 0), app])), None);
        assert_eq!(self_call(&descendant(&[(100, 60, USER), (60, 1, USER), app])), None);
        // A chain too long to be shells in shells (or a loop /proc should never show).
        let mut long: Vec<(u32, u32, u32)> =
            (0..=MAX_BETWEEN as u32).map(|index| (1000 + index, 1001 + index, USER)).collect();
        long.last_mut().expect("links").1 = 50;
        long.push(app);
        assert_eq!(self_call(&descendant(&long)), None);
        long.remove(0);
        assert_eq!(self_call(&descendant(&long)), started(Started::Descendant, 1));
        assert_eq!(self_call(&descendant(&[(100, 100, USER), app])), None);
    }

    #[test]
    fn a_process_in_between_that_dies_breaks_the_chain() {
        // The shell (100) between this process and the app (50) dies after it was read, and
        // another process takes its pid, of this user and a child of the app too: this process
        // went to the reaper (1). Whenever it happens, between any two reads, no self-call.
        let chain = [(100, 50, USER), (50, 1, USER)];
        let reads = {
            let process = descendant(&chain);
            assert_eq!(self_call(&process), started(Started::Descendant, 1));
            process.reads.get()
        };
        for after in 0..reads {
            let process = descendant(&chain);
            process.events.borrow_mut().extend([
                (after, Event::Reparented(1)),
                (after, Event::Status(100, Some(status(100, 50, USER)))),
            ]);
            assert_eq!(self_call(&process), None, "after read {after}");
        }
        // Two shells: the upper one dies, the lower one goes to the reaper, and a process of
        // another user takes the upper one's pid... as a child of the app: not this chain.
        let chain = [(100, 90, USER), (90, 50, USER), (50, 1, USER)];
        let reads = {
            let process = descendant(&chain);
            assert_eq!(self_call(&process), started(Started::Descendant, 1));
            process.reads.get()
        };
        let died_after = |after| {
            let process = descendant(&chain);
            process.events.borrow_mut().extend([
                (after, Event::Status(100, Some(status(100, 1, USER)))),
                (after, Event::Status(90, Some(status(90, 50, 7)))),
            ]);
            self_call(&process)
        };
        for after in 0..reads - 1 {
            assert_eq!(died_after(after), None, "after read {after}");
        }
        // After the last read: the chain held at every read, which is all a check can tell.
        assert_eq!(died_after(reads - 1), started(Started::Descendant, 1));
    }

    #[test]
    fn this_processes_status_and_auxv() {
        let this = ThisProcess { identity: None };
        // SAFETY: getuid and geteuid cannot fail.
        let uid = unsafe { libc::getuid() };
        let own = this.status(0).expect("/proc/self/status");
        assert_eq!((own.pid, own.parent, own.uids[0]), (std::process::id(), this.parent(), uid));
        assert_eq!(this.status(std::process::id()), Some(own));
        assert_eq!(this.started_privileged(std::process::id()), Some(false));
        assert_eq!(this.status(u32::MAX), None);
        let status =
            b"Name:\tPid:\t1\\nPPid:\t2\nUmask:\t0022\nPid:\t42\nPPid:\t7\nTracerPid:\t0\n\
                       Uid:\t1\t2\t3\t4\nGid:\t0\t0\t0\t0\n";
        assert_eq!(parse_status(status), Some(Status { pid: 42, parent: 7, uids: [1, 2, 3, 4] }));
        assert_eq!(parse_status(b"Pid:\t42\nPPid:\t7\nUid:\t1\t2\t3\n"), None);
        let words = |pairs: &[(libc::c_ulong, libc::c_ulong)]| -> Vec<u8> {
            pairs
                .iter()
                .flat_map(|(kind, value)| [kind.to_ne_bytes(), value.to_ne_bytes()])
                .flatten()
                .collect()
        };
        assert_eq!(
            parse_auxv_secure(&words(&[(6, 4096), (libc::AT_SECURE, 1), (0, 0)])),
            Some(true)
        );
        assert_eq!(parse_auxv_secure(&words(&[(libc::AT_SECURE, 0), (0, 0)])), Some(false));
        assert_eq!(parse_auxv_secure(&words(&[(0, 0), (libc::AT_SECURE, 0)])), None);
        assert_eq!(parse_auxv_secure(b""), None);
    }

    #[test]
    fn a_process_that_replaced_itself_is_a_restart() {
        let replaced = self_call(&fake(100, variable(500, 2, SECRET), &[]));
        assert_eq!(replaced, started(Started::Replaced, 3));
    }

    #[test]
    fn a_secure_start_is_never_a_self_call() {
        let mut process = fake(100, variable(100, 0, SECRET), &[(100, 0, SECRET)]);
        process.secure = true;
        assert_eq!(self_call(&process), None);
    }

    #[test]
    fn a_listener_proves_its_own_process_depth_and_secret_only() {
        // The real kernel: this test process listens at depth 2 with SECRET.
        let identity = (0x1234, u64::from(std::process::id()) + 0x5678_0000);
        let fd = offer(identity, 2, &SECRET).expect("a listener");
        let this = ThisProcess { identity: Some(identity) };
        let me = std::process::id();
        assert!(this.proves(me, 2, &SECRET));
        assert!(!this.proves(me, 1, &SECRET));
        assert!(!this.proves(me, 2, &OTHER));
        assert!(!this.proves(me + 1, 2, &SECRET));
        let other = ThisProcess { identity: Some((identity.0, identity.1 + 1)) };
        assert!(!other.proves(me, 2, &SECRET));
        // Many checks in a row, drained: the queue never fills.
        for _ in 0..3 {
            for _ in 0..500 {
                assert!(this.proves(me, 2, &SECRET));
            }
            drain(fd);
        }
        // The address is taken while the listener lives, and free once it is closed.
        assert_eq!(offer(identity, 2, &SECRET), None);
        // SAFETY: the listener made above.
        unsafe { libc::close(fd) };
        assert!(!this.proves(me, 2, &SECRET));
    }

    #[test]
    fn variable_values() {
        let value = Variable { pid: 42, depth: 3, uid: 7, secret: SECRET };
        assert_eq!(parse_variable(OsStr::new(&variable_value(&value))), Some(value));
        let hex = "07".repeat(16);
        for bad in [
            "".to_string(),
            "42:1:1".to_string(),
            format!("x:1:1:{hex}"),
            format!("1:2:3:{hex}:4"),
            format!("1:2:3:{}", &hex[1..]),
            format!("1:2:3:{}zz", &hex[2..]),
            format!("-1:0:0:{hex}"),
        ] {
            assert_eq!(parse_variable(OsStr::new(&bad)), None, "{bad}");
        }
        assert!(new_secret().is_some_and(|secret| secret != new_secret().unwrap()));
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

    /// Connects to `address` without accepting, until the listener's queue is full: how many.
    fn fill(address: &(libc::sockaddr_un, libc::socklen_t)) -> usize {
        let mut count = 0;
        loop {
            let fd = unix_socket().expect("a socket");
            // SAFETY: the socket just made, closed at once; a valid address.
            let connected = unsafe {
                let done = libc::connect(fd, (&raw const address.0).cast(), address.1) == 0;
                libc::close(fd);
                done
            };
            if !connected {
                return count;
            }
            count += 1;
        }
    }

    #[test]
    fn a_full_queue_still_proves_and_a_drain_is_bounded() {
        // Issue 39: anyone may connect to an abstract socket. With the listener's queue full, a
        // child's check still finds the name its parent's secret made (and not another's); one
        // drain closes at most DRAIN_LIMIT connections.
        let this = ThisProcess::new(Path::new("/proc/self/exe"));
        let identity = this.identity().expect("this test's executable");
        let secret: Secret = new_secret().expect("random bytes");
        let listener = offer(identity, 5, &secret).expect("a listener");
        let pid = std::process::id();
        let queued = fill(&address(identity, pid, 5, &secret));
        assert!(queued > DRAIN_LIMIT, "{queued}");
        assert!(this.proves(pid, 5, &secret));
        assert!(!this.proves(pid, 5, &OTHER));
        assert!(!this.proves(pid, 4, &secret));
        drain(listener);
        assert_eq!(fill(&address(identity, pid, 5, &secret)), DRAIN_LIMIT);
        // SAFETY: the listener this test made.
        unsafe { libc::close(listener) };
        assert!(!this.proves(pid, 5, &secret));
    }
}
