//! The two archive formats of Python distributions, written with flate2 only: a wheel is a zip
//! file (deflated entries, PKWARE APPNOTE 6.3), an sdist a gzipped POSIX ustar tar file.

use std::io::Write;

use flate2::Compression;
use flate2::write::{DeflateEncoder, GzEncoder};

/// A zip archive built in memory, entry by entry, in the order they are added.
pub struct ZipWriter {
    bytes: Vec<u8>,
    central: Vec<u8>,
    entries: u16,
    /// MS-DOS date and time of every entry.
    dos_time: (u16, u16),
}

impl ZipWriter {
    pub fn new(modified: chrono::NaiveDateTime) -> Self {
        use chrono::{Datelike, Timelike};
        // MS-DOS dates start in 1980.
        let year = modified.year().clamp(1980, 2107) as u16;
        let date = ((year - 1980) << 9) | ((modified.month() as u16) << 5) | modified.day() as u16;
        let time =
            ((modified.hour() as u16) << 11) | ((modified.minute() as u16) << 5) | (modified.second() as u16 / 2);
        ZipWriter { bytes: Vec::new(), central: Vec::new(), entries: 0, dos_time: (time, date) }
    }

    pub fn add(&mut self, name: &str, data: &[u8]) -> std::io::Result<()> {
        let mut crc = flate2::Crc::new();
        crc.update(data);
        let crc = crc.sum();
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(data)?;
        let compressed = encoder.finish()?;
        let offset = u32::try_from(self.bytes.len()).map_err(|_| too_large())?;
        let compressed_len = u32::try_from(compressed.len()).map_err(|_| too_large())?;
        let len = u32::try_from(data.len()).map_err(|_| too_large())?;
        let name_len = u16::try_from(name.len()).map_err(|_| too_large())?;
        let (time, date) = self.dos_time;
        // Bit 11: the name is UTF-8.
        let flags: u16 = 1 << 11;
        let local = &mut self.bytes;
        local.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        local.extend_from_slice(&20u16.to_le_bytes());
        local.extend_from_slice(&flags.to_le_bytes());
        local.extend_from_slice(&8u16.to_le_bytes());
        local.extend_from_slice(&time.to_le_bytes());
        local.extend_from_slice(&date.to_le_bytes());
        local.extend_from_slice(&crc.to_le_bytes());
        local.extend_from_slice(&compressed_len.to_le_bytes());
        local.extend_from_slice(&len.to_le_bytes());
        local.extend_from_slice(&name_len.to_le_bytes());
        local.extend_from_slice(&0u16.to_le_bytes());
        local.extend_from_slice(name.as_bytes());
        local.extend_from_slice(&compressed);

        let central = &mut self.central;
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        // Made by: Unix (3), spec 2.0; so the external attributes hold Unix permissions.
        central.extend_from_slice(&((3u16 << 8) | 20).to_le_bytes());
        central.extend_from_slice(&20u16.to_le_bytes());
        central.extend_from_slice(&flags.to_le_bytes());
        central.extend_from_slice(&8u16.to_le_bytes());
        central.extend_from_slice(&time.to_le_bytes());
        central.extend_from_slice(&date.to_le_bytes());
        central.extend_from_slice(&crc.to_le_bytes());
        central.extend_from_slice(&compressed_len.to_le_bytes());
        central.extend_from_slice(&len.to_le_bytes());
        central.extend_from_slice(&name_len.to_le_bytes());
        central.extend_from_slice(&[0; 8]); // extra, comment, disk, internal attributes
        central.extend_from_slice(&((0o100_644u32) << 16).to_le_bytes());
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
        self.entries = self.entries.checked_add(1).ok_or_else(too_large)?;
        Ok(())
    }

    pub fn finish(mut self) -> std::io::Result<Vec<u8>> {
        let central_offset = u32::try_from(self.bytes.len()).map_err(|_| too_large())?;
        let central_len = u32::try_from(self.central.len()).map_err(|_| too_large())?;
        self.bytes.append(&mut self.central);
        let end = &mut self.bytes;
        end.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        end.extend_from_slice(&[0; 4]);
        end.extend_from_slice(&self.entries.to_le_bytes());
        end.extend_from_slice(&self.entries.to_le_bytes());
        end.extend_from_slice(&central_len.to_le_bytes());
        end.extend_from_slice(&central_offset.to_le_bytes());
        end.extend_from_slice(&0u16.to_le_bytes());
        Ok(self.bytes)
    }
}

fn too_large() -> std::io::Error {
    std::io::Error::other("the archive is too large for a zip file without ZIP64")
}

/// A gzipped ustar archive of directories and regular files.
pub struct TarGzWriter {
    encoder: GzEncoder<Vec<u8>>,
    mtime: u64,
}

impl TarGzWriter {
    pub fn new(mtime: u64) -> Self {
        TarGzWriter { encoder: GzEncoder::new(Vec::new(), Compression::default()), mtime }
    }

    pub fn add_dir(&mut self, path: &str) -> std::io::Result<()> {
        let path = format!("{}/", path.trim_end_matches('/'));
        self.header(&path, 0, 0o755, b'5')
    }

    pub fn add_file(&mut self, path: &str, data: &[u8]) -> std::io::Result<()> {
        self.header(path, data.len() as u64, 0o644, b'0')?;
        self.encoder.write_all(data)?;
        let padding = (512 - data.len() % 512) % 512;
        self.encoder.write_all(&vec![0; padding])
    }

    fn header(&mut self, path: &str, size: u64, mode: u32, kind: u8) -> std::io::Result<()> {
        let mut header = [0u8; 512];
        let (prefix, name) = split_ustar_path(path)?;
        header[..name.len()].copy_from_slice(name.as_bytes());
        octal(&mut header[100..108], u64::from(mode));
        octal(&mut header[108..116], 0);
        octal(&mut header[116..124], 0);
        octal(&mut header[124..136], size);
        octal(&mut header[136..148], self.mtime);
        header[156] = kind;
        header[257..263].copy_from_slice(b"ustar\0");
        header[263..265].copy_from_slice(b"00");
        header[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
        // The checksum is computed with its own field as spaces.
        header[148..156].copy_from_slice(b"        ");
        let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
        let text = format!("{sum:06o}\0 ");
        header[148..156].copy_from_slice(text.as_bytes());
        self.encoder.write_all(&header)
    }

    pub fn finish(mut self) -> std::io::Result<Vec<u8>> {
        self.encoder.write_all(&[0; 1024])?;
        self.encoder.finish()
    }
}

/// ustar keeps names up to 100 bytes, longer ones split at a `/` into a prefix of up to 155.
fn split_ustar_path(path: &str) -> std::io::Result<(&str, &str)> {
    if path.len() <= 100 {
        return Ok(("", path));
    }
    let too_long = || std::io::Error::other(format!("{path}: too long a path for a tar file"));
    let trimmed = path.trim_end_matches('/');
    let mut split = None;
    for (i, c) in trimmed.char_indices() {
        if c == '/' && i <= 155 && path.len() - i - 1 <= 100 {
            split = Some(i);
            break;
        }
    }
    let i = split.ok_or_else(too_long)?;
    Ok((&path[..i], &path[i + 1..]))
}

fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    field[..digits].copy_from_slice(&text.as_bytes()[text.len() - digits..]);
    field[digits] = 0;
}

/// One regular file or directory of a tar file.
pub struct TarEntry {
    /// The path inside the archive, `/`-separated, relative.
    pub path: String,
    pub is_dir: bool,
    pub data: Vec<u8>,
}

/// The files and directories of a gzipped tar file (ustar, with PAX `path` records and GNU long
/// names, as setuptools and pip write them). Like Python's `tarfile` "data" filter, an absolute
/// path or one that leaves the archive (`..`) is refused, and links and devices are skipped.
pub fn read_tar_gz(bytes: &[u8]) -> std::io::Result<Vec<TarEntry>> {
    use std::io::Read;
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut tar)?;
    let bad = |what: &str| std::io::Error::other(format!("not a tar file: {what}"));
    let field = |header: &[u8], start: usize, len: usize| -> String {
        let raw = &header[start..start + len];
        let end = raw.iter().position(|b| *b == 0).unwrap_or(len);
        String::from_utf8_lossy(&raw[..end]).into_owned()
    };
    let mut entries = Vec::new();
    let mut offset = 0;
    let mut long_name: Option<String> = None;
    while offset + 512 <= tar.len() {
        let header = &tar[offset..offset + 512];
        if header.iter().all(|b| *b == 0) {
            break;
        }
        let size = u64::from_str_radix(field(header, 124, 12).trim(), 8).map_err(|_| bad("a header's size"))?;
        let size = usize::try_from(size).map_err(|_| bad("a header's size"))?;
        let start = offset + 512;
        let data = tar.get(start..start + size).ok_or_else(|| bad("truncated"))?;
        offset = start + size.div_ceil(512) * 512;
        let kind = header[156];
        match kind {
            b'x' => {
                // PAX records: "LEN key=value\n".
                let text = String::from_utf8_lossy(data);
                long_name = text
                    .split('\n')
                    .filter_map(|record| record.split_once(' ').map(|(_, kv)| kv))
                    .find_map(|kv| kv.strip_prefix("path="))
                    .map(str::to_string)
                    .or(long_name);
                continue;
            }
            b'L' => {
                long_name = Some(String::from_utf8_lossy(data).trim_end_matches('\0').to_string());
                continue;
            }
            b'g' => continue,
            _ => {}
        }
        let path = long_name.take().unwrap_or_else(|| {
            let (prefix, name) = (field(header, 345, 155), field(header, 0, 100));
            if prefix.is_empty() { name } else { format!("{prefix}/{name}") }
        });
        let path = path.trim_start_matches("./").trim_end_matches('/').to_string();
        if path.starts_with('/') || path.split('/').any(|part| part == "..") {
            return Err(std::io::Error::other(format!("{path}: a member outside of the archive")));
        }
        match kind {
            b'0' | 0 | b'7' => entries.push(TarEntry { path, is_dir: false, data: data.to_vec() }),
            b'5' => entries.push(TarEntry { path, is_dir: true, data: Vec::new() }),
            _ => {}
        }
    }
    Ok(entries)
}
