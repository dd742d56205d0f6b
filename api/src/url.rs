//! Percent-encoding of URL path segments and query values. Resource ids hold `/`, `[`, `,` and
//! `=`, so every client that puts one in a URL encodes it, and every server that reads one from
//! a raw query decodes it: one implementation for all of them.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// Everything but the unreserved characters of RFC 3986 (letters, digits, `-`, `_`, `.`, `~`).
const RESERVED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// Encodes everything but the unreserved characters of RFC 3986.
pub fn encode(text: &str) -> String {
    utf8_percent_encode(text, RESERVED).to_string()
}

/// Decodes `%XX` escapes and `+` (a space in query strings); malformed escapes stay as they are.
pub fn decode(text: &str) -> String {
    // `+` is a space only in the text as sent; a `%2B` decodes to a real `+`.
    let spaced = text.replace('+', " ");
    percent_decode_str(&spaced).decode_utf8_lossy().into_owned()
}

/// `?k=v&...` with keys and values percent-encoded, or the empty string without pairs.
pub fn query_string(pairs: &[(String, String)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = pairs.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
    format!("?{}", parts.join("&"))
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
        assert_eq!(decode("a%2Bb+c"), "a+b c");
        assert_eq!(decode(&encode("ü+ /")), "ü+ /");
    }
}
