//! Decompressed file contents kept in memory, so that a file an application reads again (a
//! certificate bundle per connection, a template per render) is decompressed once.
//!
//! Only compressed blobs of files are kept (an uncompressed one is borrowed from the archive's
//! map at no cost), only up to [`ENTRY_LIMIT`] each and [`TOTAL_LIMIT`] in all, the oldest given
//! up first: the cache must not become the memory an executable is measured by.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use ingot_format::{Archive, Blob};

/// Larger files are decompressed on each read.
pub const ENTRY_LIMIT: usize = 1 << 20;
/// What the cache holds at most.
pub const TOTAL_LIMIT: usize = 8 << 20;

/// The bytes of a blob: borrowed from the archive's map, or decompressed (kept in the cache or
/// not).
pub enum Data<'a> {
    Borrowed(std::borrow::Cow<'a, [u8]>),
    Kept(Arc<[u8]>),
}

impl std::ops::Deref for Data<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Data::Borrowed(bytes) => bytes,
            Data::Kept(bytes) => bytes,
        }
    }
}

#[derive(Default)]
pub struct Decompressed {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// By blob number.
    kept: HashMap<u32, Arc<[u8]>>,
    /// Blob numbers, oldest first.
    order: VecDeque<u32>,
    bytes: usize,
}

impl Decompressed {
    /// The bytes of `blob`, from the cache if they were decompressed before.
    pub fn data<'a>(
        &self,
        archive: &'a Archive,
        blob: &Blob<'_>,
    ) -> ingot_format::Result<Data<'a>> {
        if blob.compression() == ingot_format::layout::compression::NONE
            || blob.size() > ENTRY_LIMIT as u64
        {
            return archive.data(blob).map(Data::Borrowed);
        }
        if let Some(kept) = self.lock().kept.get(&blob.index()) {
            return Ok(Data::Kept(Arc::clone(kept)));
        }
        // Decompressed outside the lock: two threads reading the same file may both do it.
        let bytes: Arc<[u8]> = archive.data(blob)?.into_owned().into();
        let mut state = self.lock();
        if !state.kept.contains_key(&blob.index()) {
            while state.bytes + bytes.len() > TOTAL_LIMIT {
                let Some(oldest) = state.order.pop_front() else { break };
                if let Some(given_up) = state.kept.remove(&oldest) {
                    state.bytes -= given_up.len();
                }
            }
            state.bytes += bytes.len();
            state.order.push_back(blob.index());
            state.kept.insert(blob.index(), Arc::clone(&bytes));
        }
        Ok(Data::Kept(bytes))
    }

    /// How many blobs and bytes the cache holds.
    pub fn held(&self) -> (usize, usize) {
        let state = self.lock();
        (state.kept.len(), state.bytes)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
