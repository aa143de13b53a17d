//! Dropping the operating system's page cache for a database, so the next reads go to
//! the drive: the cold-cache protocol of the import bench.
//!
//! As root, `/proc/sys/vm/drop_caches` empties the whole page cache (after a `sync`, so
//! dirty pages are written first and can be dropped too). Without that permission each
//! file of the database gets `posix_fadvise(POSIX_FADV_DONTNEED)`, which drops its clean,
//! unmapped pages. Neither evicts pages a process has mapped (MDBX maps its file): those
//! stay resident until the mapping lets go of them, which `release_mapped_pages` asks
//! for (the MDBX backend calls it from `BenchBackend::drop_caches`).

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

/// Lets go of this process's mapped pages of `file` (`madvise(MADV_DONTNEED)` on each of
/// its mappings listed in `/proc/self/maps`), so a following page-cache drop can evict
/// them. The data is untouched: the mappings are shared file mappings, so the next access
/// reads the page back from the page cache or the file (dirty pages stay in the page
/// cache). Returns the bytes of mappings released.
pub fn release_mapped_pages(file: &Path) -> std::io::Result<u64> {
    let file = std::fs::canonicalize(file)?;
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let mut released = 0;
    for line in maps.lines() {
        // address perms offset dev inode pathname
        let mut fields = line.splitn(6, ' ');
        let range = fields.next().unwrap_or_default();
        let path = fields.nth(4).map(str::trim_start).unwrap_or_default();
        if Path::new(path) != file {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end)) =
            (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16))
        else {
            continue;
        };
        // SAFETY: the range is a whole mapping of this process, page-aligned as the
        // kernel lists it; MADV_DONTNEED on a shared file mapping drops only the page
        // table entries, never data.
        let rc =
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        released += (end - start) as u64;
    }
    Ok(released)
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
    fn released_mappings_keep_their_data() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mapped");
        std::fs::write(&path, vec![3u8; 1 << 16]).unwrap();
        let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        // SAFETY: a fresh shared mapping of the whole 64 KiB file, unmapped below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                1 << 16,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED);
        // SAFETY: within the mapping.
        unsafe { *(map as *mut u8).add(100) = 9 };
        assert_eq!(release_mapped_pages(&path).unwrap(), 1 << 16);
        // SAFETY: within the mapping; the write survived the release.
        assert_eq!(unsafe { *(map as *const u8).add(100) }, 9);
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(map, 1 << 16) };
        assert_eq!(std::fs::read(&path).unwrap()[100], 9);
        assert_eq!(release_mapped_pages(&path).unwrap(), 0, "no mapping left");
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_panic() {
        assert!(fadvise_dontneed(Path::new("/nonexistent/ethrex-db")).is_err());
    }
}
