//! `sitemapd cluster status`: a cluster's members, partition owners and
//! write log (its size, leader and replicas' lag), read from its NATS
//! servers without joining.

use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;
use sitemapd_cluster::ClusterStatus;

use crate::cli::{ClusterArgs, ClusterCommand};

/// Runs `cluster`.
pub(crate) fn run(args: &ClusterArgs) -> Result<ExitCode> {
    let ClusterCommand::Status(status) = &args.command;
    let runtime = crate::settings::runtime()?;
    let read = runtime
        .block_on(ClusterStatus::read(&status.cluster))
        .with_context(|| format!("cannot read the cluster on {}", status.cluster.join(",")))?;
    if status.json {
        let members: Vec<_> = read
            .members
            .iter()
            .map(|m| json!({"id": m.id, "advertise": m.advertise, "owns": read.owned_by(&m.id)}))
            .collect();
        let log = read.log.as_ref().ok().and_then(Option::as_ref).map(|log| {
            let replicas: Vec<_> = log
                .replicas
                .iter()
                .map(|r| json!({"server": r.server, "current": r.current, "lag": r.lag}))
                .collect();
            json!({"messages": log.messages, "bytes": log.bytes, "leader": log.leader, "replicas": replicas})
        });
        println!(
            "{}",
            json!({"partitions": read.partitions, "members": members, "owners": read.owners,
                   "free": read.free(), "log": log})
        );
    } else {
        print!("{read}");
    }
    Ok(ExitCode::SUCCESS)
}
