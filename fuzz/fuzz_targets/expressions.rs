#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| deltalog_fuzz::expressions(data));
