//! Percent-encoding of URL path segments and query values. Resource ids hold `/`, `[`, `,` and
//! `=`, so every client that puts one in a URL encodes it, and every server that reads one from
//! a raw query decodes it: one implementation for all of them.

/// Encodes everything but the unreserved characters of RFC 3986.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes and `+` (a space in query strings); malformed escapes stay as they are.
pub fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (bytes[i], escaped) {
            (_, Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', None) => {
                out.push(b' ');
                i += 1;
            }
            (b, None) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_ids_survive_a_round_trip() {
        let rid = "fs::File[web 1,path=/etc/motd],v=3";
        assert_eq!(encode(rid), "fs%3A%3AFile%5Bweb%201%2Cpath%3D%2Fetc%2Fmotd%5D%2Cv%3D3");
        assert_eq!(decode(&encode(rid)), rid);
        assert_eq!(decode("a+b%2"), "a b%2");
        assert_eq!(decode("%zz%41"), "%zzA");
    }
}
