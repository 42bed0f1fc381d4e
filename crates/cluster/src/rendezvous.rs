//! Which member each partition belongs to: rendezvous (highest random
//! weight) hashing with bounded loads, sticky. Every node computes the same
//! answer from the same member list and current owners. A member has room
//! for `P / N` partitions, rounded up for the first `P mod N` to fill up
//! and down for the others, so every member holds within one partition of
//! an even share. A live owner keeps its partitions while it has room (its
//! heaviest first); each other partition goes to the member of highest
//! weight for it that has room, taking the (partition, member) pairs from
//! the heaviest down. A leave moves the leaver's share only; a join moves
//! to the newcomer what the others hold over their new bounds, and at most
//! one more (the tests check both on random memberships).

/// A member's weight for `partition`: a hash of both, the same on every
/// node and every build (FNV-1a, then a 64-bit finaliser to spread it).
fn weight(member: &str, partition: u16) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in member.bytes().chain(partition.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // splitmix64's finaliser.
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

/// The member each of `partitions` partitions belongs to (index `p` for
/// partition `p`), given each partition's current owner (`owners[p]`;
/// `None`, or a missing entry, when free): empty without members. The
/// order of `members` does not matter; a member named twice counts once.
///
/// A live owner keeps its partitions, those of highest weight first, as
/// long as it has room; the rest go to the member of highest weight with
/// room. So a leave moves only the leaver's share, and a join moves to the
/// newcomer what the others have over their new bounds.
pub fn targets<'a>(
    partitions: u16,
    members: impl IntoIterator<Item = &'a str>,
    owners: &[Option<&str>],
) -> Vec<&'a str> {
    let mut members: Vec<&str> = members.into_iter().collect();
    members.sort_unstable();
    members.dedup();
    if members.is_empty() {
        return Vec::new();
    }
    let mut placing = Placing::new(usize::from(partitions), members.len());
    // Kept: each live owner's partitions, heaviest first.
    let mut kept: Vec<(u64, u16, usize)> = (0..partitions)
        .filter_map(|q| {
            let owner = owners.get(usize::from(q)).copied().flatten()?;
            let m = members.binary_search(&owner).ok()?;
            Some((weight(members[m], q), q, m))
        })
        .collect();
    kept.sort_unstable_by(heaviest_first);
    for (_, q, m) in kept {
        placing.place(q, m);
    }
    // The others: every pair, heaviest first.
    let mut pairs: Vec<(u64, u16, usize)> = (0..partitions)
        .filter(|q| placing.owner[usize::from(*q)].is_none())
        .flat_map(|q| (0..members.len()).map(move |m| (q, m)))
        .map(|(q, m)| (weight(members[m], q), q, m))
        .collect();
    pairs.sort_unstable_by(heaviest_first);
    for (_, q, m) in pairs {
        placing.place(q, m);
    }
    placing
        .owner
        .into_iter()
        .map(|m| members[m.expect("every partition placed: the bounds sum to P")])
        .collect()
}

/// Heaviest first; ties (which need equal hashes) go to the lower
/// partition, then the greater member.
fn heaviest_first(a: &(u64, u16, usize), b: &(u64, u16, usize)) -> std::cmp::Ordering {
    b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(b.2.cmp(&a.2))
}

/// Partitions placed so far, under the bounds: every member holds
/// `P / N` partitions, the first `P mod N` to get there one more.
struct Placing {
    owner: Vec<Option<usize>>,
    load: Vec<usize>,
    floor: usize,
    ceilings_left: usize,
}

impl Placing {
    fn new(partitions: usize, members: usize) -> Placing {
        Placing {
            owner: vec![None; partitions],
            load: vec![0; members],
            floor: partitions / members,
            ceilings_left: partitions % members,
        }
    }

    /// Gives partition `q` to member `m` if `q` is free and `m` has room.
    fn place(&mut self, q: u16, m: usize) {
        let room = self.floor + usize::from(self.ceilings_left > 0);
        let slot = &mut self.owner[usize::from(q)];
        if slot.is_some() || self.load[m] >= room {
            return;
        }
        *slot = Some(m);
        self.load[m] += 1;
        if self.load[m] == self.floor + 1 {
            self.ceilings_left -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The placement over `members` from `owners` (none: all free).
    fn of(partitions: u16, members: &[String], owners: &[String]) -> Vec<String> {
        let owners: Vec<Option<&str>> = owners.iter().map(|o| Some(o.as_str())).collect();
        targets(partitions, members.iter().map(String::as_str), &owners)
            .into_iter()
            .map(String::from)
            .collect()
    }

    fn loads(targets: &[String], members: &[String]) -> Vec<usize> {
        members
            .iter()
            .map(|m| targets.iter().filter(|t| *t == m).count())
            .collect()
    }

    #[test]
    fn no_member_no_target() {
        assert!(targets(3, std::iter::empty(), &[]).is_empty());
    }

    #[test]
    fn sixteen_partitions_over_four_nodes_are_four_each() {
        let members: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        assert_eq!(loads(&of(16, &members, &[]), &members), [4, 4, 4, 4]);
    }

    proptest! {
        /// Every member holds P/N partitions, rounded up or down, whatever
        /// the owners before; the order of the list never matters; a join
        /// moves what the newcomer gets and at most one more; a leave moves
        /// the leaver's share only; a placement is kept as it is.
        #[test]
        fn shares_are_even_and_moves_are_few(
            ids in proptest::collection::btree_set("[a-z0-9-]{1,12}", 2..8),
            newcomer in "[a-z0-9-]{1,12}",
            leaver in 0usize..8,
            partitions in 1u16..300,
        ) {
            prop_assume!(!ids.contains(&newcomer));
            let before: Vec<String> = ids.iter().cloned().collect();
            let old = of(partitions, &before, &[]);
            let (n, p) = (before.len(), usize::from(partitions));
            for load in loads(&old, &before) {
                prop_assert!(load == p / n || load == p.div_ceil(n), "{load} of {p} over {n}");
            }
            let mut reversed = before.clone();
            reversed.reverse();
            prop_assert_eq!(&of(partitions, &reversed, &[]), &old);
            prop_assert_eq!(&of(partitions, &before, &old), &old);

            let mut joined = before.clone();
            joined.insert(0, newcomer.clone());
            let new = of(partitions, &joined, &old);
            for load in loads(&new, &joined) {
                prop_assert!(load == p / (n + 1) || load == p.div_ceil(n + 1));
            }
            let moved = old.iter().zip(&new).filter(|(o, n)| o != n).count();
            let share = new.iter().filter(|t| **t == newcomer).count();
            prop_assert!(moved <= share + 1, "{moved} moved for a share of {share}");

            let leaver = before[leaver % n].clone();
            let left: Vec<String> = before.iter().filter(|m| **m != leaver).cloned().collect();
            let after = of(partitions, &left, &old);
            let moved = old.iter().zip(&after).filter(|(o, a)| o != a).count();
            let share = old.iter().filter(|t| **t == leaver).count();
            prop_assert_eq!(moved, share);
        }
    }
}
