//! IP address helpers for the network plugins and typedef validators.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Parses `addr[/prefix]`.
pub(crate) fn parse_cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (a, p) = match s.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (s, None),
    };
    let ip: IpAddr = a.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let prefix = match p {
        Some(p) => {
            if let Ok(n) = p.parse::<u8>() {
                n
            } else if let Ok(mask) = p.parse::<Ipv4Addr>() {
                u32::from(mask).count_ones() as u8
            } else {
                return None;
            }
        }
        None => max,
    };
    if prefix > max {
        return None;
    }
    Some((ip, prefix))
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v) => u32::from(v) as u128,
        IpAddr::V6(v) => u128::from(v),
    }
}

fn from_u128(v4: bool, n: u128) -> IpAddr {
    if v4 { IpAddr::V4(Ipv4Addr::from(n as u32)) } else { IpAddr::V6(Ipv6Addr::from(n)) }
}

pub(crate) fn network(ip: IpAddr, prefix: u8) -> IpAddr {
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    let host_bits = bits - prefix as u32;
    let n = to_u128(ip);
    let mask = if host_bits >= 128 { 0 } else { !((1u128 << host_bits) - 1) };
    from_u128(ip.is_ipv4(), n & mask & if bits == 32 { 0xffff_ffff } else { u128::MAX })
}

pub(crate) fn netmask(v4: bool, prefix: u8) -> IpAddr {
    let bits = if v4 { 32 } else { 128 };
    let host_bits = bits - prefix as u32;
    let all = if v4 { 0xffff_ffffu128 } else { u128::MAX };
    let mask = if host_bits >= 128 { 0 } else { all & !((1u128 << host_bits) - 1) };
    from_u128(v4, mask)
}

pub(crate) fn add(ip: IpAddr, n: i64) -> Option<IpAddr> {
    let base = to_u128(ip);
    let v = if n >= 0 { base.checked_add(n as u128)? } else { base.checked_sub(n.unsigned_abs() as u128)? };
    if ip.is_ipv4() && v > u32::MAX as u128 {
        return None;
    }
    Some(from_u128(ip.is_ipv4(), v))
}

pub(crate) fn is_network(s: &str) -> bool {
    parse_cidr(s).is_some_and(|(ip, p)| network(ip, p) == ip)
}
