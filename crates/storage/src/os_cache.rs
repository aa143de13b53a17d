//! Dropping the operating system's page cache for a database, so the next reads go to
//! the drive: the cold-cache protocol of the import bench.
//!
//! As root, `/proc/sys/vm/drop_caches` empties the whole page cache (after a `sync`, so
//! dirty pages are written first and can be dropped too). Without that permission each
//! file of the database gets `posix_fadvise(POSIX_FADV_DONTNEED)`, which drops its clean,
//! unmapped pages. Neither evicts pages a process has mapped (MDBX maps its file): those
//! stay resident until the mapping goes.

use std::path::Path;

/// How the page cache was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheDrop {
    /// `/proc/sys/vm/drop_caches`: the whole page cache.
    DropCaches,
    /// `posix_fadvise(DONTNEED)` on every file of the database.
    Fadvise,
}

impl CacheDrop {
    /// The name reports use: `drop_caches` or `fadvise`.
    pub fn name(self) -> &'static str {
        match self {
            CacheDrop::DropCaches => "drop_caches",
            CacheDrop::Fadvise => "fadvise",
        }
    }
}

/// Drops the page cache holding the files under `dir`: all of it when permitted, else
/// the files' own pages. Fails only when neither works.
pub fn drop_page_cache(dir: &Path) -> std::io::Result<CacheDrop> {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    if std::fs::write("/proc/sys/vm/drop_caches", b"1").is_ok() {
        return Ok(CacheDrop::DropCaches);
    }
    fadvise_dontneed(dir)?;
    Ok(CacheDrop::Fadvise)
}

fn fadvise_dontneed(dir: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            fadvise_dontneed(&path)?;
            continue;
        }
        let file = std::fs::File::open(&path)?;
        // SAFETY: the descriptor is open for the duration of the call; offset 0 and
        // length 0 cover the whole file.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_by_one_method_or_the_other() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a"), vec![7u8; 1 << 16]).unwrap();
        let how = drop_page_cache(dir.path()).unwrap();
        // Whichever way, the files are untouched.
        assert!(matches!(how, CacheDrop::DropCaches | CacheDrop::Fadvise));
        assert_eq!(std::fs::read(dir.path().join("sub/a")).unwrap(), vec![7u8; 1 << 16]);
        fadvise_dontneed(dir.path()).unwrap();
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_panic() {
        assert!(fadvise_dontneed(Path::new("/nonexistent/ethrex-db")).is_err());
    }
}
