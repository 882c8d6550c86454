//! Loads a table and prints how long each step took: `cargo run --release --example load -- PATH`.

use std::collections::HashMap;
use std::time::Instant;

use deltalog_core::{SnapshotAt, Table};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let uri = std::env::args().nth(1).ok_or("usage: load TABLE_URI")?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let start = Instant::now();
        let table = Table::open(&uri, &HashMap::new()).await?;
        let snapshot = table.snapshot(SnapshotAt::Latest).await?;
        let loaded = start.elapsed();
        let (_, batches) = snapshot.files(false).await?;
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let listed = start.elapsed();
        let (_, with_stats) = snapshot.files(true).await?;
        let stats_rows: usize = with_stats.iter().map(|b| b.num_rows()).sum();
        println!(
            "version {} files {rows}: load {loaded:?}, file list {listed:?}, with stats {:?} ({stats_rows})",
            snapshot.version(),
            start.elapsed()
        );
        Ok(())
    })
}
