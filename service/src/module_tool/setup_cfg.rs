//! `setup.cfg` read and written as Python's `configparser.ConfigParser` does with its defaults
//! (setuptools reads a module's metadata that way, and Inmanta rewrites the file that way in
//! `module add`): `=` or `:` between key and value, keys in lower case, full-line `#` and `;`
//! comments dropped, indented lines continue the value above them, written back as
//! `key = value` with continuation lines indented by a tab and a blank line after each section.

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetupCfg {
    sections: Vec<(String, Vec<(String, String)>)>,
}

impl SetupCfg {
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut cfg = SetupCfg::default();
        // The option being read and the indentation of its first line.
        let mut current: Option<(usize, usize)> = None;
        let mut option_indent = 0;
        for (number, raw) in text.lines().enumerate() {
            let stripped = raw.trim();
            let indent = raw.len() - raw.trim_start().len();
            if stripped.starts_with('#') || stripped.starts_with(';') {
                continue;
            }
            if stripped.is_empty() {
                if let Some((s, o)) = current {
                    cfg.sections[s].1[o].1.push('\n');
                }
                continue;
            }
            if let (Some((s, o)), true) = (current, indent > option_indent) {
                let value = &mut cfg.sections[s].1[o].1;
                value.push('\n');
                value.push_str(stripped);
                continue;
            }
            if stripped.starts_with('[') && stripped.ends_with(']') {
                let name = stripped[1..stripped.len() - 1].to_string();
                if cfg.sections.iter().any(|(n, _)| *n == name) {
                    return Err(format!("line {}: section [{name}] appears twice", number + 1));
                }
                cfg.sections.push((name, Vec::new()));
                current = None;
                continue;
            }
            let Some(section) = cfg.sections.len().checked_sub(1) else {
                return Err(format!("line {}: {stripped:?} is outside of any [section]", number + 1));
            };
            let split = stripped
                .find(['=', ':'])
                .ok_or_else(|| format!("line {}: {stripped:?} is neither `[section]` nor `key = value`", number + 1))?;
            let key = stripped[..split].trim().to_lowercase();
            let value = stripped[split + 1..].trim().to_string();
            let options = &mut cfg.sections[section].1;
            let index = match options.iter().position(|(k, _)| *k == key) {
                Some(i) => {
                    options[i].1 = value;
                    i
                }
                None => {
                    options.push((key, value));
                    options.len() - 1
                }
            };
            current = Some((section, index));
            option_indent = indent;
        }
        // configparser joins the lines and strips the end (blank lines kept inside).
        for (_, options) in &mut cfg.sections {
            for (_, value) in options {
                let end = value.trim_end().len();
                value.truncate(end);
            }
        }
        Ok(cfg)
    }

    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.sections
            .iter()
            .find(|(n, _)| n == section)
            .and_then(|(_, options)| options.iter().find(|(k, _)| k == key))
            .map(|(_, v)| v.as_str())
    }

    /// A section's options in file order.
    pub fn section(&self, section: &str) -> Option<&[(String, String)]> {
        self.sections.iter().find(|(n, _)| n == section).map(|(_, options)| options.as_slice())
    }

    pub fn has_section(&self, section: &str) -> bool {
        self.sections.iter().any(|(n, _)| n == section)
    }

    /// The lines of a list value (`install_requires`, `include`), without empty ones.
    pub fn get_list(&self, section: &str, key: &str) -> Vec<String> {
        self.get(section, key)
            .map(|v| v.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect())
            .unwrap_or_default()
    }

    pub fn set(&mut self, section: &str, key: &str, value: &str) {
        let index = match self.sections.iter().position(|(n, _)| n == section) {
            Some(i) => i,
            None => {
                self.sections.push((section.to_string(), Vec::new()));
                self.sections.len() - 1
            }
        };
        let options = &mut self.sections[index].1;
        match options.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value.to_string(),
            None => options.push((key.to_string(), value.to_string())),
        }
    }

    /// The file as `ConfigParser.write` writes it.
    pub fn write(&self) -> String {
        let mut out = String::new();
        for (name, options) in &self.sections {
            out.push_str(&format!("[{name}]\n"));
            for (key, value) in options {
                out.push_str(&format!("{key} = {}\n", value.replace('\n', "\n\t")));
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_continuations_and_comments_as_configparser() {
        let cfg = SetupCfg::parse(
            "[metadata]\nName = inmanta-module-x\nversion: 1.0\n\n[options]\ninstall_requires =\n    a\n    # why b\n    b>1\n\n[egg_info]\ntag_build =\n",
        )
        .unwrap();
        assert_eq!(cfg.get("metadata", "name"), Some("inmanta-module-x"));
        assert_eq!(cfg.get("metadata", "version"), Some("1.0"));
        assert_eq!(cfg.get("options", "install_requires"), Some("\na\nb>1"));
        assert_eq!(cfg.get_list("options", "install_requires"), vec!["a", "b>1"]);
        assert_eq!(cfg.get("egg_info", "tag_build"), Some(""));
        assert!(cfg.write().contains("install_requires = \n\ta\n\tb>1\n\n[egg_info]\ntag_build = \n\n"));
    }
}
