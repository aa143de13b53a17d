//! MDBX point reads and scans through a pool of read transactions that are opened once
//! and renewed, never one per read.
//!
//! Written against MDBX's C API (`mdbx-sys`, the same build the `libmdbx` crate links)
//! because the binding cannot do this: its table handles and transactions are tied to
//! the borrow of a transaction, it opens a table by name on every call (MDBX takes a
//! process-wide lock to do that), and it cannot reset and renew a read transaction. The
//! cost of the per-read path it leaves (begin a transaction, bind a reader slot, open the
//! table, abort) is what made MDBX the slower backend under parallel reads.
//!
//! The pool holds one slot per reader thread (each behind its own mutex, on its own
//! cache line: a thread takes the slot it used before, so the locks are uncontended and
//! there is no lock every reader shares). A slot's transaction is renewed when a write
//! committed since it was last renewed, so a read never sees a snapshot older than the
//! last commit `KvBackend::write` returned from, exactly as a fresh transaction per read
//! would. After each commit the writer resets the transactions of idle slots, so a slot
//! nobody uses does not keep the pages freed since its snapshot from being reused.
//!
//! The environment is opened with `MDBX_NOTLS` (the binding always sets it), so a read
//! transaction is not tied to the thread that began it.

use crate::StoreError;
use libmdbx::Error;
use mdbx_sys as ffi;
use parking_lot::{Mutex, MutexGuard};
use std::ptr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Slots in a pool: more than the threads that read at once (execution workers plus
/// the I/O pool of up to 32 threads), fewer than the reader slots MDBX is opened with.
pub(super) const SLOTS: usize = 96;

/// The pool of read transactions of one environment.
pub(super) struct ReadPool {
    env: *mut ffi::MDBX_env,
    slots: Box<[Slot]>,
    /// Bumped after every commit; a slot renewed at an older generation renews again.
    generation: AtomicU64,
}

// SAFETY: `env` is an MDBX environment, which MDBX allows every thread to use; each
// transaction pointer lives in a slot behind a mutex, so only one thread uses a
// transaction at a time, and `MDBX_NOTLS` lets that be any thread.
unsafe impl Send for ReadPool {}
unsafe impl Sync for ReadPool {}

#[repr(align(64))]
struct Slot(Mutex<ReadTxn>);

struct ReadTxn {
    /// Null until the slot is first used.
    txn: *mut ffi::MDBX_txn,
    /// Holds a snapshot (not reset).
    live: bool,
    /// The pool's generation when the snapshot was taken.
    generation: u64,
}

// SAFETY: see `ReadPool`.
unsafe impl Send for ReadTxn {}

fn mdbx_err(rc: libc::c_int) -> StoreError {
    StoreError::Backend(Box::new(Error::from_err_code(rc)))
}

thread_local! {
    /// The slot this thread tries first, assigned round-robin on first use.
    static HOME: usize = NEXT_HOME.fetch_add(1, Ordering::Relaxed);
}
static NEXT_HOME: AtomicUsize = AtomicUsize::new(0);

impl ReadPool {
    /// A pool over `env`, which must outlive it (the backend drops the pool first).
    pub(super) fn new(env: *mut ffi::MDBX_env) -> Self {
        let slots = (0..SLOTS)
            .map(|_| Slot(Mutex::new(ReadTxn { txn: ptr::null_mut(), live: false, generation: 0 })))
            .collect();
        Self { env, slots, generation: AtomicU64::new(0) }
    }

    /// This thread's slot, or the next free one; waits for its own only when every slot
    /// is busy.
    fn slot(&self) -> MutexGuard<'_, ReadTxn> {
        let home = HOME.with(|h| *h) % self.slots.len();
        for i in 0..self.slots.len() {
            if let Some(guard) = self.slots[(home + i) % self.slots.len()].0.try_lock() {
                return guard;
            }
        }
        self.slots[home].0.lock()
    }

    /// Runs `f` on a read transaction whose snapshot includes every commit made before
    /// the call.
    pub(super) fn with_txn<R>(
        &self,
        f: impl FnOnce(*mut ffi::MDBX_txn) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let mut slot = self.slot();
        // Read before taking the snapshot: a commit counted here is in it.
        let generation = self.generation.load(Ordering::Acquire);
        if slot.txn.is_null() {
            let mut txn = ptr::null_mut();
            // SAFETY: a valid environment; `txn` receives the new transaction.
            let rc = unsafe {
                ffi::mdbx_txn_begin_ex(
                    self.env,
                    ptr::null_mut(),
                    ffi::MDBX_TXN_RDONLY,
                    &mut txn,
                    ptr::null_mut(),
                )
            };
            if rc != ffi::MDBX_SUCCESS {
                return Err(mdbx_err(rc));
            }
            slot.txn = txn;
        } else if !slot.live || slot.generation != generation {
            // SAFETY: the slot's transaction, used by this thread alone (slot mutex).
            let rc = unsafe {
                if slot.live {
                    ffi::mdbx_txn_reset(slot.txn);
                }
                ffi::mdbx_txn_renew(slot.txn)
            };
            if rc != ffi::MDBX_SUCCESS {
                // SAFETY: as above; the slot forgets the transaction.
                unsafe { ffi::mdbx_txn_abort(slot.txn) };
                slot.txn = ptr::null_mut();
                slot.live = false;
                return Err(mdbx_err(rc));
            }
        }
        slot.live = true;
        slot.generation = generation;
        f(slot.txn)
    }

    /// After a commit: later reads take a new snapshot, and idle slots let go of theirs.
    pub(super) fn committed(&self) {
        self.generation.fetch_add(1, Ordering::Release);
        for slot in self.slots.iter() {
            if let Some(mut slot) = slot.0.try_lock() {
                if slot.live {
                    // SAFETY: the slot's transaction, unused while we hold its mutex.
                    unsafe { ffi::mdbx_txn_reset(slot.txn) };
                    slot.live = false;
                }
            }
        }
    }

    /// The value under `key` in table `dbi`, copied out of the map.
    pub(super) fn get(
        &self,
        dbi: ffi::MDBX_dbi,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>, StoreError> {
        self.with_txn(|txn| {
            let key = val(key);
            let mut data = val(&[]);
            // SAFETY: a live read transaction and a handle opened at startup; `data`
            // points into the map and is valid until the transaction is reset, so it
            // is copied before the slot is released.
            match unsafe { ffi::mdbx_get(txn, dbi, &key, &mut data) } {
                ffi::MDBX_SUCCESS => Ok(Some(unsafe { bytes(&data) }.to_vec())),
                ffi::MDBX_NOTFOUND => Ok(None),
                rc => Err(mdbx_err(rc)),
            }
        })
    }

    /// Every entry of table `dbi` whose key starts with `prefix`, in key order.
    pub(super) fn scan_prefix(
        &self,
        dbi: ffi::MDBX_dbi,
        prefix: &[u8],
    ) -> Result<crate::backend::Entries, StoreError> {
        self.with_txn(|txn| {
            let mut cursor = ptr::null_mut();
            // SAFETY: a live read transaction and a handle opened at startup.
            let rc = unsafe { ffi::mdbx_cursor_open(txn, dbi, &mut cursor) };
            if rc != ffi::MDBX_SUCCESS {
                return Err(mdbx_err(rc));
            }
            let mut out = Vec::new();
            let mut key = val(prefix);
            let mut data = val(&[]);
            let mut op = ffi::MDBX_SET_RANGE;
            let result = loop {
                // SAFETY: an open cursor; `key` and `data` point into the map (or, for
                // the first call, at `prefix`) and are copied before the next call.
                match unsafe { ffi::mdbx_cursor_get(cursor, &mut key, &mut data, op) } {
                    ffi::MDBX_SUCCESS => {
                        let (k, v) = unsafe { (bytes(&key), bytes(&data)) };
                        if !k.starts_with(prefix) {
                            break Ok(out);
                        }
                        out.push((k.to_vec(), v.to_vec()));
                        op = ffi::MDBX_NEXT;
                    }
                    ffi::MDBX_NOTFOUND => break Ok(out),
                    rc => break Err(mdbx_err(rc)),
                }
            };
            // SAFETY: the cursor opened above, closed once.
            unsafe { ffi::mdbx_cursor_close(cursor) };
            result
        })
    }
}

impl Drop for ReadPool {
    fn drop(&mut self) {
        for slot in self.slots.iter_mut() {
            let slot = slot.0.get_mut();
            if !slot.txn.is_null() {
                // SAFETY: the slot's transaction; nothing else can hold it now.
                unsafe { ffi::mdbx_txn_abort(slot.txn) };
                slot.txn = ptr::null_mut();
            }
        }
    }
}

fn val(bytes: &[u8]) -> ffi::MDBX_val {
    ffi::MDBX_val { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() }
}

/// # Safety
/// `v` must point at `iov_len` readable bytes that outlive the returned slice's use.
unsafe fn bytes(v: &ffi::MDBX_val) -> &[u8] {
    if v.iov_len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len)
    }
}
