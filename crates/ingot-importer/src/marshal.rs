//! `canonical_marshal`: `marshal.dumps` data re-encoded to depend on the code's value only, for
//! `ingot build` (python/ingot/build/archive/bytecode.py says why and checks the result by loading it).
//!
//! The rules: immutable values (strings, bytes, numbers, tuples, frozensets, slices) are shared
//! by value, code objects and mutable containers by identity; an object met more than once gets
//! `FLAG_REF` where it is first written and `r` references after, numbered in writing order; a
//! string is written interned when it is a name of a code object, all ASCII letters, digits and
//! underscores, or one character; a frozenset's members are written sorted by value. Anything
//! not laid out as expected gives `None` (the caller keeps the plain data).

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::ops::Range;

use pyo3::prelude::*;

const FLAG_REF: u8 = 0x80;
const MAX_DEPTH: usize = 2000;

#[derive(Clone, Copy)]
enum Child {
    Node(usize),
    /// `0 N F T S .`: written as its type byte.
    Singleton(u8),
    /// A code object's raw int32 fields (its first line number).
    Raw(usize, usize),
}

struct Node {
    kind: u8,
    head: Range<usize>,
    children: Vec<Child>,
    key: Option<usize>,
    interned: bool,
}

/// Where a code object's parts are, after its type byte: int32 fields' size, objects, the raw
/// size of the first line number, objects; which objects are tuples of names, which is its name.
#[derive(Clone)]
pub struct CodeLayout {
    ints: usize,
    first: usize,
    lineno: usize,
    rest: usize,
    name_tuples: Vec<usize>,
    name: usize,
}

struct Parser<'a> {
    data: &'a [u8],
    pos: usize,
    layout: &'a CodeLayout,
    nodes: Vec<Node>,
    refs: Vec<usize>,
    by_value: HashMap<(u8, &'a [u8], Vec<i64>), usize, Fx>,
    next_key: usize,
    names: HashSet<usize, Fx>,
    depth: usize,
}

/// A multiply-rotate hasher for the small keys here (SipHash, the default, made the parse
/// twice as slow).
#[derive(Default, Clone, Copy)]
struct Fx;

#[derive(Default)]
struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u8(&mut self, value: u8) {
        self.write_u64(u64::from(value));
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }

    fn write_i64(&mut self, value: i64) {
        self.write_u64(value as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl std::hash::BuildHasher for Fx {
    type Hasher = FxHasher;

    fn build_hasher(&self) -> FxHasher {
        FxHasher::default()
    }
}

fn plain(kind: u8) -> u8 {
    match kind {
        b'Z' => b'z',
        b't' => b'u',
        b'A' => b'a',
        other => other,
    }
}

fn interned(kind: u8) -> Option<u8> {
    match kind {
        b'z' => Some(b'Z'),
        b'u' => Some(b't'),
        b'a' => Some(b'A'),
        _ => None,
    }
}

fn by_value(kind: u8) -> bool {
    b"zuasl()>:igyI".contains(&kind)
}

/// What CPython interns, or keeps as a singleton: identifiers' characters only, or one character.
fn looks_interned(text: &[u8]) -> bool {
    if text.iter().all(|byte| byte.is_ascii_alphanumeric() || *byte == b'_') {
        return true;
    }
    text.len() <= 4 && text.iter().filter(|byte| (**byte & 0xC0) != 0x80).count() == 1
}

impl Parser<'_> {
    fn take(&mut self, size: usize) -> Option<Range<usize>> {
        let end = self.pos.checked_add(size).filter(|end| *end <= self.data.len())?;
        let range = self.pos..end;
        self.pos = end;
        Some(range)
    }

    fn i32_at(&self, at: usize) -> Option<i32> {
        Some(i32::from_le_bytes(self.data.get(at..at + 4)?.try_into().ok()?))
    }

    fn byte(&mut self) -> Option<u8> {
        let byte = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(byte)
    }

    fn node_key(&self, child: Child) -> Option<i64> {
        match child {
            Child::Node(index) => self.nodes[index].key.map(|key| key as i64),
            Child::Singleton(kind) => Some(-i64::from(kind)),
            Child::Raw(..) => None,
        }
    }

    fn parse(&mut self) -> Option<Child> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let parsed = self.parse_object();
        self.depth -= 1;
        parsed
    }

    fn parse_object(&mut self) -> Option<Child> {
        let code = self.byte()?;
        let (flag, kind) = (code & FLAG_REF, code & !FLAG_REF);
        if b"0NFTS.".contains(&kind) {
            return Some(Child::Singleton(kind));
        }
        if kind == b'r' {
            let at = self.take(4)?.start;
            let index = usize::try_from(self.i32_at(at)?).ok()?;
            let node = *self.refs.get(index)?;
            self.nodes[node].key?; // a reference to an unfinished object
            return Some(Child::Node(node));
        }
        let mut interned_text = false;
        let head = match kind {
            b'z' | b'Z' => {
                let size = *self.data.get(self.pos)? as usize;
                let head = self.take(1 + size)?;
                interned_text = looks_interned(&self.data[head.start + 1..head.end]);
                head
            }
            b't' | b'u' | b'a' | b'A' => {
                let size = usize::try_from(self.i32_at(self.pos)?).ok()?;
                let head = self.take(4 + size)?;
                interned_text = looks_interned(&self.data[head.start + 4..head.end]);
                head
            }
            b'i' => self.take(4)?,
            b'g' | b'I' => self.take(8)?,
            b'y' => self.take(16)?,
            b's' => {
                let size = usize::try_from(self.i32_at(self.pos)?).ok()?;
                self.take(4 + size)?
            }
            b'l' => {
                let digits = self.i32_at(self.pos)?.unsigned_abs() as usize;
                self.take(4 + 2 * digits)?
            }
            _ => self.pos..self.pos,
        };
        let index = self.nodes.len();
        self.nodes.push(Node {
            kind: plain(kind),
            head,
            children: Vec::new(),
            key: None,
            interned: interned_text,
        });
        if flag != 0 {
            self.refs.push(index);
        }
        let children = self.children(kind, index)?;
        let node_kind = self.nodes[index].kind;
        let key = if by_value(node_kind) {
            let keys = children.iter().map(|child| self.node_key(*child)).collect::<Option<_>>()?;
            let head = &self.data[self.nodes[index].head.clone()];
            let next = self.next_key;
            let key = *self.by_value.entry((node_kind, head, keys)).or_insert(next);
            if key == next {
                self.next_key += 1;
            }
            key
        } else {
            self.next_key += 1;
            self.next_key - 1
        };
        let node = &mut self.nodes[index];
        node.children = children;
        node.key = Some(key);
        Some(Child::Node(index))
    }

    /// The children of node `index`, of type `kind` (its head set where they follow it).
    fn children(&mut self, kind: u8, index: usize) -> Option<Vec<Child>> {
        let mut children = Vec::new();
        match kind {
            b')' => {
                let head = self.take(1)?;
                let count = self.data[head.start] as usize;
                self.nodes[index].head = head;
                for _ in 0..count {
                    children.push(self.parse()?);
                }
            }
            b'(' | b'[' | b'<' | b'>' => {
                let head = self.take(4)?;
                let count = usize::try_from(self.i32_at(head.start)?).ok()?;
                self.nodes[index].head = head;
                for _ in 0..count {
                    children.push(self.parse()?);
                }
            }
            b':' => {
                for _ in 0..3 {
                    children.push(self.parse()?);
                }
            }
            b'{' => {
                while *self.data.get(self.pos)? != b'0' {
                    children.push(self.parse()?);
                    children.push(self.parse()?);
                }
                children.push(self.parse()?);
            }
            b'c' => {
                let layout = self.layout.clone();
                self.nodes[index].head = self.take(layout.ints)?;
                for _ in 0..layout.first {
                    children.push(self.parse()?);
                }
                let raw = self.take(layout.lineno)?;
                children.push(Child::Raw(raw.start, raw.end));
                for _ in 0..layout.rest {
                    children.push(self.parse()?);
                }
                for &tuple in &layout.name_tuples {
                    let Child::Node(tuple) = *children.get(tuple)? else { return None };
                    for at in 0..self.nodes[tuple].children.len() {
                        let Child::Node(name) = self.nodes[tuple].children[at] else { return None };
                        self.names.insert(self.nodes[name].key?);
                    }
                }
                let Child::Node(name) = *children.get(layout.name)? else { return None };
                self.names.insert(self.nodes[name].key?);
            }
            _ if self.nodes[index].head.is_empty() => return None, // an unknown type
            _ => {}
        }
        Some(children)
    }
}

struct Writer<'a> {
    parser: &'a Parser<'a>,
    recurring: HashSet<usize, Fx>,
    index: HashMap<usize, i32, Fx>,
    out: Vec<u8>,
}

impl Writer<'_> {
    fn count(
        &self,
        child: Child,
        seen: &mut HashSet<usize, Fx>,
        recurring: &mut HashSet<usize, Fx>,
    ) {
        let Child::Node(node) = child else { return };
        let node = &self.parser.nodes[node];
        let key = node.key.expect("a parsed node has a key");
        if !seen.insert(key) {
            recurring.insert(key);
            return;
        }
        for child in &node.children {
            self.count(*child, seen, recurring);
        }
    }

    fn compare(&self, a: Child, b: Child) -> Ordering {
        match (a, b) {
            (Child::Node(a), Child::Node(b)) => {
                let (a, b) = (&self.parser.nodes[a], &self.parser.nodes[b]);
                let data = self.parser.data;
                a.kind
                    .cmp(&b.kind)
                    .then_with(|| data[a.head.clone()].cmp(&data[b.head.clone()]))
                    .then_with(|| {
                        for (x, y) in a.children.iter().zip(&b.children) {
                            let order = self.compare(*x, *y);
                            if order != Ordering::Equal {
                                return order;
                            }
                        }
                        a.children.len().cmp(&b.children.len())
                    })
            }
            (Child::Singleton(a), Child::Singleton(b)) => a.cmp(&b),
            (Child::Singleton(a), Child::Node(b)) => {
                a.cmp(&self.parser.nodes[b].kind).then(Ordering::Less)
            }
            (Child::Node(a), Child::Singleton(b)) => {
                self.parser.nodes[a].kind.cmp(&b).then(Ordering::Greater)
            }
            _ => Ordering::Equal,
        }
    }

    fn write(&mut self, child: Child) -> Option<()> {
        let data = self.parser.data;
        let node = match child {
            Child::Singleton(kind) => {
                self.out.push(kind);
                return Some(());
            }
            Child::Raw(start, end) => {
                self.out.extend_from_slice(&data[start..end]);
                return Some(());
            }
            Child::Node(node) => &self.parser.nodes[node],
        };
        let key = node.key?;
        if let Some(number) = self.index.get(&key) {
            self.out.push(b'r');
            self.out.extend_from_slice(&number.to_le_bytes());
            return Some(());
        }
        let mut kind = node.kind;
        if let Some(interned_kind) = interned(kind) {
            if node.interned || self.parser.names.contains(&key) {
                kind = interned_kind;
            }
        }
        if self.recurring.contains(&key) {
            let number = i32::try_from(self.index.len()).ok()?;
            self.index.insert(key, number);
            kind |= FLAG_REF;
        }
        self.out.push(kind);
        self.out.extend_from_slice(&data[node.head.clone()]);
        if node.kind == b'>' {
            let mut children = node.children.clone();
            children.sort_by(|a, b| self.compare(*a, *b));
            for child in children {
                self.write(child)?;
            }
        } else {
            for &child in &node.children {
                self.write(child)?;
            }
        }
        Some(())
    }
}

/// The canonical encoding of `data` (one marshalled object), or None if it is not laid out as
/// expected.
pub fn canonical(data: &[u8], layout: &CodeLayout) -> Option<Vec<u8>> {
    let mut parser = Parser {
        data,
        pos: 0,
        layout,
        nodes: Vec::new(),
        refs: Vec::new(),
        by_value: HashMap::default(),
        next_key: 0,
        names: HashSet::default(),
        depth: 0,
    };
    let root = parser.parse()?;
    if parser.pos != data.len() {
        return None;
    }
    let mut writer = Writer {
        parser: &parser,
        recurring: HashSet::default(),
        index: HashMap::default(),
        out: Vec::with_capacity(data.len()),
    };
    let (mut seen, mut recurring) = (HashSet::default(), HashSet::default());
    writer.count(root, &mut seen, &mut recurring);
    writer.recurring = recurring;
    writer.write(root)?;
    Some(writer.out)
}

/// `canonical_marshal(data: bytes, code: tuple[int, int, int, int], name_tuples: list[int],
/// name: int) -> bytes | None`: `data` (`marshal.dumps` of a code object) re-encoded canonically
/// (see the module's rules); `code` is a code object's layout after its type byte (int32 fields'
/// size, objects, raw first-line-number size, objects), `name_tuples` and `name` which of its
/// objects hold names. None if the data is not laid out as expected.
#[pyfunction]
pub fn canonical_marshal(
    py: Python<'_>,
    data: &[u8],
    code: (usize, usize, usize, usize),
    name_tuples: Vec<usize>,
    name: usize,
) -> Option<std::borrow::Cow<'static, [u8]>> {
    let layout =
        CodeLayout { ints: code.0, first: code.1, lineno: code.2, rest: code.3, name_tuples, name };
    py.detach(|| canonical(data, &layout)).map(std::borrow::Cow::Owned)
}
