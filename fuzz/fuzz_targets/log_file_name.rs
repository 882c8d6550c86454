#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| deltalog_fuzz::log_file_name_target(data));
