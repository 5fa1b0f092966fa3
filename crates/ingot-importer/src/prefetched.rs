//! Compressed bytecode decompressed ahead of its import, on the read-ahead thread.
//!
//! A start's bytecode is stored raw by default (handed to `marshal` from the map); with
//! `--compress-start` it is compressed, and decompressing it on the interpreter's thread would
//! add to every start. The read-ahead thread, going through the first-use list in the order the
//! imports came at build time, decompresses it here ([`Prefetched::fill`]) for the import to take
//! ([`Prefetched::take`]). An import that comes first marks its blob taken and decompresses it
//! itself; one that finds its blob being decompressed waits for it.
//!
//! What waits for its import is bounded ([`HELD_LIMIT`]): when the read-ahead thread is that far
//! ahead, it leaves the next blobs to their imports. Each blob is given up once taken.
//!
//! A process forked while the read-ahead thread ran has a copy of the state but not the thread
//! (and perhaps a lock held by it): it never touches the state ([`Prefetched::owner`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use ingot_format::{layout::compression, Archive, Blob};

/// At most this many decompressed bytes wait for their imports.
pub const HELD_LIMIT: usize = 16 << 20;

#[derive(Default)]
pub struct Prefetched {
    /// The process whose read-ahead thread fills the state (0: none yet).
    owner: AtomicU32,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// By blob number.
    blobs: HashMap<u32, Slot>,
    /// Bytes held by [`Slot::Ready`] blobs.
    held: usize,
    /// How many blobs imports took from here.
    served: usize,
}

enum Slot {
    /// Being decompressed by the read-ahead thread.
    InProgress,
    Ready(Vec<u8>),
    /// Taken by its import (or given up by the read-ahead thread): not to be decompressed here.
    Taken,
}

impl Prefetched {
    /// Decompresses `blob` for its import, unless the import has begun, too much is held already,
    /// or this is not the process that reads ahead. Errors are left for the import to report.
    pub fn fill(&self, archive: &Archive, blob: &Blob<'_>) {
        let pid = std::process::id();
        match self.owner.compare_exchange(0, pid, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {}
            Err(owner) if owner == pid => {}
            Err(_) => return,
        }
        let size = usize::try_from(blob.size()).unwrap_or(usize::MAX);
        {
            let mut state = self.lock();
            if state.blobs.contains_key(&blob.index())
                || state.held.saturating_add(size) > HELD_LIMIT
            {
                return;
            }
            state.blobs.insert(blob.index(), Slot::InProgress);
        }
        let bytes = archive.data(blob).ok().map(|bytes| bytes.into_owned());
        let mut state = self.lock();
        match bytes {
            Some(bytes) if bytes.len() == size => {
                state.held += size;
                state.blobs.insert(blob.index(), Slot::Ready(bytes));
            }
            _ => {
                state.blobs.insert(blob.index(), Slot::Taken);
            }
        }
        drop(state);
        self.changed.notify_all();
    }

    /// The bytes [`Prefetched::fill`] decompressed for `blob`, waiting for them if they are being
    /// decompressed; None if there are none (and none will be made now).
    pub fn take(&self, blob: &Blob<'_>) -> Option<Vec<u8>> {
        // (Asked at every import: what is stored raw, or with nothing read ahead, costs no
        // system call.)
        if blob.compression() == compression::NONE {
            return None; // never decompressed ahead
        }
        let owner = self.owner.load(Ordering::Acquire);
        if owner == 0 || owner != std::process::id() {
            return None; // nothing read ahead, or read ahead by the parent of this forked process
        }
        let mut state = self.lock();
        loop {
            match state.blobs.get(&blob.index()) {
                Some(Slot::InProgress) => {
                    state =
                        self.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
                }
                Some(Slot::Ready(_)) => {
                    let Some(Slot::Ready(bytes)) = state.blobs.insert(blob.index(), Slot::Taken)
                    else {
                        unreachable!("the slot was ready under the lock")
                    };
                    state.held -= bytes.len();
                    state.served += 1;
                    return Some(bytes);
                }
                _ => {
                    state.blobs.insert(blob.index(), Slot::Taken);
                    return None;
                }
            }
        }
    }

    /// How many blobs imports took from here, and how many blobs and bytes wait for their
    /// imports.
    pub fn counts(&self) -> (usize, usize, usize) {
        let state = self.lock();
        let ready = state.blobs.values().filter(|slot| matches!(slot, Slot::Ready(_))).count();
        (state.served, ready, state.held)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ingot_format::{ArchiveWriter, Kind, Namespace, Role, WriterOptions};

    /// An archive of modules `m0`.. whose bytecode is stored compressed, each `size` bytes.
    fn archive(modules: usize, size: usize) -> Archive {
        let mut writer = ArchiveWriter::new(WriterOptions {
            bytecode_magic: *b"\xa7\x0d\x0d\x0a",
            python_version: (3, 11),
            zstd_level: Some(3),
            large_zstd_level: None,
            native_zstd_level: None,
            compress_start_bytecode: true,
        });
        for index in 0..modules {
            let code: Vec<u8> = format!("code of m{index} ").bytes().cycle().take(size).collect();
            writer
                .add(Kind::Module, &format!("m{index}"), vec![(Role::Bytecode(0), code)])
                .unwrap();
        }
        writer.set_first_use((0..modules).map(|index| (Namespace::Modules, format!("m{index}"))));
        Archive::from_vec(writer.to_vec().unwrap()).unwrap()
    }

    fn bytecode<'a>(archive: &'a Archive, name: &str) -> Blob<'a> {
        let entry = archive.find(Namespace::Modules, name).unwrap().unwrap();
        let blob = entry.blob(Role::Bytecode(0)).unwrap().unwrap();
        assert_ne!(blob.compression(), compression::NONE);
        blob
    }

    #[test]
    fn an_import_takes_what_was_read_ahead_once_and_decompresses_the_rest_itself() {
        let archive = archive(3, 50_000);
        let prefetched = Prefetched::default();
        let (m0, m1) = (bytecode(&archive, "m0"), bytecode(&archive, "m1"));
        prefetched.fill(&archive, &m0);
        assert_eq!(prefetched.counts(), (0, 1, 50_000));
        assert_eq!(prefetched.take(&m0).as_deref(), Some(&archive.data(&m0).unwrap()[..]));
        assert_eq!(prefetched.counts(), (1, 0, 0));
        // Taken once: a second import of the module (after a reload) decompresses it itself.
        assert_eq!(prefetched.take(&m0), None);
        // An import that comes before the read-ahead: the read-ahead then leaves it alone.
        assert_eq!(prefetched.take(&m1), None);
        prefetched.fill(&archive, &m1);
        assert_eq!(prefetched.counts(), (1, 0, 0));
    }

    #[test]
    fn the_read_ahead_holds_at_most_the_limit() {
        let per_module = HELD_LIMIT / 3 + 1;
        let archive = archive(4, per_module);
        let prefetched = Prefetched::default();
        for index in 0..4 {
            prefetched.fill(&archive, &bytecode(&archive, &format!("m{index}")));
        }
        // Two fit; the third and fourth are left to their imports.
        assert_eq!(prefetched.counts(), (0, 2, 2 * per_module));
        assert_eq!(prefetched.take(&bytecode(&archive, "m2")), None);
        // Once an import takes one, the read-ahead has room again.
        assert!(prefetched.take(&bytecode(&archive, "m0")).is_some());
        prefetched.fill(&archive, &bytecode(&archive, "m3"));
        assert_eq!(prefetched.counts(), (1, 2, 2 * per_module));
    }

    #[test]
    fn an_import_waits_for_the_blob_being_decompressed() {
        let archive = std::sync::Arc::new(archive(1, 4 << 20));
        let prefetched = std::sync::Arc::new(Prefetched::default());
        let blob = bytecode(&archive, "m0");
        // Marked in progress as `fill` does before it decompresses; the import must wait for it.
        prefetched.owner.store(std::process::id(), Ordering::Release);
        prefetched.lock().blobs.insert(blob.index(), Slot::InProgress);
        let filler = {
            let (archive, prefetched) = (archive.clone(), prefetched.clone());
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(100));
                let blob = bytecode(&archive, "m0");
                prefetched.lock().blobs.remove(&blob.index());
                prefetched.fill(&archive, &blob);
            })
        };
        let taken = prefetched.take(&blob);
        filler.join().unwrap();
        assert_eq!(taken.map(|bytes| bytes.len()), Some(4 << 20));
    }

    #[test]
    fn a_forked_process_does_not_use_its_parents_read_ahead() {
        let archive = archive(1, 50_000);
        let prefetched = Prefetched::default();
        let blob = bytecode(&archive, "m0");
        prefetched.fill(&archive, &blob);
        // As a child forked after the fill sees it: another process's state.
        prefetched.owner.store(std::process::id().wrapping_add(1), Ordering::Release);
        assert_eq!(prefetched.take(&blob), None);
        prefetched.fill(&archive, &bytecode(&archive, "m0"));
        assert_eq!(prefetched.counts(), (0, 1, 50_000));
    }
}
