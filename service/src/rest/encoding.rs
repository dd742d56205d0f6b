//! Content encodings a client accepts, for the files the server holds already compressed (the
//! console's site, Swagger UI's bundle).

use axum::http::{HeaderMap, header};

/// Whether `Accept-Encoding` allows `token` (`br`, `gzip`): listed, or `*`, without `q=0`.
pub fn accepts(request: &HeaderMap, token: &str) -> bool {
    let accepted = request.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok());
    accepted.flat_map(|v| v.split(',')).any(|item| {
        let mut parts = item.split(';').map(str::trim);
        let name = parts.next().unwrap_or_default();
        let refused = parts.any(|p| p.strip_prefix("q=").and_then(|q| q.parse::<f32>().ok()) == Some(0.0));
        (name.eq_ignore_ascii_case(token) || name == "*") && !refused
    })
}

/// `gzip` decompressed (a copy the binary's own build wrote, so a failure is a broken build).
pub fn gunzip(gzip: &[u8]) -> Vec<u8> {
    let mut plain = Vec::new();
    if let Err(e) = std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(gzip), &mut plain) {
        panic!("an embedded gzip copy cannot be read: {e}");
    }
    plain
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accept(value: &str) -> HeaderMap {
        HeaderMap::from_iter([(header::ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap())])
    }

    #[test]
    fn an_encoding_is_accepted_when_listed_or_starred_and_not_refused() {
        assert!(accepts(&accept("gzip, deflate, br, zstd"), "br"));
        assert!(accepts(&accept("GZIP"), "gzip"));
        assert!(accepts(&accept("*"), "br"));
        assert!(!accepts(&accept("br;q=0, gzip"), "br"));
        assert!(!accepts(&accept("deflate"), "gzip"));
        assert!(!accepts(&HeaderMap::new(), "gzip"));
    }

    #[test]
    fn gunzip_gives_back_what_was_compressed() {
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gzip, b"swagger").unwrap();
        assert_eq!(gunzip(&gzip.finish().unwrap()), b"swagger");
    }
}
