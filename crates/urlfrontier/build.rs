//! Compiles `proto/urlfrontier.proto` with protox, a protobuf compiler
//! written in Rust, so that a fresh clone builds with cargo alone (no
//! `protoc` binary), and generates the messages (prost) and the client and
//! server (tonic) into `OUT_DIR`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/urlfrontier.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .emit_rerun_if_changed(false)
        .compile_fds(descriptors)?;
    Ok(())
}
