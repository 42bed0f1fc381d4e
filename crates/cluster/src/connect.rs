//! Connecting to the cluster's NATS servers.

use std::time::Duration;

use async_nats::jetstream;

use crate::ClusterError;

/// How long connecting may take.
const CONNECT: Duration = Duration::from_secs(10);

/// A JetStream context on a connection to any of `servers`, named `name`
/// in the servers' monitoring.
pub(crate) async fn jetstream(
    servers: &[String],
    name: &str,
) -> Result<jetstream::Context, ClusterError> {
    let client = async_nats::ConnectOptions::new()
        .name(name)
        .connection_timeout(CONNECT)
        .connect(servers)
        .await
        .map_err(|source| ClusterError::Connect {
            servers: servers.join(","),
            source,
        })?;
    Ok(jetstream::new(client))
}
