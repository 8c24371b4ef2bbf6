//! Compiles every `.proto` file under the workspace's `proto/` directory with
//! protox (pure Rust, so no `protoc` on the build machine) and generates the
//! prost messages and (with the `grpc` feature) the tonic clients and servers
//! from the result. The encoded
//! file descriptor set is written next to the generated code for gRPC
//! reflection.

use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The directory at run time, not `env!` at the build script's compile
    // time: a build script compiled in one checkout and reused by another
    // (a target directory shared by git worktrees) must read this
    // checkout's protos.
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR")?;
    let root = Path::new(&manifest_dir).join("../../proto");
    let root = root.canonicalize().map_err(|e| format!("proto directory {}: {e}", root.display()))?;
    println!("cargo:rerun-if-changed={}", root.display());

    // Other services add their files to the same package directory; compile
    // whatever is there rather than a fixed list.
    let mut files = Vec::new();
    collect_protos(&root, &mut files)?;
    files.sort();
    if files.is_empty() {
        return Err(format!("no .proto files under {}", root.display()).into());
    }
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    let relative: Vec<PathBuf> =
        files.iter().map(|f| f.strip_prefix(&root).map(Path::to_path_buf)).collect::<Result<_, _>>()?;

    let fds = protox::compile(&relative, [&root])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out_dir.join("battlelog_descriptor.bin"), prost::Message::encode_to_vec(&fds))?;

    generate(fds)?;
    Ok(())
}

/// The prost messages, and with the `grpc` feature the tonic clients and
/// servers too.
#[cfg(feature = "grpc")]
fn generate(fds: prost_types::FileDescriptorSet) -> std::io::Result<()> {
    tonic_prost_build::configure().build_client(true).build_server(true).compile_fds(fds)
}

#[cfg(not(feature = "grpc"))]
fn generate(fds: prost_types::FileDescriptorSet) -> std::io::Result<()> {
    prost_build::Config::new().compile_fds(fds)
}

fn collect_protos(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            collect_protos(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
    Ok(())
}
