//! The two phases: loading a database with sorted entries, and timed random point reads
//! from a number of threads.

use crate::data;
use crate::{DbBenchOptions, LoadReport, Point};
use anyhow::{bail, Context};
use ethrex_bench_storage::BenchBackend;
use ethrex_storage::{DbKind, KvBackend, Table, WriteBatch};
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// The table the entries go to: the client's storage-trie node table, the one block
/// import reads most at random, so each backend reads with the settings the client gives
/// it (RocksDB's bloom filters and block cache, MDBX's read pool). The database is the
/// benchmark's own.
pub(crate) const TABLE: Table = Table::StorageTrie;

/// Entries per write batch during the load.
const LOAD_BATCH: u64 = 500_000;

/// The parameters a loaded database was built with, kept beside it so a later run with
/// the same `--datadir` reuses it.
#[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
struct Loaded {
    db: String,
    entries: u64,
    key_size: usize,
    value_size: usize,
    /// MDBX's page size is fixed when the file is created.
    page_size: Option<usize>,
}

/// A database ready for reads.
pub(crate) struct Db {
    pub(crate) kind: DbKind,
    pub(crate) backend: Arc<dyn BenchBackend>,
    pub(crate) dir: PathBuf,
}

/// Opens the database of `kind` under `root`, loading it unless it already holds this
/// run's entries.
pub(crate) fn open_loaded(
    kind: DbKind,
    root: &Path,
    o: &DbBenchOptions,
) -> anyhow::Result<(Db, LoadReport)> {
    let dir = root.join(kind.name());
    let marker = root.join(format!("{}.loaded.json", kind.name()));
    let want = Loaded {
        db: kind.name().into(),
        entries: o.entries,
        key_size: o.key_size,
        value_size: o.value_size,
        page_size: if kind == DbKind::Mdbx { o.mdbx.page_size } else { None },
    };
    let reused = match std::fs::read(&marker) {
        Ok(bytes) => serde_json::from_slice::<Loaded>(&bytes).ok().as_ref() == Some(&want),
        Err(_) => false,
    };
    if !reused && dir.exists() {
        // A partial or different load: start over.
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let backend: Arc<dyn BenchBackend> = match kind {
        DbKind::Mdbx => {
            ethrex_storage::mdbx::MdbxBackend::open_with(&dir, o.mdbx).map(|b| Arc::new(b) as _)
        }
        _ => ethrex_bench_storage::open_backend(kind, Some(&dir)),
    }
    .with_context(|| format!("opening {} at {}", kind.name(), dir.display()))?;
    let t = Instant::now();
    if !reused {
        let _ = std::fs::remove_file(&marker);
        load(&*backend, o)?;
        backend.compact()?;
        backend.sync()?;
        std::fs::write(&marker, serde_json::to_vec(&want)?)
            .with_context(|| format!("writing {}", marker.display()))?;
    }
    let seconds = t.elapsed().as_secs_f64();
    // Read back a few entries whatever happened: a reused database must hold this data.
    check_sample(&*backend, o).with_context(|| format!("checking the {} database", kind.name()))?;
    let report =
        LoadReport { entries: o.entries, seconds, bytes_on_disk: disk_bytes(&dir)?, reused };
    Ok((Db { kind, backend, dir }, report))
}

fn load(backend: &dyn KvBackend, o: &DbBenchOptions) -> anyhow::Result<()> {
    let (mut key, mut value) = (vec![0u8; o.key_size], vec![0u8; o.value_size]);
    let mut start = 0;
    while start < o.entries {
        let end = (start + LOAD_BATCH).min(o.entries);
        let mut batch = WriteBatch::with_capacity((end - start) as usize);
        for i in start..end {
            data::key(i, &mut key);
            data::value(i, &mut value);
            batch.put(TABLE, key.clone(), value.clone());
        }
        backend.write_batch(&batch)?;
        start = end;
    }
    Ok(())
}

fn check_sample(backend: &dyn KvBackend, o: &DbBenchOptions) -> anyhow::Result<()> {
    let mut key = vec![0u8; o.key_size];
    let mut value = vec![0u8; o.value_size];
    let last = o.entries - 1;
    for i in [0, last / 3, last / 2, last] {
        data::key(i, &mut key);
        data::value(i, &mut value);
        let got = backend.get(TABLE, &key)?;
        if got.as_deref() != Some(&value[..]) {
            bail!("entry {i} reads back as {got:?}, not the value written");
        }
    }
    // One past the end is absent.
    let mut beyond = vec![0u8; o.key_size];
    data::key(o.entries, &mut beyond);
    if backend.get(TABLE, &beyond)?.is_some() {
        bail!("entry {} exists but was never written", o.entries);
    }
    Ok(())
}

/// Bytes the files under `dir` occupy on disk (allocated blocks: MDBX's file is sparse).
pub(crate) fn disk_bytes(dir: &Path) -> anyhow::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() { disk_bytes(&entry.path())? } else { meta.blocks() * 512 };
    }
    Ok(total)
}

/// Process CPU time (user + system) so far.
fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// What one reader thread did.
struct ThreadResult {
    latencies_ns: Vec<u32>,
}

/// Random point reads of existing entries from `threads` threads for `seconds`, each
/// value checked against the one written.
pub(crate) fn read_point(
    db: &Db,
    threads: usize,
    o: &DbBenchOptions,
    seed: u64,
) -> anyhow::Result<Point> {
    if o.cold {
        db.backend.drop_caches();
        ethrex_bench_storage::os_cache::drop_page_cache(&db.dir)
            .with_context(|| format!("dropping the page cache of {}", db.dir.display()))?;
        if !o.cold_index {
            db.backend.warm_index().context("reading the index back")?;
        }
    }
    let stop = AtomicBool::new(false);
    let start = Barrier::new(threads + 1);
    let (results, wall, cpu) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, start) = (&stop, &start);
                s.spawn(move || -> anyhow::Result<ThreadResult> {
                    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ (t as u64) << 32);
                    let mut key = vec![0u8; o.key_size];
                    let mut want = vec![0u8; o.value_size];
                    let mut latencies_ns = Vec::with_capacity(1 << 16);
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let i = rng.random_range(0..o.entries);
                        data::key(i, &mut key);
                        let t0 = Instant::now();
                        let got = db.backend.get(TABLE, &key);
                        let ns = t0.elapsed().as_nanos().min(u32::MAX as u128) as u32;
                        let got = got.with_context(|| format!("reading entry {i}"))?;
                        data::value(i, &mut want);
                        if got.as_deref() != Some(&want[..]) {
                            bail!("entry {i} read back as {got:?}, not the value written");
                        }
                        latencies_ns.push(ns);
                    }
                    Ok(ThreadResult { latencies_ns })
                })
            })
            .collect();
        let cpu0 = cpu_time();
        let t0 = Instant::now();
        start.wait();
        std::thread::sleep(Duration::from_secs_f64(o.seconds));
        stop.store(true, Ordering::Relaxed);
        let results: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        (results, t0.elapsed(), cpu_time().saturating_sub(cpu0))
    });
    let mut latencies = Vec::new();
    for r in results {
        let r = r.map_err(|_| anyhow::anyhow!("a reader thread panicked"))??;
        latencies.extend(r.latencies_ns);
    }
    if latencies.is_empty() {
        bail!("no read finished in {} s", o.seconds);
    }
    latencies.sort_unstable();
    let n = latencies.len();
    let us = |ns: u32| ns as f64 / 1000.0;
    let mean_us = latencies.iter().map(|&l| l as f64).sum::<f64>() / n as f64 / 1000.0;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    Ok(Point {
        db: db.kind.name().into(),
        threads,
        reads: n as u64,
        iops: n as f64 / wall.as_secs_f64(),
        mean_us,
        p50_us: us(latencies[n / 2]),
        p99_us: us(latencies[(n * 99 / 100).min(n - 1)]),
        cpu_pct: cpu.as_secs_f64() / (wall.as_secs_f64() * cores as f64) * 100.0,
        cold: o.cold,
    })
}

/// Inserts `write_batches` batches of `write_keys` new keys at random places, timing each
/// `KvBackend::write`, checks a sample reads back, then deletes them again (untimed) so
/// the database holds the loaded entries only.
pub(crate) fn write_phase(
    db: &Db,
    o: &DbBenchOptions,
    seed: u64,
) -> anyhow::Result<crate::WriteReport> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut key = vec![0u8; o.key_size];
    let mut value = vec![0u8; o.value_size];
    let mut written = Vec::with_capacity(o.write_batches * o.write_keys);
    let mut ms = Vec::with_capacity(o.write_batches);
    for b in 0..o.write_batches as u64 {
        let mut batch = WriteBatch::with_capacity(o.write_keys);
        for _ in 0..o.write_keys {
            let i = rng.random_range(0..o.entries);
            data::insert_key(i, b, &mut key);
            data::value(i, &mut value);
            batch.put(TABLE, key.clone(), value.clone());
            written.push((i, key.clone()));
        }
        let t = Instant::now();
        db.backend.write_batch(&batch)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    for (i, k) in written.iter().step_by(written.len().div_ceil(64).max(1)) {
        data::value(*i, &mut value);
        if db.backend.get(TABLE, k)?.as_deref() != Some(&value[..]) {
            bail!("an inserted key of entry {i} does not read back");
        }
    }
    for chunk in written.chunks(LOAD_BATCH as usize) {
        let mut batch = WriteBatch::with_capacity(chunk.len());
        for (_, k) in chunk {
            batch.delete(TABLE, k.clone());
        }
        db.backend.write_batch(&batch)?;
    }
    db.backend.sync()?;
    let mut sorted = ms.clone();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let mean_ms = sorted.iter().sum::<f64>() / n as f64;
    Ok(crate::WriteReport {
        batches: n,
        keys_per_batch: o.write_keys,
        mean_ms,
        p50_ms: sorted[n / 2],
        p99_ms: sorted[(n * 99 / 100).min(n - 1)],
        us_per_key: mean_ms * 1e3 / o.write_keys as f64,
    })
}
