//! The wire types of battlelog, generated at build time from `proto/` (see
//! `build.rs`).
//!
//! - [`v1`]: package `battlelog.v1` — messages, and with the default `grpc`
//!   feature the clients (`*_client`) and servers (`*_server`) of every
//!   service.
//! - [`battle`]: battle events to and from journal records and export JSON.
//! - [`error`] (feature `grpc`): the one error vocabulary — every error's
//!   reason, and the one place errors become gRPC statuses and back.
//! - [`FILE_DESCRIPTOR_SET`]: the encoded descriptors of all of it, for gRPC
//!   reflection.

pub mod battle;
#[cfg(feature = "grpc")]
pub mod error;

/// Package `battlelog.v1`.
#[allow(missing_docs, clippy::all, clippy::pedantic, unused_qualifications, missing_debug_implementations)]
pub mod v1 {
    // What `tonic::include_proto!` expands to, written out so that the
    // messages build without tonic (feature `grpc` off).
    include!(concat!(env!("OUT_DIR"), "/battlelog.v1.rs"));
}

/// The encoded `FileDescriptorSet` of every compiled `.proto` file, with
/// imports, for `tonic-reflection`.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/battlelog_descriptor.bin"));
