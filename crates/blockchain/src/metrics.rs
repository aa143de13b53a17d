//! The import's Prometheus metrics: stage timings, gas, head, the block cache's hit rate.

use crate::import::{BlockTimings, ExecutionPath};
use ethrex_vm::CachingDb;

/// Records the hits and misses of one block's state cache.
pub(crate) fn record_cache_stats<DB>(cache: &CachingDb<DB>) {
    let stats = cache.stats();
    metrics::counter!("ethrex_state_cache_hits_total").increment(stats.hits);
    metrics::counter!("ethrex_state_cache_misses_total").increment(stats.misses);
}

/// Records one imported block: its stage timings, gas, path and the new head.
pub(crate) fn record_metrics(t: &BlockTimings, gas: u64, number: u64, path: ExecutionPath) {
    for (stage, d) in [
        ("recover", t.recover),
        ("warmer", t.warmer),
        ("exec", t.exec),
        ("validate", t.validate),
        ("merkle", t.merkle),
        ("store", t.store),
        ("total", t.total),
    ] {
        metrics::histogram!("ethrex_block_import_seconds", "stage" => stage)
            .record(d.as_secs_f64());
    }
    metrics::counter!("ethrex_gas_imported_total").increment(gas);
    metrics::counter!("ethrex_blocks_imported_total", "path" => path.describe()).increment(1);
    metrics::gauge!("ethrex_head_number").set(number as f64);
    if t.total.as_secs_f64() > 0.0 {
        metrics::gauge!("ethrex_last_block_ggas_per_second")
            .set(gas as f64 / t.total.as_secs_f64() / 1e9);
    }
}
