//! The host's own addresses, which the proxy ([`super::proxy`]) never dials for a name: a
//! confined agent would reach every service of the host that listens on them, its public
//! address included (only private ranges are refused by class). Two sources, both asked at
//! each request (an address may come or go): every interface's addresses and broadcast
//! addresses (`getifaddrs`: IPv4 and IPv6, up or down), and the kernel's own answer for any
//! other (an address it lets a socket bind to is delivered here: a local route such as
//! `ip route add local 203.0.113.0/24 dev lo` lists none on an interface). IPv6 forms that
//! carry an IPv4 address (mapped, compatible, NAT64, 6to4) are read as that address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Every address of this machine's interfaces, with their broadcast addresses. Empty when
/// the kernel will not say (then only [`binds_here`] answers).
#[allow(unsafe_code)]
pub fn interface_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list it allocated into `list`, which is read only until
    // the freeifaddrs below and never after.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return out;
    }
    let mut at = list;
    while !at.is_null() {
        // SAFETY: `at` is a node of the list getifaddrs returned (not yet freed); its address
        // pointers are null or point at a sockaddr of the family they say.
        let (addr, broad, next) = unsafe { ((*at).ifa_addr, (*at).ifa_ifu, (*at).ifa_next) };
        for sa in [addr, broad] {
            // SAFETY: as above; the family decides which sockaddr the pointer holds.
            if let Some(ip) = unsafe { sockaddr_ip(sa) } {
                out.push(ip);
            }
        }
        at = next;
    }
    // SAFETY: the list from getifaddrs, freed once.
    unsafe { libc::freeifaddrs(list) };
    out.sort();
    out.dedup();
    out
}

/// The address in `sa` (IPv4 or IPv6), if it is one.
///
/// # Safety
/// `sa` is null or points at a valid sockaddr of the family it names.
#[allow(unsafe_code)]
unsafe fn sockaddr_ip(sa: *const libc::sockaddr) -> Option<IpAddr> {
    if sa.is_null() {
        return None;
    }
    match i32::from((*sa).sa_family) {
        libc::AF_INET => Some(IpAddr::V4(Ipv4Addr::from(u32::from_be((*sa.cast::<libc::sockaddr_in>()).sin_addr.s_addr)))),
        libc::AF_INET6 => Some(IpAddr::V6(Ipv6Addr::from((*sa.cast::<libc::sockaddr_in6>()).sin6_addr.s6_addr))),
        _ => None,
    }
}

/// Does the kernel deliver `ip` to this machine (a socket may bind to it)? Not asked where
/// the host binds to any address (`ip_nonlocal_bind`), which would answer yes to all.
pub fn binds_here(ip: IpAddr) -> bool {
    use rustix::net::{bind, socket, AddressFamily, SocketType};
    let (family, knob) = match ip {
        IpAddr::V4(_) => (AddressFamily::INET, "/proc/sys/net/ipv4/ip_nonlocal_bind"),
        IpAddr::V6(_) => (AddressFamily::INET6, "/proc/sys/net/ipv6/ip_nonlocal_bind"),
    };
    if std::fs::read_to_string(knob).is_ok_and(|v| v.trim() != "0") {
        return false;
    }
    socket(family, SocketType::STREAM, None).is_ok_and(|s| bind(&s, &std::net::SocketAddr::new(ip, 0)).is_ok())
}

/// The IPv4 address an IPv6 one carries: mapped (`::ffff:a.b.c.d`), compatible
/// (`::a.b.c.d`), NAT64 (`64:ff9b::/96`, `64:ff9b:1::/48`) or 6to4 (`2002:AABB:CCDD::/48`).
pub fn carried_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, ..] => Some(low),
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0, ..] | [0x64, 0xff9b, 1, ..] => Some(low),
        [0x2002, a, b, ..] => Some(Ipv4Addr::new((a >> 8) as u8, a as u8, (b >> 8) as u8, b as u8)),
        _ => None,
    }
}

/// Is `ip` this machine's, by `own` (its interfaces' addresses) or the kernel's word?
pub fn is_own(ip: IpAddr, own: &[IpAddr]) -> bool {
    let v4 = match ip {
        IpAddr::V6(v6) => carried_v4(v6),
        IpAddr::V4(v4) => Some(v4),
    };
    let mut forms = vec![ip];
    forms.extend(v4.map(IpAddr::V4).filter(|v| *v != ip));
    forms.iter().any(|a| own.contains(a) || a.is_unspecified() || binds_here(*a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_interface_address_is_the_hosts_own_in_every_form() {
        let own = interface_addresses();
        assert!(own.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)), "{own:?}");
        for ip in &own {
            assert!(is_own(*ip, &own), "{ip}");
            if let IpAddr::V4(v4) = ip {
                for v6 in [v4.to_ipv6_mapped(), v4.to_ipv6_compatible()] {
                    assert!(is_own(IpAddr::V6(v6), &own), "{v6}");
                }
                let o = v4.octets();
                let nat64 = Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, u16::from_be_bytes([o[0], o[1]]), u16::from_be_bytes([o[2], o[3]]));
                let six_to_four = Ipv6Addr::new(0x2002, u16::from_be_bytes([o[0], o[1]]), u16::from_be_bytes([o[2], o[3]]), 0, 0, 0, 0, 1);
                assert!(is_own(IpAddr::V6(nat64), &own) && is_own(IpAddr::V6(six_to_four), &own), "{v4}");
            }
        }
        // A listed address counts whatever the kernel says; a foreign one does not.
        let listed: IpAddr = "203.0.113.9".parse().unwrap();
        assert!(is_own(listed, &[listed]));
        assert!(!is_own("198.51.100.77".parse().unwrap(), &own) || own.iter().any(|a| a.to_string() == "198.51.100.77"));
        assert!(is_own("0.0.0.0".parse().unwrap(), &[]) && is_own("::".parse().unwrap(), &[]));
    }
}
