//! Emulated disk latency: a backend whose every read waits a fixed time before it is
//! served, so that a benchmark on a machine with few cores shows how much I/O parallelism
//! an import keeps in flight, as it would on a drive with that latency.
//!
//! The wait is a sleep, not a spin: a waiting read leaves its core to other work, as a
//! read blocked on a real drive does. Reads served by the store's caches or the overlay of
//! unwritten batches never get here and pay nothing.

use crate::BenchBackend;
use ethrex_storage::backend::{Entries, KvBackend, SortedWrites, Table};
use ethrex_storage::StoreError;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// `inner` with `latency` added to every point read and prefix scan, and a count of them.
pub struct SlowReads {
    inner: Arc<dyn BenchBackend>,
    latency: Duration,
    reads: AtomicU64,
}

impl SlowReads {
    /// Wraps `inner`; a zero `latency` only counts reads.
    pub fn new(inner: Arc<dyn BenchBackend>, latency: Duration) -> Self {
        Self { inner, latency, reads: AtomicU64::new(0) }
    }

    fn wait(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        if !self.latency.is_zero() {
            precise_sleeps();
            std::thread::sleep(self.latency);
        }
    }

    /// Reads that reached the backend so far.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

impl KvBackend for SlowReads {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.wait();
        self.inner.get(table, key)
    }

    fn scan_prefix(&self, table: Table, prefix: &[u8]) -> Result<Entries, StoreError> {
        self.wait();
        self.inner.scan_prefix(table, prefix)
    }

    fn write(&self, writes: &SortedWrites<'_>) -> Result<(), StoreError> {
        self.inner.write(writes)
    }

    fn sync(&self) -> Result<(), StoreError> {
        self.inner.sync()
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
}

impl BenchBackend for SlowReads {
    fn checkpoint(&self, dest: &Path) -> Result<(), StoreError> {
        self.inner.checkpoint(dest)
    }

    fn drop_caches(&self) {
        self.inner.drop_caches()
    }

    fn compact(&self) -> Result<(), StoreError> {
        self.inner.compact()
    }

    fn warm_index(&self) -> Result<u64, StoreError> {
        self.inner.warm_index()
    }

    fn directory(&self) -> Option<&Path> {
        self.inner.directory()
    }

    fn reads(&self) -> Option<u64> {
        Some(self.reads())
    }
}

/// Linux lets a sleeping thread wake up to its timer slack late (50 µs by default), which
/// would add half the emulated latency again to every 100 µs read. Each thread that
/// sleeps here asks for a 1 µs slack, once.
fn precise_sleeps() {
    thread_local! {
        static DONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    DONE.with(|done| {
        if !done.get() {
            // SAFETY: PR_SET_TIMERSLACK takes the slack in ns and affects only this thread.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong, 0, 0, 0) };
            done.set(true);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use ethrex_storage::memory::MemoryBackend;
    use ethrex_storage::WriteBatch;
    use std::time::Instant;

    #[test]
    fn every_read_waits_and_is_counted_writes_do_not_wait() {
        let slow = SlowReads::new(Arc::new(MemoryBackend::new()), Duration::from_millis(20));
        let mut batch = WriteBatch::new();
        batch.put(Table::Code, vec![1], vec![2]);
        slow.write_batch(&batch).unwrap();
        assert_eq!(slow.reads(), 0, "a write was counted as a read");
        let t = Instant::now();
        assert_eq!(slow.get(Table::Code, &[1]).unwrap(), Some(vec![2]));
        assert_eq!(slow.get(Table::Code, &[9]).unwrap(), None);
        assert!(t.elapsed() >= Duration::from_millis(40), "two reads took {:?}", t.elapsed());
        assert_eq!(slow.reads(), 2);
    }

    #[test]
    fn a_short_wait_is_close_to_what_was_asked() {
        // Never shorter than asked. With the default 50 µs timer slack a 100 µs sleep takes
        // ~150 µs, with 1 µs the fastest of 200 is close to 100 (what `import-bench`
        // reports as its measured latency); only a gross error is asserted here, since
        // this machine's load is not the test's to control.
        let slow = SlowReads::new(Arc::new(MemoryBackend::new()), Duration::from_micros(100));
        let mut took: Vec<Duration> = (0..200)
            .map(|_| {
                let t = Instant::now();
                slow.get(Table::Code, &[1]).unwrap();
                t.elapsed()
            })
            .collect();
        took.sort();
        assert!(took[0] >= Duration::from_micros(100), "{:?}", took[0]);
        assert!(took[0] < Duration::from_millis(5), "the fastest read took {:?}", took[0]);
    }

    #[test]
    fn waits_overlap_across_threads() {
        // A sleep leaves the core: 8 concurrent reads of 1 s take about 1 s, not the 8 s
        // they would one after another, however few cores the machine has.
        let slow = SlowReads::new(Arc::new(MemoryBackend::new()), Duration::from_secs(1));
        let t = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| slow.get(Table::Code, &[1]).unwrap());
            }
        });
        assert!(t.elapsed() < Duration::from_secs(6), "took {:?}", t.elapsed());
        assert_eq!(slow.reads(), 8);
    }
}
