//! libFuzzer's harness of the `export_audit` target (`fuzz_targets::export_audit`);
//! build and run it with `scripts/fuzz` (FUZZING.md).
#![no_main]
// libFuzzer's entry point, which the macro defines, is `#[no_mangle]`.
#![allow(unsafe_code)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::export_audit::run(data));
