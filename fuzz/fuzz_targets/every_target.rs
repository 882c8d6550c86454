//! Every fuzz target in one binary: the one named by `$DELTALOG_FUZZ_TARGET` (a name of
//! `deltalog_fuzz::TARGETS`). `.ci/fuzz` builds only this binary, which links once instead of
//! once per target.
#![no_main]

use std::sync::OnceLock;

use deltalog_fuzz::{EntryPoint, TARGETS};

static TARGET: OnceLock<EntryPoint> = OnceLock::new();

fn chosen_target() -> EntryPoint {
    let name = std::env::var("DELTALOG_FUZZ_TARGET").unwrap_or_default();
    match TARGETS.iter().find(|(target, _)| *target == name) {
        Some((_, entry_point)) => *entry_point,
        None => {
            let names: Vec<&str> = TARGETS.iter().map(|(target, _)| *target).collect();
            eprintln!(
                "DELTALOG_FUZZ_TARGET must name a fuzz target ({}), not {name:?}",
                names.join(", ")
            );
            std::process::exit(2)
        }
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| TARGET.get_or_init(chosen_target)(data));
