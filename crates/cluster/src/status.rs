//! The cluster as any client sees it, without joining: its partition count,
//! live members and each partition's owner (`sitemapd cluster status`).

use crate::ClusterError;
use crate::buckets::{Buckets, Member};
use crate::plan::Owner;
use std::fmt;

/// A cluster's state, read from its buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterStatus {
    /// The cluster's partition count.
    pub partitions: u16,
    /// The live members, sorted by id.
    pub members: Vec<Member>,
    /// Each partition's owner's id; `None` when free.
    pub owners: Vec<Option<String>>,
    /// The write log's stream: `Ok(None)` before a node has made it, an
    /// error (as text) when it could not be read (while it has no leader).
    pub log: Result<Option<LogStatus>, String>,
}

/// The write log's stream as JetStream reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogStatus {
    /// Messages it holds (entries, their chunks and takeover records).
    pub messages: u64,
    /// Bytes it holds.
    pub bytes: u64,
    /// The server that leads it (takes its appends); `None` while it has no
    /// leader.
    pub leader: Option<String>,
    /// The other servers that hold a copy.
    pub replicas: Vec<Replica>,
}

/// A server holding a copy of the log besides its leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replica {
    /// The server's name.
    pub server: String,
    /// Whether it is up to date with the leader.
    pub current: bool,
    /// Messages it is behind the leader, when known.
    pub lag: Option<u64>,
}

impl ClusterStatus {
    /// Reads the status of the cluster on `servers`.
    pub async fn read(servers: &[String]) -> Result<ClusterStatus, ClusterError> {
        let js = crate::connect::jetstream(servers, "sitemapd-status").await?;
        let buckets = Buckets::existing(&js).await?;
        let partitions = buckets.partitions().await?.ok_or(ClusterError::NoCluster)?;
        let members = buckets.members().await?;
        let owners = buckets
            .owners(partitions)
            .await?
            .into_iter()
            .map(|owner| match owner {
                Owner::Free => None,
                Owner::Node { node, .. } => Some(node),
            })
            .collect();
        Ok(ClusterStatus {
            partitions,
            members,
            owners,
            log: LogStatus::read(&js).await.map_err(|e| e.to_string()),
        })
    }

    /// The partitions member `id` owns.
    pub fn owned_by(&self, id: &str) -> Vec<u16> {
        (0..self.partitions)
            .filter(|&p| self.owners[usize::from(p)].as_deref() == Some(id))
            .collect()
    }

    /// The partitions no member owns.
    pub fn free(&self) -> Vec<u16> {
        (0..self.partitions)
            .filter(|&p| self.owners[usize::from(p)].is_none())
            .collect()
    }
}

impl LogStatus {
    /// The log stream's state; `None` when no node has made it yet.
    async fn read(js: &async_nats::jetstream::Context) -> Result<Option<LogStatus>, ClusterError> {
        use async_nats::jetstream::ErrorCode;
        use async_nats::jetstream::context::GetStreamErrorKind;
        let stream = match js.get_stream(crate::log::STREAM).await {
            Ok(stream) => stream,
            Err(e)
                if matches!(e.kind(), GetStreamErrorKind::JetStream(j)
                    if j.error_code() == ErrorCode::STREAM_NOT_FOUND) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(ClusterError::jetstream("reading the write log's stream", e)),
        };
        let info = stream.cached_info();
        let cluster = info.cluster.clone().unwrap_or_default();
        Ok(Some(LogStatus {
            messages: info.state.messages,
            bytes: info.state.bytes,
            leader: cluster.leader,
            replicas: cluster
                .replicas
                .into_iter()
                .map(|r| Replica {
                    server: r.name,
                    current: r.current,
                    lag: r.lag,
                })
                .collect(),
        }))
    }
}

impl fmt::Display for LogStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "log {} messages, {} bytes, leader {}",
            self.messages,
            self.bytes,
            self.leader.as_deref().unwrap_or("none")
        )?;
        for r in &self.replicas {
            let state = if r.current { "current" } else { "behind" };
            write!(f, "; {} {state}", r.server)?;
            if let Some(lag) = r.lag {
                write!(f, " (lag {lag})")?;
            }
        }
        Ok(())
    }
}

/// `1-3,7,9-10` for `[1, 2, 3, 7, 9, 10]`; `none` when empty.
fn ranges(partitions: &[u16]) -> String {
    if partitions.is_empty() {
        return "none".into();
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < partitions.len() {
        let start = partitions[i];
        let mut end = start;
        while i + 1 < partitions.len() && partitions[i + 1] == end + 1 {
            i += 1;
            end = partitions[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

impl fmt::Display for ClusterStatus {
    /// A table for people: one line per member with the partitions it owns,
    /// then the free ones, and owners that are not live members.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "partitions {}, members {}",
            self.partitions,
            self.members.len()
        )?;
        for m in &self.members {
            let owned = self.owned_by(&m.id);
            writeln!(
                f,
                "  {}  {}  owns {} ({})",
                m.id,
                m.advertise,
                owned.len(),
                ranges(&owned)
            )?;
        }
        let mut gone: Vec<&str> = self
            .owners
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|o| !self.members.iter().any(|m| m.id == *o))
            .collect();
        gone.sort();
        gone.dedup();
        for id in gone {
            let owned = self.owned_by(id);
            writeln!(
                f,
                "  {id}  (not live: its entries lapse)  owns {} ({})",
                owned.len(),
                ranges(&owned)
            )?;
        }
        let free = self.free();
        writeln!(f, "free {} ({})", free.len(), ranges(&free))?;
        match &self.log {
            Ok(Some(log)) => writeln!(f, "{log}"),
            Ok(None) => writeln!(f, "log not made yet"),
            Err(e) => writeln!(f, "log unreadable now: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_print_as_ranges() {
        assert_eq!(ranges(&[]), "none");
        assert_eq!(ranges(&[4]), "4");
        assert_eq!(ranges(&[1, 2, 3, 7, 9, 10]), "1-3,7,9-10");
    }

    #[test]
    fn the_table_names_owners_that_are_not_live() {
        let status = ClusterStatus {
            partitions: 4,
            members: vec![Member {
                id: "a".into(),
                advertise: "127.0.0.1:7071".into(),
                http: None,
            }],
            log: Ok(None),
            owners: vec![
                Some("a".into()),
                Some("gone".into()),
                None,
                Some("a".into()),
            ],
        };
        assert_eq!(
            status.to_string(),
            "partitions 4, members 1\n  a  127.0.0.1:7071  owns 2 (0,3)\n  \
             gone  (not live: its entries lapse)  owns 1 (1)\nfree 1 (2)\nlog not made yet\n"
        );
    }

    #[test]
    fn the_log_line_names_its_leader_and_how_far_each_replica_lags() {
        let log = LogStatus {
            messages: 12,
            bytes: 3400,
            leader: Some("n2".into()),
            replicas: vec![
                Replica {
                    server: "n1".into(),
                    current: true,
                    lag: None,
                },
                Replica {
                    server: "n3".into(),
                    current: false,
                    lag: Some(5),
                },
            ],
        };
        assert_eq!(
            log.to_string(),
            "log 12 messages, 3400 bytes, leader n2; n1 current; n3 behind (lag 5)"
        );
        let leaderless = LogStatus {
            leader: None,
            replicas: Vec::new(),
            ..log
        };
        assert_eq!(
            leaderless.to_string(),
            "log 12 messages, 3400 bytes, leader none"
        );
    }
}
