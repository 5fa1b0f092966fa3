//! The names a native image holds, for the build's reach analysis (`ingot.build.archive.reach`): C code
//! imports modules by name, so the strings of an extension module say what it may import. A scan
//! of a whole image in Python's `re` took 0.8 s of a numpy build; these give the same answers
//! as the patterns that `reach.py` documents (tests/test_reach.py compares them on real binaries).

use std::collections::HashSet;

use pyo3::prelude::*;

/// A byte that can start a name (`[A-Za-z0-9_]`).
fn starts(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// A byte that can go on in a dotted name (`[A-Za-z0-9_.]`).
fn goes_on(byte: u8) -> bool {
    starts(byte) || byte == b'.'
}

/// The longest name a scan takes: 1 + 120 bytes.
const LONGEST: usize = 121;

/// How many bytes from `at` go on in a name, counting at most `limit`.
fn run(image: &[u8], at: usize, limit: usize) -> usize {
    image[at..].iter().take(limit).take_while(|&&byte| goes_on(byte)).count()
}

/// `re.findall(rb"[A-Za-z0-9_][A-Za-z0-9_.]{1,120}", image)`: every run of name bytes,
/// however delimited, cut every 121 bytes.
fn loose(image: &[u8]) -> HashSet<&[u8]> {
    let mut found = HashSet::new();
    let mut at = 0;
    while at < image.len() {
        if !starts(image[at]) {
            at += 1;
            continue;
        }
        let length = run(image, at, LONGEST);
        if length >= 2 {
            found.insert(&image[at..at + length]);
            at += length;
        } else {
            at += 1;
        }
    }
    found
}

/// `re.findall(rb"(?<=\x00)[A-Za-z0-9_][A-Za-z0-9_.]{1,120}(?=\x00)", image)`: the
/// NUL-terminated strings after a NUL that are names, 2 to 121 bytes long.
fn terminated(image: &[u8]) -> HashSet<&[u8]> {
    let mut found = HashSet::new();
    for at in 1..image.len() {
        if image[at - 1] != 0 || !starts(image[at]) {
            continue;
        }
        let length = run(image, at, LONGEST + 1);
        if (2..=LONGEST).contains(&length) && image.get(at + length) == Some(&0) {
            found.insert(&image[at..at + length]);
        }
    }
    found
}

/// `re.findall(rb"(?<=\x00)([A-Za-z_][A-Za-z0-9_]*)\((?:\$|[A-Za-z_*/)])", image)`: the names
/// of Argument Clinic signatures (`readline($self, ...`), each after a NUL.
fn signatures(image: &[u8]) -> HashSet<&[u8]> {
    let mut found = HashSet::new();
    for at in 1..image.len() {
        let first = image[at];
        if image[at - 1] != 0 || !(first.is_ascii_alphabetic() || first == b'_') {
            continue;
        }
        let length = image[at..].iter().take_while(|&&byte| starts(byte)).count();
        let end = at + length;
        let opens = image.get(end) == Some(&b'(');
        let then = image.get(end + 1).copied();
        if opens
            && then.is_some_and(|byte| {
                byte.is_ascii_alphabetic() || matches!(byte, b'$' | b'_' | b'*' | b'/' | b')')
            })
        {
            found.insert(&image[at..end]);
        }
    }
    found
}

fn strings(names: impl IntoIterator<Item = impl AsRef<[u8]>>) -> HashSet<String> {
    // (every byte is ASCII)
    names.into_iter().map(|name| String::from_utf8_lossy(name.as_ref()).into_owned()).collect()
}

/// `binary_names(image: bytes) -> set[str]`: the NUL-terminated strings of `image` that look
/// like module names, less those its Argument Clinic signatures name (see `ingot.build.archive.reach`).
#[pyfunction]
pub fn binary_names(py: Python<'_>, image: &[u8]) -> HashSet<String> {
    py.detach(|| {
        let documented = signatures(image);
        strings(terminated(image).into_iter().filter(|name| !documented.contains(name)))
    })
}

/// `loose_binary_names(image: bytes) -> set[str]`: every run of name bytes in `image`, however
/// delimited (Rust and Cython 3 pool their strings without NULs).
#[pyfunction]
pub fn loose_binary_names(py: Python<'_>, image: &[u8]) -> HashSet<String> {
    py.detach(|| strings(loose(image)))
}

/// The NUL-terminated runs of printable, non-blank ASCII in `image`, 4 to 255 bytes long: the
/// C strings a native image holds (paths among them).
fn c_strings(image: &[u8]) -> impl Iterator<Item = &[u8]> {
    // (up to the last NUL: a run after it is not terminated)
    let terminated = &image[..image.iter().rposition(|&byte| byte == 0).unwrap_or(0)];
    terminated.split(|&byte| byte == 0).filter_map(|run| {
        // The printable tail of the run, up to its NUL.
        let start =
            run.iter().rposition(|byte| !(0x21..=0x7e).contains(byte)).map_or(0, |at| at + 1);
        let text = &run[start..];
        (4..=255).contains(&text.len()).then_some(text)
    })
}

/// `binary_path_names(image: bytes) -> set[str]`: the last components of the C strings of
/// `image` that hold a `/` or a `.` (`"%s/proj.db"` gives `proj.db`, `"/platforms"` gives
/// `platforms/`: a name after a slash ends in one), for finding the files of its package that
/// native code opens by path (`ingot.build.analysis.nativefiles`).
#[pyfunction]
pub fn binary_path_names(py: Python<'_>, image: &[u8]) -> HashSet<String> {
    py.detach(|| {
        let mut found = HashSet::new();
        for text in c_strings(image) {
            let (last, slashed) = match text.iter().rposition(|&byte| byte == b'/') {
                Some(at) => (&text[at + 1..], true),
                None => (text, false),
            };
            if last.is_empty() {
                continue;
            }
            let last = String::from_utf8_lossy(last);
            if slashed {
                found.insert(format!("{last}/"));
            }
            if last.contains('.') {
                found.insert(last.into_owned());
            }
        }
        found
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(names: HashSet<&[u8]>) -> Vec<String> {
        let mut names: Vec<String> = strings(names).into_iter().collect();
        names.sort();
        names
    }

    #[test]
    fn terminated_names_need_a_nul_on_both_sides() {
        let image = b"\0numbers\0x\0_strptime\0xml.etree.ElementPath\0tail.no_nul";
        assert_eq!(sorted(terminated(image)), ["_strptime", "numbers", "xml.etree.ElementPath"]);
        let long = [b"\0".as_slice(), &[b'a'; 122], b"\0"].concat();
        assert!(terminated(&long).is_empty(), "longer than 121 bytes");
        let longest = [b"\0".as_slice(), &[b'a'; 121], b"\0"].concat();
        assert_eq!(terminated(&longest).len(), 1);
    }

    #[test]
    fn loose_runs_are_cut_every_121_bytes() {
        let image = [&[b'a'; 130][..], b"-.b-cd"].concat();
        let found = sorted(loose(&image));
        assert_eq!(found, ["aaaaaaaaa".to_string(), "a".repeat(121), "cd".to_string()]);
    }

    #[test]
    fn c_strings_are_printable_runs_before_a_nul() {
        let image = b"\x01\x02%s/proj.db\0abc\0\xffplatforms\0with space\0tail";
        let found: Vec<&[u8]> = c_strings(image).collect();
        assert_eq!(found, [b"%s/proj.db".as_slice(), b"platforms", b"space"]);
    }

    #[test]
    fn signatures_are_names_before_a_parenthesis() {
        let image = b"\0readline($self, size=-1)\0close()\0open(\0f(x)\0g(1)\0_h(*a)";
        assert_eq!(sorted(signatures(image)), ["_h", "close", "f", "readline"]);
    }
}
