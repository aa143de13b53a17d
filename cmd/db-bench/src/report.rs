//! The study's tables: our points beside the published ones.

use crate::{Point, Report};
use std::fmt::Write;

/// One published measurement: random point reads, 16-byte keys, 32-byte values, 1.6
/// billion entries (RocksDB 85 GB, MDBX 125 GB), NVMe RAID-0, cold.
#[derive(Debug, Clone, Copy)]
pub struct Published {
    /// Reader threads.
    pub threads: usize,
    /// Reads per second.
    pub iops: f64,
    /// Mean latency, µs.
    pub mean_us: f64,
}

/// The published figures for `db` (`mdbx` or `rocksdb`).
pub fn published(db: &str) -> &'static [Published] {
    const fn p(threads: usize, iops: f64, mean_us: f64) -> Published {
        Published { threads, iops, mean_us }
    }
    const ROCKSDB: [Published; 5] = [
        p(2, 12e3, 160.0),
        p(4, 30e3, 130.0),
        p(8, 85e3, 92.0),
        p(16, 180e3, 90.0),
        p(32, 320e3, 110.0),
    ];
    const MDBX: [Published; 5] = [
        p(2, 21e3, 85.0),
        p(4, 48e3, 84.0),
        p(8, 97e3, 83.0),
        p(16, 180e3, 86.0),
        p(32, 360e3, 90.0),
    ];
    match db {
        "rocksdb" => &ROCKSDB,
        "mdbx" => &MDBX,
        _ => &[],
    }
}

fn published_at(db: &str, threads: usize) -> Option<Published> {
    published(db).iter().copied().find(|p| p.threads == threads)
}

fn iops(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}K", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// The report as Markdown: the load, one table per database with the published figures
/// beside ours, and MDBX against RocksDB at each thread count.
pub fn text(r: &Report) -> String {
    let p = &r.params;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## db-bench: random point reads, {} entries ({}-byte keys, {}-byte values), {} s per point, {}, {} cores\n",
        p.entries,
        p.key_size,
        p.value_size,
        p.seconds,
        match (p.cold, p.cold_index) {
            (false, _) => "warm",
            (true, false) => "cold (caches dropped before each point, index read back)",
            (true, true) => "cold (caches dropped before each point, index too)",
        },
        p.cores
    );
    let _ = writeln!(
        s,
        "| load | entries | seconds | on disk | bytes / entry |\n|---|---|---|---|---|"
    );
    for (db, l) in &r.load {
        let _ = writeln!(
            s,
            "| {db} | {} | {} | {:.2} GB | {:.1} |",
            l.entries,
            if l.reused { "reused".to_string() } else { format!("{:.1}", l.seconds) },
            l.bytes_on_disk as f64 / 1e9,
            l.bytes_on_disk as f64 / l.entries as f64
        );
    }
    let _ = writeln!(s, "| published | 1.6 billion | | RocksDB 85 GB, MDBX 125 GB | 53, 78 |\n");
    for db in r.load.keys() {
        let _ = writeln!(
            s,
            "### {db}\n\n| threads | IOPS | mean µs | p50 µs | p99 µs | CPU % | published IOPS | published mean µs |\n|---|---|---|---|---|---|---|---|"
        );
        for pt in r.points.iter().filter(|pt| &pt.db == db) {
            let (pi, pl) = match published_at(db, pt.threads) {
                Some(x) => (iops(x.iops), format!("{:.0}", x.mean_us)),
                None => ("—".into(), "—".into()),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {pi} | {pl} |",
                pt.threads,
                iops(pt.iops),
                pt.mean_us,
                pt.p50_us,
                pt.p99_us,
                pt.cpu_pct
            );
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "Published CPU use: RocksDB 1.1-24%, MDBX 0.8-13% of 16 cores.\n");
    if !r.writes.is_empty() {
        let _ = writeln!(
            s,
            "### Writes: batches of new keys at random places, one write (transaction) each\n\n| db | batches | keys / batch | mean ms | p50 ms | p99 ms | µs / key |\n|---|---|---|---|---|---|---|"
        );
        for (db, w) in &r.writes {
            let _ = writeln!(
                s,
                "| {db} | {} | {} | {:.1} | {:.1} | {:.1} | {:.2} |",
                w.batches, w.keys_per_batch, w.mean_ms, w.p50_ms, w.p99_ms, w.us_per_key
            );
        }
        let _ = writeln!(s);
    }
    let pair = |threads: usize| -> Option<(&Point, &Point)> {
        let find = |db: &str| r.points.iter().find(|pt| pt.db == db && pt.threads == threads);
        Some((find("mdbx")?, find("rocksdb")?))
    };
    let mut threads: Vec<usize> = r.points.iter().map(|pt| pt.threads).collect();
    threads.dedup();
    if threads.iter().any(|&t| pair(t).is_some()) {
        let _ = writeln!(
            s,
            "### MDBX / RocksDB\n\n| threads | IOPS ratio | mean latency ratio | published IOPS ratio | published latency ratio |\n|---|---|---|---|---|"
        );
        for t in threads {
            let Some((m, k)) = pair(t) else { continue };
            let published = published_at("mdbx", t).zip(published_at("rocksdb", t));
            let (pi, pl) = match published {
                Some((pm, pk)) => (
                    format!("{:.2}x", pm.iops / pk.iops),
                    format!("{:.2}x", pm.mean_us / pk.mean_us),
                ),
                None => ("—".into(), "—".into()),
            };
            let _ = writeln!(
                s,
                "| {t} | {:.2}x | {:.2}x | {pi} | {pl} |",
                m.iops / k.iops,
                m.mean_us / k.mean_us
            );
        }
        let _ = writeln!(s);
    }
    s
}
