//! Where the service keeps its data and how it is tuned: one struct the CLI fills from flags
//! and environment, and the data-dir layout (`store/` for sled, `index/` for tantivy).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Default data directory, relative to the working directory.
pub const DEFAULT_DATA_DIR: &str = "./data";
/// Default address `serve` listens on.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";
/// Default sled page cache. sled's resident memory can reach several times this figure.
pub const DEFAULT_CACHE_BYTES: u64 = 256 << 20;

/// The layout of a data directory.
#[derive(Debug, Clone)]
pub struct DataDir(PathBuf);

impl DataDir {
    pub fn new(path: impl Into<PathBuf>) -> DataDir {
        DataDir(path.into())
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn store(&self) -> PathBuf {
        self.0.join("store")
    }
    pub fn index(&self) -> PathBuf {
        self.0.join("index")
    }
}

/// Settings of `serve`.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub data_dir: DataDir,
    pub addr: SocketAddr,
    pub cache_bytes: u64,
}
