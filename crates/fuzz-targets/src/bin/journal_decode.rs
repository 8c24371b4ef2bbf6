//! libFuzzer's harness of the `journal_decode` target (`fuzz_targets::journal_decode`);
//! build and run it with `scripts/fuzz` (FUZZING.md).
#![no_main]
// libFuzzer's entry point, which the macro defines, is `#[no_mangle]`.
#![allow(unsafe_code)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::journal_decode::run(data));
