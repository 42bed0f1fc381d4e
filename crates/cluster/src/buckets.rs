//! The cluster's JetStream key-value buckets, and reading them:
//! - `sitemapd_cluster`: the cluster's record (its partition count), kept;
//! - `sitemapd_members`: one entry per live node (its id → its advertised
//!   address), rewritten by its heartbeat, gone a lease after the last;
//! - `sitemapd_owners`: one entry per owned partition (`p.N` → node id),
//!   written by compare-and-set, gone a lease after its owner's last renewal.

use std::time::Duration;

use async_nats::jetstream::{self, kv};
use futures_util::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use crate::ClusterError;
use crate::plan::Owner;

const CLUSTER: &str = "sitemapd_cluster";
const MEMBERS: &str = "sitemapd_members";
const OWNERS: &str = "sitemapd_owners";
/// The cluster record's key holding the partition count.
const PARTITIONS: &str = "partitions";
/// Bucket reads in flight at once.
const READS: usize = 32;

/// A live node of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Member {
    /// Its node id.
    pub id: String,
    /// Its URLFrontier address (`host:port`).
    pub advertise: String,
    /// Its HTTP API's address (`host:port`), when it says.
    pub http: Option<String>,
}

/// A member entry's value.
#[derive(Serialize, Deserialize)]
struct MemberValue {
    advertise: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    http: Option<String>,
}

/// A partition's key in the owners bucket.
pub(crate) fn owner_key(partition: u16) -> String {
    format!("p.{partition}")
}

/// The three buckets, opened.
pub(crate) struct Buckets {
    cluster: kv::Store,
    pub(crate) members: kv::Store,
    pub(crate) owners: kv::Store,
}

impl Buckets {
    /// Opens the buckets, creating those missing with `replicas` replicas and
    /// entries that live `lease`.
    pub(crate) async fn open(
        js: &jetstream::Context,
        replicas: usize,
        lease: Duration,
    ) -> Result<Buckets, ClusterError> {
        let config = |bucket: &str, max_age: Duration| kv::Config {
            bucket: bucket.to_string(),
            history: 1,
            max_age,
            num_replicas: replicas,
            storage: jetstream::stream::StorageType::File,
            ..Default::default()
        };
        Ok(Buckets {
            cluster: bucket(js, config(CLUSTER, Duration::ZERO)).await?,
            members: bucket(js, config(MEMBERS, lease)).await?,
            owners: bucket(js, config(OWNERS, lease)).await?,
        })
    }

    /// Opens the buckets a cluster made; [`ClusterError::NoCluster`] if
    /// none did (another failure, such as a bucket without a leader, is
    /// said as it is).
    pub(crate) async fn existing(js: &jetstream::Context) -> Result<Buckets, ClusterError> {
        let get = |name: &'static str| async move {
            js.get_key_value(name).await.map_err(|e| {
                let text = format!(
                    "{e}: {}",
                    std::error::Error::source(&e).map_or_else(String::new, |s| s.to_string())
                );
                if text.contains("not found") {
                    ClusterError::NoCluster
                } else {
                    ClusterError::jetstream(format!("opening bucket {name}"), text)
                }
            })
        };
        Ok(Buckets {
            cluster: get(CLUSTER).await?,
            members: get(MEMBERS).await?,
            owners: get(OWNERS).await?,
        })
    }

    /// The cluster's partition count; records `partitions` if none is.
    pub(crate) async fn settle_partitions(&self, partitions: u16) -> Result<u16, ClusterError> {
        match self
            .cluster
            .create(PARTITIONS, partitions.to_string().into())
            .await
        {
            Ok(_) => Ok(partitions),
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => self
                .partitions()
                .await?
                .ok_or_else(|| ClusterError::jetstream("reading the partition count", "missing")),
            Err(e) => Err(ClusterError::jetstream("recording the partition count", e)),
        }
    }

    /// The cluster's partition count, if recorded.
    pub(crate) async fn partitions(&self) -> Result<Option<u16>, ClusterError> {
        let value = self
            .cluster
            .get(PARTITIONS)
            .await
            .map_err(|e| ClusterError::jetstream("reading the partition count", e))?;
        value
            .map(|v| {
                std::str::from_utf8(&v)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| {
                        ClusterError::jetstream("reading the partition count", "not a number")
                    })
            })
            .transpose()
    }

    /// Writes (or rewrites) `member`'s entry.
    pub(crate) async fn announce(&self, member: &Member) -> Result<(), ClusterError> {
        let value = serde_json::to_vec(&MemberValue {
            advertise: member.advertise.clone(),
            http: member.http.clone(),
        })
        .expect("a member's entry serialises");
        self.members
            .put(&member.id, value.into())
            .await
            .map_err(|e| ClusterError::jetstream("announcing this node", e))?;
        Ok(())
    }

    /// The live members, sorted by id. An entry that does not read is
    /// skipped (it is not one a node wrote).
    pub(crate) async fn members(&self) -> Result<Vec<Member>, ClusterError> {
        let failed = |e: &dyn std::fmt::Display| ClusterError::jetstream("listing members", e);
        let ids: Vec<String> = self
            .members
            .keys()
            .await
            .map_err(|e| failed(&e))?
            .try_collect()
            .await
            .map_err(|e| failed(&e))?;
        let entries: Vec<_> = futures_util::stream::iter(ids)
            .map(|id| async move { (self.members.entry(id.clone()).await, id) })
            .buffered(READS)
            .collect()
            .await;
        let mut members = Vec::new();
        for (entry, id) in entries {
            let Some(entry) = entry.map_err(|e| failed(&e))? else {
                continue;
            };
            if entry.operation != kv::Operation::Put {
                continue;
            }
            if let Ok(value) = serde_json::from_slice::<MemberValue>(&entry.value) {
                members.push(Member {
                    id,
                    advertise: value.advertise,
                    http: value.http,
                });
            }
        }
        members.sort();
        Ok(members)
    }

    /// Every partition's owner entry.
    pub(crate) async fn owners(&self, partitions: u16) -> Result<Vec<Owner>, ClusterError> {
        futures_util::stream::iter(0..partitions)
            .map(|p| async move {
                let entry = self
                    .owners
                    .entry(owner_key(p))
                    .await
                    .map_err(|e| ClusterError::jetstream("reading partition owners", e))?;
                Ok(match entry {
                    Some(e) if e.operation == kv::Operation::Put => Owner::Node {
                        node: String::from_utf8_lossy(&e.value).into_owned(),
                        revision: e.revision,
                    },
                    _ => Owner::Free,
                })
            })
            .buffered(READS)
            .try_collect()
            .await
    }
}

/// The bucket of `config`: opened if it exists, else created (and opened if
/// another node created it meanwhile).
async fn bucket(js: &jetstream::Context, config: kv::Config) -> Result<kv::Store, ClusterError> {
    if let Ok(store) = js.get_key_value(config.bucket.clone()).await {
        return Ok(store);
    }
    let name = config.bucket.clone();
    match js.create_key_value(config).await {
        Ok(store) => Ok(store),
        Err(created) => js
            .get_key_value(name.clone())
            .await
            .map_err(|_| ClusterError::jetstream(format!("creating the bucket {name}"), created)),
    }
}
