//! libFuzzer's harness of the `bearer_token` target (`fuzz_targets::token`);
//! build and run it with `scripts/fuzz` (FUZZING.md).
#![no_main]
// libFuzzer's entry point, which the macro defines, is `#[no_mangle]`.
#![allow(unsafe_code)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::token::run(data));
