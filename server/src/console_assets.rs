//! The console's built files (wasm, JS glue, stylesheet, `public/`), served from memory.
//!
//! A site is what `scripts/build-console.sh` writes: `manifest.json` naming the content-hashed
//! script, wasm and stylesheet (`pkg/console.<hash>.wasm`), and next to each file its brotli
//! (`.br`) and gzip (`.gz`) copy when that is smaller. It comes from the binary (embedded by
//! `build.rs` when the site existed at compile time, without the files that have a gzip copy) or
//! from a directory given at run time.
//!
//! Responses: the copy the browser accepts (`Accept-Encoding`: brotli, then gzip, then as is,
//! decompressed from the gzip copy when only that is held),
//! `Vary: Accept-Encoding`, an `ETag` (answered with 304 when it matches), and
//! `Cache-Control: public, max-age=31536000, immutable` for hashed names (their content never
//! changes under that name), `no-cache` for the rest.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::Path;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/console_site.rs"));
}

pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// One built console, ready to serve.
pub struct Site {
    files: HashMap<String, Asset>,
    /// The URLs the page shell links to.
    pub assets: app::Assets,
    /// Where it came from, for the start-up log.
    pub origin: String,
}

struct Asset {
    /// `None` when only compressed copies are held (then there is a gzip copy).
    identity: Option<Bytes>,
    brotli: Option<Bytes>,
    gzip: Option<Bytes>,
    content_type: &'static str,
    etag: String,
    immutable: bool,
}

/// `manifest.json`: the hashed files, relative to the site root.
#[derive(serde::Deserialize)]
struct Manifest {
    js: String,
    wasm: String,
    css: String,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Encoding {
    Brotli,
    Gzip,
    Identity,
}

impl Site {
    /// The site compiled into this binary, if it was built before the server.
    pub fn embedded() -> Option<Result<Site, String>> {
        let manifest = embedded::MANIFEST?;
        let files = embedded::FILES.iter().map(|(path, bytes)| (path.to_string(), Bytes::from_static(bytes)));
        Some(Site::from_files(manifest, files, "embedded in the binary".into()))
    }

    /// A site directory built by `scripts/build-console.sh`, read into memory.
    pub fn load(dir: &Path) -> Result<Site, String> {
        let manifest_path = dir.join("manifest.json");
        let manifest = std::fs::read_to_string(&manifest_path).map_err(|e| {
            format!(
                "{}: {e} (build the console with scripts/build-console.sh --site {})",
                manifest_path.display(),
                dir.display()
            )
        })?;
        let mut files = Vec::new();
        read_dir(dir, dir, &mut files).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        Site::from_files(&manifest, files.into_iter(), dir.display().to_string())
    }

    fn from_files(
        manifest: &str,
        files: impl Iterator<Item = (String, Bytes)>,
        origin: String,
    ) -> Result<Site, String> {
        let manifest: Manifest =
            serde_json::from_str(manifest).map_err(|e| format!("{origin}: manifest.json is not valid: {e}"))?;
        let hashed = [&manifest.js, &manifest.wasm, &manifest.css];
        let mut all: HashMap<String, Bytes> = files.collect();
        let mut served = HashMap::new();
        let mut originals: Vec<String> =
            all.keys().filter(|p| !p.ends_with(".br") && !p.ends_with(".gz")).cloned().collect();
        let gzip_only = all.keys().filter_map(|p| p.strip_suffix(".gz")).filter(|p| !all.contains_key(*p));
        originals.extend(gzip_only.map(str::to_string).collect::<Vec<_>>());
        for path in originals {
            let identity = all.remove(&path);
            let brotli = all.remove(&format!("{path}.br"));
            let gzip = all.remove(&format!("{path}.gz"));
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            identity.as_ref().or(gzip.as_ref()).hash(&mut hasher);
            let asset = Asset {
                content_type: content_type(&path),
                etag: format!("\"{:016x}\"", hasher.finish()),
                immutable: hashed.contains(&&path),
                identity,
                brotli,
                gzip,
            };
            served.insert(path, asset);
        }
        for path in hashed {
            if !served.contains_key(path) {
                return Err(format!("{origin}: manifest.json names {path}, which is not in the site"));
            }
        }
        let url = |path: &str| format!("{}/{path}", app::BASE);
        let assets = app::Assets { js: url(&manifest.js), wasm: url(&manifest.wasm), css: url(&manifest.css) };
        Ok(Site { files: served, assets, origin })
    }

    /// Whether the site holds `path` (below `/console/`).
    pub fn has(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    /// Paths (below `/console/`) of the files outside `pkg/`, such as `favicon.svg`.
    pub fn public_files(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str).filter(|p| !p.starts_with(&format!("{}/", app::PKG_DIR)))
    }

    /// The answer to `GET /console/<path>`.
    pub fn respond(&self, path: &str, request: &HeaderMap) -> Response {
        let Some(asset) = self.files.get(path) else {
            return (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/plain")], format!("no console file {path}"))
                .into_response();
        };
        let encoding = [(Encoding::Brotli, asset.brotli.is_some()), (Encoding::Gzip, asset.gzip.is_some())]
            .into_iter()
            .find(|(encoding, present)| *present && accepts(request, *encoding))
            .map_or(Encoding::Identity, |(encoding, _)| encoding);
        let (body, etag) = match encoding {
            Encoding::Brotli => (asset.brotli.clone(), format!("{}-br\"", asset.etag.trim_end_matches('"'))),
            Encoding::Gzip => (asset.gzip.clone(), format!("{}-gz\"", asset.etag.trim_end_matches('"'))),
            Encoding::Identity => (Some(asset.identity()), asset.etag.clone()),
        };
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        let cache = if asset.immutable { IMMUTABLE } else { "no-cache" };
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
        if let Ok(value) = HeaderValue::from_str(&etag) {
            headers.insert(header::ETAG, value);
        }
        match encoding {
            Encoding::Brotli => headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("br")),
            Encoding::Gzip => headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip")),
            Encoding::Identity => None,
        };
        let unchanged = request
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
        if unchanged {
            return (StatusCode::NOT_MODIFIED, headers).into_response();
        }
        (headers, Body::from(body.unwrap_or_default())).into_response()
    }
}

impl Asset {
    /// The file as is: held, or decompressed from its gzip copy.
    fn identity(&self) -> Bytes {
        if let Some(identity) = &self.identity {
            return identity.clone();
        }
        Bytes::from(service::rest::encoding::gunzip(self.gzip.as_deref().unwrap_or_default()))
    }
}

/// Whether `Accept-Encoding` allows `encoding`.
fn accepts(request: &HeaderMap, encoding: Encoding) -> bool {
    match encoding {
        Encoding::Brotli => service::rest::encoding::accepts(request, "br"),
        Encoding::Gzip => service::rest::encoding::accepts(request, "gzip"),
        Encoding::Identity => true,
    }
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or_default() {
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "json" => "application/json",
        "html" => "text/html; charset=utf-8",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn read_dir(root: &Path, dir: &Path, files: &mut Vec<(String, Bytes)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            read_dir(root, &path, files)?;
        } else if let Ok(relative) = path.strip_prefix(root) {
            let relative = relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
            if relative != "manifest.json" {
                files.push((relative, Bytes::from(std::fs::read(&path)?)));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Site {
        let files = [
            ("pkg/console.aa.js", "js"),
            ("pkg/console.aa.js.br", "js-br"),
            ("pkg/console.aa.js.gz", "js-gz"),
            ("pkg/console.bb.wasm", "wasm"),
            ("pkg/console.bb.wasm.gz", "wasm-gz"),
            ("pkg/console.cc.css", "css"),
            ("favicon.svg", "<svg/>"),
        ];
        let manifest = r#"{"js": "pkg/console.aa.js", "wasm": "pkg/console.bb.wasm", "css": "pkg/console.cc.css"}"#;
        let files = files.into_iter().map(|(p, b)| (p.to_string(), Bytes::from_static(b.as_bytes())));
        Site::from_files(manifest, files, "test".into()).unwrap()
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (k.clone(), HeaderValue::from_str(v).unwrap())).collect()
    }

    async fn body(response: Response) -> String {
        String::from_utf8(axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap().to_vec()).unwrap()
    }

    #[tokio::test]
    async fn the_accepted_encoding_is_served_with_cache_headers() {
        let site = site();
        assert_eq!(site.assets.wasm, "/console/pkg/console.bb.wasm");
        let chromium = headers(&[(header::ACCEPT_ENCODING, "gzip, deflate, br, zstd")]);
        let response = site.respond("pkg/console.aa.js", &chromium);
        assert_eq!(response.headers()[header::CONTENT_ENCODING], "br");
        assert_eq!(response.headers()[header::CACHE_CONTROL], IMMUTABLE);
        assert_eq!(response.headers()[header::VARY], "accept-encoding");
        assert_eq!(body(response).await, "js-br");

        // No brotli copy: gzip; brotli refused with q=0: gzip; nothing accepted: as is.
        let response = site.respond("pkg/console.bb.wasm", &chromium);
        assert_eq!(response.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/wasm");
        let no_br = headers(&[(header::ACCEPT_ENCODING, "br;q=0, gzip")]);
        assert_eq!(body(site.respond("pkg/console.aa.js", &no_br)).await, "js-gz");
        let response = site.respond("pkg/console.aa.js", &HeaderMap::new());
        assert!(response.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(body(response).await, "js");

        // Unhashed files are revalidated; a matching ETag answers 304 without a body.
        let response = site.respond("favicon.svg", &chromium);
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-cache");
        let etag = response.headers()[header::ETAG].to_str().unwrap().to_string();
        let again = site.respond("favicon.svg", &headers(&[(header::IF_NONE_MATCH, &etag)]));
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(body(again).await, "");
        assert_eq!(site.respond("pkg/missing.js", &chromium).status(), StatusCode::NOT_FOUND);
        assert_eq!(site.public_files().collect::<Vec<_>>(), vec!["favicon.svg"]);
    }

    #[tokio::test]
    async fn a_file_held_only_compressed_is_decompressed_for_a_client_that_accepts_none() {
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut gzip, b"the wasm").unwrap();
        let gzip = gzip.finish().unwrap();
        let files = [
            ("pkg/console.aa.js", Bytes::from_static(b"js")),
            ("pkg/console.bb.wasm.gz", Bytes::from(gzip.clone())),
            ("pkg/console.bb.wasm.br", Bytes::from_static(b"wasm-br")),
            ("pkg/console.cc.css", Bytes::from_static(b"css")),
        ];
        let manifest = r#"{"js": "pkg/console.aa.js", "wasm": "pkg/console.bb.wasm", "css": "pkg/console.cc.css"}"#;
        let site =
            Site::from_files(manifest, files.into_iter().map(|(p, b)| (p.to_string(), b)), "test".into()).unwrap();
        let response = site.respond("pkg/console.bb.wasm", &HeaderMap::new());
        assert!(response.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/wasm");
        assert_eq!(body(response).await, "the wasm");
        let gzip_only = headers(&[(header::ACCEPT_ENCODING, "gzip")]);
        let response = site.respond("pkg/console.bb.wasm", &gzip_only);
        assert_eq!(response.headers()[header::CONTENT_ENCODING], "gzip");
        let served = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        assert_eq!(served.as_ref(), gzip.as_slice());
        let brotli = headers(&[(header::ACCEPT_ENCODING, "br")]);
        assert_eq!(body(site.respond("pkg/console.bb.wasm", &brotli)).await, "wasm-br");
    }

    #[test]
    fn a_manifest_naming_a_missing_file_is_refused() {
        let manifest = r#"{"js": "pkg/a.js", "wasm": "pkg/a.wasm", "css": "pkg/a.css"}"#;
        let files = [("pkg/a.js".to_string(), Bytes::from_static(b"x"))].into_iter();
        let error = Site::from_files(manifest, files, "dir".into()).err().unwrap();
        assert!(error.contains("pkg/a.wasm"), "{error}");
    }
}
