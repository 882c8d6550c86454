//! Replays the fuzz seeds (`fuzz/seeds/<target>/`) and every input that once crashed a fuzz
//! target (`fuzz/regressions/<target>/`) through the targets' entry points, on the stable
//! toolchain: none may panic.

#[path = "../../../../fuzz/src/lib.rs"]
mod fuzz_entry_points;

use std::path::Path;

#[test]
fn every_seed_and_regression_input_is_handled_without_a_panic() {
    let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut replayed = 0;
    for (target, entry_point) in fuzz_entry_points::TARGETS {
        for kind in ["seeds", "regressions"] {
            let Ok(entries) = std::fs::read_dir(fuzz_dir.join(kind).join(target)) else {
                continue;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                entry_point(&std::fs::read(&path).unwrap());
                replayed += 1;
            }
        }
    }
    assert!(
        replayed >= 30,
        "only {replayed} inputs found under {}",
        fuzz_dir.display()
    );
}
