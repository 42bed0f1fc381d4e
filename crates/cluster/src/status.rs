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
        writeln!(f, "free {} ({})", free.len(), ranges(&free))
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
            }],
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
             gone  (not live: its entries lapse)  owns 1 (1)\nfree 1 (2)\n"
        );
    }
}
