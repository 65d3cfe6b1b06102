//! Layered configuration plumbing shared by the gateway and the zone node: the error type,
//! TOML files, `PREFIX_*` environment variables and `key=value` overrides, all through one
//! [`Settings::set`] per program.
//!
//! Layers, later wins: built-in defaults, a TOML file, environment variables, flags.
//! Unknown variables with the program's prefix are errors, so typos show; values of keys
//! listed in [`Settings::SECRET_KEYS`] never appear in messages.

use std::path::{Path, PathBuf};

/// A configuration problem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// Which file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML for this shape.
    #[error("config file {path} is invalid: {message}")]
    Parse {
        /// Which file.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// An environment variable does not parse.
    #[error("environment variable {var}={value:?}: {message}")]
    Env {
        /// Variable.
        var: String,
        /// Value (redacted for secrets).
        value: String,
        /// Why.
        message: String,
    },
    /// A setting is out of range or inconsistent.
    #[error("setting `{field}`: {message}")]
    Invalid {
        /// The setting.
        field: &'static str,
        /// Why.
        message: String,
    },
}

/// A number from text (surrounding spaces allowed).
pub fn num<T: std::str::FromStr>(v: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    v.trim().parse().map_err(|e: T::Err| e.to_string())
}

/// A boolean from `1/0`, `true/false`, `yes/no`, `on/off`.
pub fn boolean(v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err("expected true or false".into()),
    }
}

/// An optional path: empty text is `None`.
pub fn opt_path(v: &str) -> Option<PathBuf> {
    (!v.trim().is_empty()).then(|| PathBuf::from(v))
}

/// A program's settings, settable by name.
pub trait Settings: Sized + serde::de::DeserializeOwned {
    /// Environment prefix, e.g. `GATEWAY_`.
    const ENV_PREFIX: &'static str;
    /// Keys whose values are secrets (redacted in errors).
    const SECRET_KEYS: &'static [&'static str] = &["cluster_secret"];

    /// Set one setting by its snake_case name from text.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String>;

    /// Read a TOML file over the defaults.
    fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml(&text).map_err(|message| ConfigError::Parse {
            path: path.to_owned(),
            message,
        })
    }

    /// Parse TOML text over the defaults.
    fn from_toml(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// Apply `PREFIX_*` variables from `(name, value)` pairs (pass `std::env::vars()`).
    fn apply_env(
        &mut self,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<(), ConfigError> {
        for (var, value) in vars {
            let Some(key) = var.strip_prefix(Self::ENV_PREFIX) else {
                continue;
            };
            let mut key = key.to_ascii_lowercase();
            let mut value = value;
            // `PREFIX_<SETTING>_FILE=path`: the setting's value is the file's content (one
            // trailing newline dropped), as docker and Kubernetes secrets are mounted.
            if let Some(base) = key.strip_suffix("_file")
                && Self::SECRET_KEYS.contains(&base)
            {
                let text = std::fs::read_to_string(&value).map_err(|e| ConfigError::Env {
                    var: var.clone(),
                    value: value.clone(),
                    message: format!("cannot read the file: {e}"),
                })?;
                let text = text.strip_suffix('\n').unwrap_or(&text);
                value = text.strip_suffix('\r').unwrap_or(text).to_owned();
                key = base.to_owned();
            }
            if orchestrator_variable(&key) && self.set(&key, &value).is_err() {
                // Kubernetes' service links (`GATEWAY_PORT=tcp://…`, `GATEWAY_SERVICE_HOST`
                // for a Service named `gateway`) share our prefix: not ours, not an error.
                continue;
            }
            self.set(&key, &value).map_err(|message| ConfigError::Env {
                var: var.clone(),
                value: if Self::SECRET_KEYS.contains(&key.as_str()) {
                    "<redacted>".into()
                } else {
                    value.clone()
                },
                message,
            })?;
        }
        Ok(())
    }

    /// Apply `(setting, value)` overrides (the flags), in order.
    fn apply_overrides<'a>(
        &mut self,
        pairs: impl IntoIterator<Item = (&'static str, &'a str)>,
    ) -> Result<(), ConfigError> {
        for (field, value) in pairs {
            self.set(field, value)
                .map_err(|message| ConfigError::Invalid { field, message })?;
        }
        Ok(())
    }
}

/// Whether `key` (after the prefix, lower case) has the shape of a variable an
/// orchestrator injects: Kubernetes service links `PORT`, `PORT_*`, `SERVICE_*`. Such a
/// variable that is not one of our settings is ignored; any other unknown `PREFIX_*`
/// variable is an error (a misspelt setting must not be silently dropped).
pub fn orchestrator_variable(key: &str) -> bool {
    key == "port" || key.starts_with("port_") || key.starts_with("service_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_with_clear_errors() {
        assert_eq!(num::<u32>(" 7 "), Ok(7));
        assert!(num::<u32>("x").is_err());
        assert_eq!(boolean("ON"), Ok(true));
        assert_eq!(boolean("no"), Ok(false));
        assert!(boolean("maybe").is_err());
        assert_eq!(opt_path(" "), None);
        assert_eq!(opt_path("a"), Some(PathBuf::from("a")));
    }
}
