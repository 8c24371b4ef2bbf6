//! Fair shares of a pool: how much of it one peer (a client address, a
//! token, a tenant) may hold at once, so that no single peer takes all of
//! it from the others.
//!
//! [`Shares`] counts what each key holds; [`Shares::try_take`] hands out a
//! [`Share`] while the key is under its limit, and the share gives its unit
//! back when dropped. A key holding nothing is forgotten, so the map is no
//! larger than the pool itself.
//!
//! [`peer_key`] is the address a share is counted under: an IPv4 address
//! as it is, an IPv6 address by its /64 prefix (one subscriber is given a
//! whole /64, so counting single IPv6 addresses would be no share at all).

use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};

/// Units held per key, each key at most `limit`. Cheap to clone; clones
/// share the counts.
#[derive(Debug)]
pub struct Shares<K: Hash + Eq> {
    limit: usize,
    held: Mutex<HashMap<K, usize>>,
}

impl<K: Hash + Eq + Clone> Shares<K> {
    /// Shares of at most `limit` units per key.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self { limit, held: Mutex::new(HashMap::new()) })
    }

    /// The most one key may hold.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// One more unit for `key`, or `None` when it already holds its limit.
    pub fn try_take(self: &Arc<Self>, key: K) -> Option<Share<K>> {
        let mut held = self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = held.entry(key.clone()).or_insert(0);
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(Share { shares: Arc::clone(self), key })
    }

    /// What `key` holds now.
    pub fn held(&self, key: &K) -> usize {
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(key).copied().unwrap_or(0)
    }

    /// How many keys hold something.
    pub fn keys(&self) -> usize {
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }

    fn give_back(&self, key: &K) {
        let mut held = self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(count) = held.get_mut(key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(key);
            }
        }
    }
}

/// One unit of a key's share, given back when dropped.
#[derive(Debug)]
pub struct Share<K: Hash + Eq + Clone> {
    shares: Arc<Shares<K>>,
    key: K,
}

impl<K: Hash + Eq + Clone> Share<K> {
    /// The key it is counted under.
    pub fn key(&self) -> &K {
        &self.key
    }
}

impl<K: Hash + Eq + Clone> Drop for Share<K> {
    fn drop(&mut self) {
        self.shares.give_back(&self.key);
    }
}

/// The key a client address is counted under: IPv4 as it is (an IPv4
/// address mapped into IPv6 too), IPv6 by its /64 prefix.
pub fn peer_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_takes_up_to_its_limit_and_a_unit_given_back_is_taken_again() {
        let shares = Shares::new(2);
        let first = shares.try_take("a").expect("1 of 2");
        let second = shares.try_take("a").expect("2 of 2: at the limit");
        assert!(shares.try_take("a").is_none(), "3 of 2: over the limit");
        assert_eq!(shares.held(&"a"), 2);
        let other = shares.try_take("b").expect("another key is untouched");
        drop(first);
        let again = shares.try_take("a").expect("a unit given back is taken again");
        assert!(shares.try_take("a").is_none());
        drop((second, again, other));
        assert_eq!(shares.keys(), 0, "keys holding nothing are forgotten");
    }

    #[test]
    fn ipv6_addresses_share_by_their_64_prefix_and_mapped_ipv4_as_ipv4() {
        let one: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let same_64: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let other_64: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(peer_key(one), peer_key(same_64));
        assert_ne!(peer_key(one), peer_key(other_64));
        let mapped: IpAddr = "::ffff:127.0.0.2".parse().unwrap();
        assert_eq!(peer_key(mapped), "127.0.0.2".parse::<IpAddr>().unwrap());
        assert_ne!(peer_key("127.0.0.1".parse().unwrap()), peer_key("127.0.0.2".parse().unwrap()));
    }
}
