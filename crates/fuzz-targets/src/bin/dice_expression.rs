//! libFuzzer's harness of the `dice_expression` target (`fuzz_targets::dice_expr`);
//! build and run it with `scripts/fuzz` (FUZZING.md).
#![no_main]
// libFuzzer's entry point, which the macro defines, is `#[no_mangle]`.
#![allow(unsafe_code)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::dice_expr::run(data));
