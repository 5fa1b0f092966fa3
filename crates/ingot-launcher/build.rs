//! Links the launcher against the static `libpython3.X.a` of the interpreter pyo3 was configured
//! with (`PYO3_PYTHON`, or the `python3` on `PATH`), whole, and exports its symbols so that
//! extension modules loaded at run time resolve `Py*` from the executable.
//!
//! pyo3-ffi's own link lines are switched off (Cargo.toml turns on its `extension-module`
//! feature): they would link `libpython3.X.so`. When the interpreter has no static library, the
//! launcher falls back to linking the shared one and says so with a warning.

use std::path::Path;
use std::process::Command;

const PROBE: &str = r#"
import importlib.util, sys, sysconfig
for key in ("LIBPL", "LIBRARY", "LDLIBRARY", "LIBDIR", "LIBS", "SYSLIBS", "LOCALMODLIBS", "VERSION",
            "PY_LDFLAGS_NODIST"):
    print(key + "=" + str(sysconfig.get_config_var(key) or ""))
print("MAGIC=" + importlib.util.MAGIC_NUMBER.hex())
print("RUNNING=%d.%d" % sys.version_info[:2])
print("RELEASE=" + sys.version.split()[0])
"#;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PYO3_PYTHON");
    println!("cargo:rerun-if-env-changed=PYO3_CONFIG_FILE");
    println!("cargo:rerun-if-env-changed=INGOT_LAUNCHER_SHARED");
    pyo3_build_config::use_pyo3_cfgs();

    let config = pyo3_build_config::get();
    let version = config.version();
    let wanted = format!("{}.{}", version.major, version.minor);
    let python = config
        .executable()
        .map(str::to_string)
        .or_else(|| std::env::var("PYO3_PYTHON").ok())
        .unwrap_or_else(|| format!("python{wanted}"));

    let output = Command::new(&python)
        .args(["-I", "-c", PROBE])
        .output()
        .unwrap_or_else(|error| panic!("ingot-launcher: cannot run {python}: {error}"));
    assert!(
        output.status.success(),
        "ingot-launcher: {python} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("sysconfig output is UTF-8");
    compile_boot(&python);
    let var = |key: &str| -> String {
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("{key}=")))
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(
        var("RUNNING"),
        wanted,
        "ingot-launcher: pyo3 is configured for Python {wanted} but {python} is Python {}; set PYO3_PYTHON",
        var("RUNNING")
    );

    let libpl = var("LIBPL");
    let mut library = var("LIBRARY");
    // Debian and Ubuntu build libpython3.X.a without -fPIC and ship a position-independent copy
    // beside it, libpython3.X-pic.a: the one a PIE launcher can link.
    if let Some(stem) = library.strip_suffix(".a") {
        let pic = format!("{stem}-pic.a");
        if Path::new(&libpl).join(&pic).is_file() {
            library = pic;
        }
    }
    let static_lib = Path::new(&libpl).join(&library);
    let forced_shared = std::env::var_os("INGOT_LAUNCHER_SHARED").is_some();
    let linkage = if !forced_shared && !library.is_empty() && static_lib.is_file() {
        let name = library
            .strip_prefix("lib")
            .and_then(|name| name.strip_suffix(".a"))
            .expect("LIBRARY is libNAME.a");
        println!("cargo:rustc-link-search=native={libpl}");
        // Whole: extension modules need symbols the launcher itself never references.
        println!("cargo:rustc-link-lib=static:+whole-archive,-bundle={name}");
        "static"
    } else {
        let libdir = var("LIBDIR");
        let name = format!("python{}", var("VERSION"));
        println!(
            "cargo:warning=ingot-launcher: no static {} for {python}: linking lib{name}.so from {libdir} instead",
            static_lib.display()
        );
        println!("cargo:rustc-link-search=native={libdir}");
        println!("cargo:rustc-link-lib=dylib={name}");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
        "shared"
    };
    // The system libraries libpython needs (LIBS and SYSLIBS: -ldl -lm -lpthread -lutil ...),
    // and, linked statically, those of the extension modules built into it (LOCALMODLIBS: Debian's
    // pyexpat and zlib need -lexpat -lz; found on a fresh Debian 12 by tests/test_quickstart.py).
    let built_in = if linkage == "static" { var("LOCALMODLIBS") } else { String::new() };
    let mut seen = Vec::new();
    for flag in var("LIBS")
        .split_whitespace()
        .chain(var("SYSLIBS").split_whitespace())
        .chain(built_in.split_whitespace())
    {
        if let Some(name) = flag.strip_prefix("-l") {
            if !seen.contains(&name.to_string()) {
                seen.push(name.to_string());
                println!("cargo:rustc-link-lib=dylib={name}");
            }
        }
    }
    // A libpython of link-time-optimized objects (a runtime's: ThinLTO) is optimized again when
    // the launcher links it: at the level python itself was linked with (a runtime's -O3;
    // zig's clang passes the linker none of its own, and lld's default is -O2).
    let nodist = var("PY_LDFLAGS_NODIST");
    if linkage == "static" && nodist.split_whitespace().any(|flag| flag.starts_with("-flto")) {
        for level in nodist.split_whitespace().filter(|flag| flag.starts_with("-O")) {
            println!("cargo:rustc-link-arg-bins={level}");
        }
    }
    // The executable exports libpython's symbols for extension modules (`-Xlinker -export-dynamic`,
    // as python's own LINKFORSHARED).
    println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic");

    println!("cargo:rustc-env=INGOT_LAUNCHER_PYTHON_VERSION={wanted}");
    println!("cargo:rustc-env=INGOT_LAUNCHER_BYTECODE_MAGIC={}", var("MAGIC"));
    println!("cargo:rustc-env=INGOT_LAUNCHER_LINKAGE={linkage}");
    println!("cargo:rustc-env=INGOT_LAUNCHER_PYTHON_RELEASE={}", var("RELEASE"));
}

/// Compiles `src/boot.py` with the interpreter the launcher embeds, so that the launcher
/// unmarshals its code at start instead of compiling the source every time (~0.3 ms).
fn compile_boot(python: &str) {
    // boot.py, then the archive-path answers it installs (shared with the Python package).
    let manifest =
        Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).to_path_buf();
    let source = manifest.join("src/boot.py");
    let paths = manifest.join("../../python/ingot/boot/archive_paths.py");
    println!("cargo:rerun-if-changed=src/boot.py");
    println!("cargo:rerun-if-changed={}", paths.display());
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets it")).join("boot.marshal");
    let code = "import marshal, sys\n\
                source = b'\\n'.join(open(path, 'rb').read() for path in sys.argv[1:3])\n\
                code = compile(source, '<ingot boot>', 'exec', dont_inherit=True)\n\
                open(sys.argv[3], 'wb').write(marshal.dumps(code))\n";
    let status = Command::new(python)
        .args(["-I", "-c", code])
        .arg(&source)
        .arg(&paths)
        .arg(&out)
        .status()
        .unwrap_or_else(|error| {
            panic!("ingot-launcher: cannot run {python} to compile boot.py: {error}")
        });
    assert!(status.success(), "ingot-launcher: {python} could not compile {}", source.display());
}
