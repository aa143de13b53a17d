//! MDBX's index: the branch pages of every B-tree, read into the page cache on demand
//! (`BenchBackend::warm_index`).
//!
//! A running node with a state larger than its memory keeps its database's index cached
//! and its data cold: the index is small and every lookup passes through it. RocksDB keeps
//! its index and filter blocks in the memory of its table readers, which neither its
//! block-cache clear nor a page-cache drop evicts; MDBX's index is its branch pages, which
//! are ordinary pages of the file, so a page-cache drop evicts them with the data. Reading
//! them back after a drop makes a cold measurement the same for both backends: data cold,
//! index warm.
//!
//! MDBX's API has no walk of the branch pages alone (`mdbx_env_warmup` and `mdbx_env_chk`
//! read every page, data included), so this reads the file format by hand: the format of
//! the libmdbx that `mdbx-sys` =13.11.0 builds (data format 3, little-endian). Every page
//! read is checked (type, page number, and per tree the count of branch pages against the
//! tree's own record), so a misread fails with an error instead of warming the wrong pages.

use ethrex_storage::StoreError;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The page header: txnid (8), DUPFIX key size (2), flags (2), lower and upper bounds of
/// the free space (2 + 2), page number (4); the node offsets follow.
const PAGE_HEADER: usize = 20;
const FLAGS_AT: usize = 10;
const LOWER_AT: usize = 12;
const PGNO_AT: usize = 16;
const P_BRANCH: u16 = 0x01;
const P_LEAF: u16 = 0x02;
const P_META: u16 = 0x08;
/// The page-type bits; the others (spilled, loose, frozen) are transaction states.
const P_TYPE: u16 = 0x3f;
/// A meta page holds, after the header: magic (8), txnid (8), flags (4), geometry (20),
/// the GC and main trees (48 each), the canary (32), the signature (8) and the txnid
/// again (8), equal to the first once the meta is complete.
const META_TXNID_A: usize = 8;
const META_MAIN_TREE: usize = 88;
const META_TXNID_B: usize = 176;
const METAS: u64 = 3;
/// A node: data size or child page number (4), flags (1), extra (1), key size (2), key,
/// data.
const NODE_HEADER: usize = 8;
/// A leaf node whose data is a table's tree record (a named table in the main tree).
const N_TREE: u8 = 0x02;
/// A tree record: flags (2), height (2), DUPFIX size (4), root (4), branch, leaf and
/// large page counts (4 each), sequence, items, last modification (8 each).
const TREE_RECORD: usize = 48;
/// Concurrent reads of one level: enough to keep a drive's queue busy.
const READERS: usize = 16;

/// What `warm` read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexPages {
    /// Trees walked (the main tree and every named table).
    pub trees: usize,
    /// Branch pages read.
    pub pages: u64,
}

/// One B-tree: its root and height, and how many branch pages its record counts.
#[derive(Debug, Clone, Copy)]
struct Tree {
    root: u32,
    height: u16,
    branch_pages: u32,
}

impl Tree {
    fn parse(b: &[u8]) -> Self {
        Self { height: u16_at(b, 2), root: u32_at(b, 8), branch_pages: u32_at(b, 12) }
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn invalid(path: &Path, what: String) -> StoreError {
    StoreError::Invalid(format!("reading MDBX's index in {}: {what}", path.display()))
}

/// The data file, read a page at a time.
struct Pages<'a> {
    file: File,
    path: &'a Path,
    size: usize,
}

impl Pages<'_> {
    fn read(&self, pgno: u32, buf: &mut [u8]) -> Result<(), StoreError> {
        self.file
            .read_exact_at(buf, pgno as u64 * self.size as u64)
            .map_err(|e| StoreError::Io(format!("{} page {pgno}", self.path.display()), e))
    }

    /// Reads page `pgno` into `buf`, checking that it is that page and of type `kind`.
    fn read_checked(&self, pgno: u32, kind: u16, buf: &mut [u8]) -> Result<(), StoreError> {
        self.read(pgno, buf)?;
        let (flags, at) = (u16_at(buf, FLAGS_AT) & P_TYPE, u32_at(buf, PGNO_AT));
        if flags != kind || at != pgno {
            return Err(invalid(
                self.path,
                format!("page {pgno} has type {flags:#x} and number {at}, expected type {kind:#x}"),
            ));
        }
        Ok(())
    }

    /// The nodes of a branch or leaf page, each as the rest of the page from its header.
    fn nodes<'b>(&self, page: &'b [u8]) -> Result<Vec<&'b [u8]>, StoreError> {
        let count = u16_at(page, LOWER_AT) as usize / 2;
        (0..count)
            .map(|i| {
                let at = u16_at(page, PAGE_HEADER + 2 * i) as usize + PAGE_HEADER;
                page.get(at..).filter(|n| n.len() >= NODE_HEADER).ok_or_else(|| {
                    invalid(self.path, format!("node {i} at {at} lies outside its page"))
                })
            })
            .collect()
    }

    /// The newest complete meta page's main tree.
    fn main_tree(&self) -> Result<Tree, StoreError> {
        let mut page = vec![0; self.size];
        let mut newest: Option<(u64, Tree)> = None;
        for pgno in 0..METAS as u32 {
            self.read_checked(pgno, P_META, &mut page)?;
            let meta = &page[PAGE_HEADER..];
            let (a, b) = (u64_at(meta, META_TXNID_A), u64_at(meta, META_TXNID_B));
            if a == b && a != 0 && newest.is_none_or(|(t, _)| a > t) {
                newest = Some((a, Tree::parse(&meta[META_MAIN_TREE..])));
            }
        }
        newest.map(|(_, t)| t).ok_or_else(|| invalid(self.path, "no complete meta page".into()))
    }

    /// The tree records of the named tables: the main tree's leaves, read whole (the
    /// main tree holds one entry per table).
    fn tables(&self, main: Tree) -> Result<Vec<Tree>, StoreError> {
        let mut level = vec![main.root];
        let mut page = vec![0; self.size];
        let mut tables = Vec::new();
        for height in (1..=main.height).rev() {
            let mut next = Vec::new();
            for &pgno in &level {
                let kind = if height == 1 { P_LEAF } else { P_BRANCH };
                self.read_checked(pgno, kind, &mut page)?;
                for node in self.nodes(&page)? {
                    if height > 1 {
                        next.push(u32_at(node, 0));
                    } else if node[4] & N_TREE != 0 {
                        let (data, key) = (u32_at(node, 0) as usize, u16_at(node, 6) as usize);
                        let record = node
                            .get(NODE_HEADER + key..NODE_HEADER + key + data)
                            .filter(|r| r.len() == TREE_RECORD)
                            .ok_or_else(|| {
                                invalid(self.path, format!("a table record in page {pgno}"))
                            })?;
                        tables.push(Tree::parse(record));
                    }
                }
            }
            level = next;
        }
        Ok(tables)
    }

    /// Reads every branch page of `tree`, level by level from the root, and returns how
    /// many. The pages under the lowest branch level are leaves: not read.
    fn warm_tree(&self, tree: Tree) -> Result<u64, StoreError> {
        let mut level = vec![tree.root];
        let mut read = 0u64;
        for height in (2..=tree.height).rev() {
            let last = height == 2;
            let chunk = level.len().div_ceil(READERS).max(1);
            let children = std::thread::scope(|s| {
                let workers: Vec<_> = level
                    .chunks(chunk)
                    .map(|pages| {
                        s.spawn(move || -> Result<Vec<u32>, StoreError> {
                            let mut page = vec![0; self.size];
                            let mut children = Vec::new();
                            for &pgno in pages {
                                self.read_checked(pgno, P_BRANCH, &mut page)?;
                                if !last {
                                    children
                                        .extend(self.nodes(&page)?.iter().map(|n| u32_at(n, 0)));
                                }
                            }
                            Ok(children)
                        })
                    })
                    .collect();
                let mut children = Vec::new();
                for w in workers {
                    children.extend(w.join().expect("an index reader panicked")?);
                }
                Ok::<_, StoreError>(children)
            })?;
            read += level.len() as u64;
            level = children;
        }
        if read != tree.branch_pages as u64 {
            return Err(invalid(
                self.path,
                format!(
                    "the tree at page {} has {} branch pages by its record, {read} by its walk",
                    tree.root, tree.branch_pages
                ),
            ));
        }
        Ok(read)
    }
}

/// Reads every branch page of the main tree and of every table in the data file `path`
/// (pages of `page_size` bytes) into the page cache, as of its newest commit. Nothing
/// may commit meanwhile.
pub fn warm(path: &Path, page_size: usize) -> Result<IndexPages, StoreError> {
    let file = File::open(path).map_err(|e| StoreError::Io(path.display().to_string(), e))?;
    let pages = Pages { file, path, size: page_size };
    let main = pages.main_tree()?;
    let mut warmed = IndexPages::default();
    for tree in std::iter::once(main).chain(pages.tables(main)?) {
        warmed.trees += 1;
        warmed.pages += pages.warm_tree(tree)?;
    }
    Ok(warmed)
}

#[cfg(test)]
mod tests {
    use crate::BenchBackend;
    use ethrex_storage::mdbx::{MdbxBackend, MdbxOptions};
    use ethrex_storage::{KvBackend, Table, WriteBatch};
    use mdbx_sys as ffi;

    /// A deterministic spread of 32-byte keys (a multiplicative hash of `i`).
    fn key(i: u64) -> Vec<u8> {
        (0..4u64)
            .flat_map(|j| {
                (i.wrapping_add(j) ^ 0x9e37).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes()
            })
            .collect()
    }

    /// Tables of different heights, written in several commits with deletes between, so
    /// the newest tree lives in pages copied on write and the file holds free pages.
    fn fill(db: &MdbxBackend) {
        for round in 0..3u64 {
            let mut batch = WriteBatch::new();
            for i in round * 40_000..(round + 1) * 40_000 {
                batch.put(Table::StorageTrie, key(i), vec![i as u8; 120]);
                if i % 4 == 0 {
                    batch.put(Table::Storage, key(i ^ 0xffff), vec![1; 32]);
                }
            }
            for i in (0..round * 40_000).step_by(3) {
                batch.delete(Table::StorageTrie, key(i));
            }
            batch.put(Table::Code, vec![1; 32], vec![0x60; 100]);
            db.write_batch(&batch).unwrap();
        }
    }

    /// Branch pages of the main tree and every table, and the greatest height, by
    /// MDBX's own statistics (`mdbx_dbi_stat` in a read transaction).
    fn mdbx_counts(db: &MdbxBackend) -> (u64, u32) {
        let check = |rc: i32, what: &str| assert_eq!(rc, ffi::MDBX_SUCCESS, "{what}");
        let mut txn = std::ptr::null_mut();
        // SAFETY: the environment is open for as long as `db`; the transaction is
        // aborted below, and every pointer passed outlives its call.
        unsafe {
            check(
                ffi::mdbx_txn_begin_ex(
                    db.raw_env(),
                    std::ptr::null_mut(),
                    ffi::MDBX_TXN_RDONLY,
                    &mut txn,
                    std::ptr::null_mut(),
                ),
                "begin",
            );
            let mut stats = Vec::new();
            let names = std::iter::once(None)
                .chain(Table::ALL.iter().map(|t| Some(std::ffi::CString::new(t.name()).unwrap())));
            for name in names {
                let mut dbi = 0;
                let name_ptr = name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr());
                check(ffi::mdbx_dbi_open(txn, name_ptr, 0, &mut dbi), "open");
                let mut stat: ffi::MDBX_stat = std::mem::zeroed();
                check(
                    ffi::mdbx_dbi_stat(txn, dbi, &mut stat, std::mem::size_of::<ffi::MDBX_stat>()),
                    "stat",
                );
                stats.push(stat);
            }
            ffi::mdbx_txn_abort(txn);
            let pages = stats.iter().map(|s| s.ms_branch_pages).sum();
            (pages, stats.iter().map(|s| s.ms_depth).max().unwrap())
        }
    }

    #[test]
    fn reads_every_branch_page_that_mdbx_counts() {
        for page_size in [4096, 16384] {
            let dir = tempfile::tempdir().unwrap();
            let options = MdbxOptions { page_size: Some(page_size), ..MdbxOptions::default() };
            let db = MdbxBackend::open_with(dir.path(), options).unwrap();
            fill(&db);
            let (pages, height) = mdbx_counts(&db);
            if page_size == 4096 {
                assert!(height >= 3, "a tree of height {height} has no branch level to walk down");
            }
            let warmed = super::warm(&dir.path().join("mdbx.dat"), page_size).unwrap();
            assert_eq!(warmed.trees, 1 + Table::ALL.len(), "page size {page_size}");
            assert_eq!(warmed.pages, pages, "page size {page_size}");
            assert_eq!(db.warm_index().unwrap(), pages * page_size as u64);
        }
    }

    #[test]
    fn a_wrong_page_size_or_a_foreign_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let db = MdbxBackend::open(dir.path()).unwrap();
        fill(&db);
        let file = dir.path().join("mdbx.dat");
        let err = super::warm(&file, 8192).unwrap_err().to_string();
        assert!(err.contains("reading MDBX's index") && err.contains("page 1"), "{err}");
        let other = dir.path().join("other");
        std::fs::write(&other, vec![0xab; 3 * 4096]).unwrap();
        let err = super::warm(&other, 4096).unwrap_err().to_string();
        assert!(err.contains("page 0 has type"), "{err}");
        let err = super::warm(&dir.path().join("missing"), 4096).unwrap_err().to_string();
        assert!(err.contains("missing"), "{err}");
    }

    #[test]
    fn a_checkpoint_leaves_out_the_free_pages_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let db = MdbxBackend::open(dir.path().join("db").as_path()).unwrap();
        fill(&db);
        let used = db.used_bytes().unwrap();
        db.checkpoint(&dir.path().join("copy")).unwrap();
        let copy = MdbxBackend::open(dir.path().join("copy").as_path()).unwrap();
        assert!(copy.used_bytes().unwrap() < used, "{} >= {used}", copy.used_bytes().unwrap());
        for i in [1u64, 2, 3, 40_001, 119_999] {
            assert_eq!(
                copy.get(Table::StorageTrie, &key(i)).unwrap(),
                db.get(Table::StorageTrie, &key(i)).unwrap(),
                "{i}"
            );
        }
        assert_eq!(copy.get(Table::StorageTrie, &key(0)).unwrap(), None, "deleted");
        assert_eq!(mdbx_counts(&copy), mdbx_counts(&db));
        assert_eq!(
            super::warm(&dir.path().join("copy/mdbx.dat"), 4096).unwrap().pages,
            mdbx_counts(&copy).0
        );
        let err = db.checkpoint(&dir.path().join("copy")).unwrap_err().to_string();
        assert!(err.contains("copying MDBX to"), "{err}");
    }
}
